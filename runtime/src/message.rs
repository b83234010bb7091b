//! Assembling a whole reply: events in, one owned [`Message`] out.
//!
//! [`MessageBuilder`] is a [`Sink`] that appends every event to a
//! [`Message`]. It accepts any event sequence without panicking; how it
//! treats sequences that break the parser's ordering guarantees is described
//! on [`MessageBuilder`].

use alloc::string::String;
use alloc::vec::Vec;

use crate::delta::Delta;
use crate::{Event, Sink};

/// A parsed assistant reply: answer text, reasoning text and tool calls.
///
/// With the `serde` feature it (de)serializes as
/// `{"content", "reasoning_content", "tool_calls": [{"name", "id",
/// "arguments", "complete"}]}`; missing fields deserialize to their defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct Message {
    /// The visible answer: all [`Event::Content`] pieces, concatenated.
    pub content: String,
    /// The reasoning ("thinking"): all [`Event::Reasoning`] pieces, concatenated.
    pub reasoning_content: String,
    /// The tool calls, in the order they started.
    pub tool_calls: Vec<ToolCall>,
}

/// One tool call of a [`Message`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct ToolCall {
    /// The function name; empty if the parser gave none.
    pub name: String,
    /// The call id; empty when the format carries none.
    pub id: String,
    /// The arguments' JSON text, as the parser produced it. Empty if the call
    /// had no argument text at all (the parser decides whether to emit `{}`).
    pub arguments: String,
    /// True when the call ended with [`Event::ToolCallEnd`] `{ complete: true }`;
    /// false while it is open, or when the output stopped inside it.
    pub complete: bool,
}

impl Message {
    /// Appends a streaming [`Delta`] to this message, so that folding every
    /// delta a [`DeltaBuilder`](crate::delta::DeltaBuilder) produced gives the
    /// message a [`MessageBuilder`] would build from the same events (except
    /// [`ToolCall::complete`], which deltas do not carry and this leaves as is).
    ///
    /// Text fields are appended. A tool-call delta updates the call at its
    /// `index`; an `index` past the last known call starts a new call at the
    /// end, so indexes are expected to be dense, as OpenAI's and
    /// `DeltaBuilder`'s are. `kind` is ignored. Never panics.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::delta::{Delta, ToolCallDelta};
    /// use chat_parser_runtime::message::Message;
    /// let mut message = Message::default();
    /// message.apply_delta(&Delta { content: Some("Hi".into()), ..Delta::default() });
    /// message.apply_delta(&Delta {
    ///     tool_calls: vec![ToolCallDelta {
    ///         index: 0,
    ///         kind: Some("function"),
    ///         name: Some("f".into()),
    ///         ..ToolCallDelta::default()
    ///     }],
    ///     ..Delta::default()
    /// });
    /// message.apply_delta(&Delta {
    ///     tool_calls: vec![ToolCallDelta { index: 0, arguments: Some("{}".into()), ..ToolCallDelta::default() }],
    ///     ..Delta::default()
    /// });
    /// assert_eq!(message.content, "Hi");
    /// assert_eq!(message.tool_calls[0].name, "f");
    /// assert_eq!(message.tool_calls[0].arguments, "{}");
    /// ```
    pub fn apply_delta(&mut self, delta: &Delta) {
        if let Some(text) = &delta.content {
            self.content.push_str(text);
        }
        if let Some(text) = &delta.reasoning_content {
            self.reasoning_content.push_str(text);
        }
        for call_delta in &delta.tool_calls {
            let position = if call_delta.index < self.tool_calls.len() {
                call_delta.index
            } else {
                self.tool_calls.push(ToolCall::default());
                self.tool_calls.len() - 1
            };
            let Some(call) = self.tool_calls.get_mut(position) else {
                continue;
            };
            if let Some(id) = &call_delta.id {
                call.id.push_str(id);
            }
            if let Some(name) = &call_delta.name {
                call.name.push_str(name);
            }
            if let Some(arguments) = &call_delta.arguments {
                call.arguments.push_str(arguments);
            }
        }
    }
}

/// A [`Sink`] that assembles events into a [`Message`].
///
/// Guarantees, for any event sequence (never panics):
/// - `Content` and `Reasoning` pieces are appended to `content` and
///   `reasoning_content`.
/// - `ToolCallStart` appends a new [`ToolCall`] and makes it the open call;
///   its `index` field is not used for placement (calls are stored in the
///   order they start, which is the index order for a well-behaved parser).
///   A call still open when the next one starts stays `complete: false`.
/// - `ToolName`, `ToolId` and `ToolArgs` pieces are appended to the open
///   call's `name`, `id` and `arguments`. If no call is open (a parser bug),
///   they start a new implicit call rather than being dropped.
/// - `ToolCallEnd { complete }` records `complete` on the open call and
///   closes it; with no open call it is ignored.
/// - A call that gets no `ToolArgs` keeps `arguments` empty.
///
/// # Example
/// ```
/// use chat_parser_runtime::message::{MessageBuilder, ToolCall};
/// use chat_parser_runtime::{Event, Sink};
/// let mut builder = MessageBuilder::new();
/// for event in [
///     Event::Reasoning("Need the weather."),
///     Event::Content("Checking."),
///     Event::ToolCallStart { index: 0 },
///     Event::ToolName("get_weather"),
///     Event::ToolArgs("{\"city\":"),
///     Event::ToolArgs("\"Paris\"}"),
///     Event::ToolCallEnd { complete: true },
/// ] {
///     builder.event(event);
/// }
/// let message = builder.into_message();
/// assert_eq!(message.reasoning_content, "Need the weather.");
/// assert_eq!(message.content, "Checking.");
/// assert_eq!(
///     message.tool_calls,
///     [ToolCall {
///         name: "get_weather".into(),
///         id: String::new(),
///         arguments: "{\"city\":\"Paris\"}".into(),
///         complete: true,
///     }]
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MessageBuilder {
    message: Message,
    /// Position in `message.tool_calls` of the call that has not ended yet.
    open: Option<usize>,
}

impl MessageBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// The message assembled so far.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The assembled message. A call that never got its `ToolCallEnd` is
    /// left `complete: false`.
    pub fn into_message(self) -> Message {
        self.message
    }

    /// The open call, starting an implicit one if none is open.
    fn open_call(&mut self) -> &mut ToolCall {
        let position = match self.open {
            Some(position) if position < self.message.tool_calls.len() => position,
            _ => self.start_call(),
        };
        // `position` is in bounds: checked above, or just pushed.
        &mut self.message.tool_calls[position]
    }

    fn start_call(&mut self) -> usize {
        self.message.tool_calls.push(ToolCall::default());
        let position = self.message.tool_calls.len() - 1;
        self.open = Some(position);
        position
    }
}

impl Sink for MessageBuilder {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Content(text) => self.message.content.push_str(text),
            Event::Reasoning(text) => self.message.reasoning_content.push_str(text),
            Event::ToolCallStart { .. } => {
                self.start_call();
            }
            Event::ToolName(name) => self.open_call().name.push_str(name),
            Event::ToolId(id) => self.open_call().id.push_str(id),
            Event::ToolArgs(arguments) => self.open_call().arguments.push_str(arguments),
            Event::ToolCallEnd { complete } => {
                if let Some(call) = self
                    .open
                    .take()
                    .and_then(|p| self.message.tool_calls.get_mut(p))
                {
                    call.complete = complete;
                }
            }
        }
    }
}
