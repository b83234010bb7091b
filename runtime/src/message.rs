//! Assembling a whole reply: events in, one owned [`Message`] out.
//!
//! [`MessageBuilder`] is a [`Sink`] that appends every event to a
//! [`Message`]. It accepts any event sequence without panicking; how it
//! treats sequences that break the parser's ordering guarantees is described
//! on [`MessageBuilder`].

use alloc::string::String;
use alloc::vec::Vec;

use crate::delta::Delta;
use crate::json::{JsonScanner, Scan};
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
/// - `ToolCallCut` ends the open call as `ToolCallEnd { complete: false }`
///   does and remembers where it started; [`finish`](Self::finish) applies
///   the [`CutOffCalls`] policy to it. Events after it go on being appended
///   (they are the call's text read again, which the default policy
///   replaces).
/// - `ToolCallBroken` after `ToolCallEnd { complete: false }` remembers that
///   call's text span and where `content` stood; [`finish`](Self::finish)
///   applies the policy to it too (the default puts the text back there).
///   Without the `ToolCallEnd` just before it, it is ignored.
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
    /// The message as it was when the open (or last) call started.
    before_call: Sizes,
    /// The call the output cut off: the message before it, and the length
    /// of its text at the end of the output.
    cut: Option<(Sizes, usize)>,
    /// The call that just ended incomplete, until the next event.
    ended_incomplete: Option<usize>,
    /// The calls whose markup broke, in order.
    broken: Vec<Broken>,
}

/// A call whose markup broke ([`Event::ToolCallBroken`]): its position in
/// `tool_calls`, how long `content` was when it ended, and its text's span
/// in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Broken {
    call: usize,
    content: usize,
    from: usize,
    len: usize,
}

/// What a call the output cut off (the model hit `max_tokens` inside it),
/// or one whose markup broke before the end of the output
/// ([`Event::ToolCallBroken`]: `{"city": Paris}`), becomes in the final
/// message ([`MessageBuilder::finish`]).
///
/// A client that receives a call runs it: one the model never finished
/// would run with arguments it never meant, or fail on JSON that does not
/// parse. So by default such a call is not a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CutOffCalls {
    /// Leave the call out of `tool_calls` and put its text in `content`, so
    /// nothing is lost: a cut-off call's (its markup, from where the call
    /// starts to the end of the output) at the end, a broken call's (from
    /// its start to where its markup broke) where the call was, before the
    /// text read after it. Complete calls stay calls, and so does a broken
    /// one whose arguments are a whole JSON object (its markup broke after
    /// them: `{"name": "f", "arguments": {…}, "x": 1}`), `complete: false`.
    #[default]
    AsContent,
    /// Keep the call, with the arguments read so far, marked
    /// `complete: false`.
    KeepIncomplete,
}

/// How far each part of a message had grown at some point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Sizes {
    content: usize,
    reasoning: usize,
    calls: usize,
}

impl Sizes {
    fn of(message: &Message) -> Sizes {
        Sizes { content: message.content.len(), reasoning: message.reasoning_content.len(), calls: message.tool_calls.len() }
    }
}

/// Whether `arguments` are one whole JSON object: a call whose markup broke
/// after them (an unknown field, a wrong closer) still has arguments a
/// client can run, as the engines that read the object alone give it; one
/// that broke inside them has not. (Read by the parsers' own JSON scanner.)
pub(crate) fn whole_object(arguments: &str) -> bool {
    let text = arguments.trim();
    let (read, scan) = JsonScanner::new(false, true).scan(text, true, &mut |_: &str| {});
    scan == Scan::Done && read == text.len()
}

/// `len` bytes of `output` from byte `from`, widened to character
/// boundaries and cut to the output (empty when it starts past its end).
pub(crate) fn span(output: &str, from: usize, len: usize) -> &str {
    let mut to = from.saturating_add(len).min(output.len());
    let mut from = from.min(output.len());
    while !output.is_char_boundary(from) {
        from -= 1;
    }
    while !output.is_char_boundary(to) {
        to += 1;
    }
    &output[from..to]
}

/// The last `tail` bytes of `output` (the whole output when it is shorter,
/// and from a character boundary).
pub(crate) fn last_bytes(output: &str, tail: usize) -> &str {
    span(output, output.len().saturating_sub(tail), tail)
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

    /// The assembled message, events as they came: a call that never got
    /// its `ToolCallEnd`, or that the output cut off, is left
    /// `complete: false` ([`CutOffCalls::KeepIncomplete`]). Use
    /// [`finish`](Self::finish) for the final message of a reply.
    pub fn into_message(self) -> Message {
        self.message
    }

    /// Whether the output ended inside a call ([`Event::ToolCallCut`]): the
    /// reply's `finish_reason` is `length`, not `stop`.
    pub fn cut_off(&self) -> bool {
        self.cut.is_some()
    }

    /// The final message of a reply whose whole output (decoded as the
    /// parser decodes it: `String::from_utf8_lossy` of the bytes) was
    /// `output`, with a cut-off call treated as `policy` says.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::message::{CutOffCalls, MessageBuilder};
    /// use chat_parser_runtime::{Event, Sink};
    /// let output = "Hi<call>f{\"a\": 1</call><call>g{\"b\":";
    /// let events = [
    ///     Event::Content("Hi"),
    ///     Event::ToolCallStart { index: 0 },
    ///     Event::ToolName("f"),
    ///     Event::ToolArgs("{\"a\": 1}"),
    ///     Event::ToolCallEnd { complete: true },
    ///     Event::ToolCallStart { index: 1 },
    ///     Event::ToolName("g"),
    ///     Event::ToolArgs("{\"b\":"),
    ///     // The output ended 12 bytes after the second call's start.
    ///     Event::ToolCallCut { tail: 12 },
    /// ];
    /// let mut builder = MessageBuilder::new();
    /// events.into_iter().for_each(|e| builder.event(e));
    /// let message = builder.clone().finish(output, CutOffCalls::AsContent);
    /// assert_eq!(message.content, "Hi<call>g{\"b\":");
    /// assert_eq!(message.tool_calls.len(), 1);
    /// let kept = builder.finish(output, CutOffCalls::KeepIncomplete);
    /// assert_eq!((kept.tool_calls.len(), kept.tool_calls[1].complete), (2, false));
    ///
    /// // A call whose markup broke: its text goes back where it was.
    /// let output = "<call>f{\"a\": b}</call> ok";
    /// let mut builder = MessageBuilder::new();
    /// for event in [
    ///     Event::ToolCallStart { index: 0 },
    ///     Event::ToolName("f"),
    ///     Event::ToolArgs("{\"a\": "),
    ///     Event::ToolCallEnd { complete: false },
    ///     // From the call's start to where reading went on (`b}…`).
    ///     Event::ToolCallBroken { from: 0, len: 13 },
    ///     Event::Content("b}</call> ok"),
    /// ] {
    ///     builder.event(event);
    /// }
    /// let message = builder.finish(output, CutOffCalls::AsContent);
    /// assert_eq!((message.content.as_str(), message.tool_calls.len()), (output, 0));
    /// ```
    pub fn finish(self, output: &str, policy: CutOffCalls) -> Message {
        let mut message = self.message;
        if policy == CutOffCalls::KeepIncomplete {
            return message;
        }
        if let Some((before, tail)) = self.cut {
            message.content.truncate(before.content);
            message.reasoning_content.truncate(before.reasoning);
            message.tool_calls.truncate(before.calls);
            message.content.push_str(last_bytes(output, tail));
        }
        // The last first: an earlier call's place is not moved by a later
        // one's text (and all are before a cut-off call's place).
        for b in self.broken.iter().rev() {
            match message.tool_calls.get(b.call) {
                Some(call) if whole_object(&call.arguments) => continue,
                Some(_) => {
                    message.tool_calls.remove(b.call);
                }
                None => {}
            }
            if message.content.is_char_boundary(b.content) {
                message.content.insert_str(b.content, span(output, b.from, b.len));
            }
        }
        message
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
        self.before_call = Sizes::of(&self.message);
        self.message.tool_calls.push(ToolCall::default());
        let position = self.message.tool_calls.len() - 1;
        self.open = Some(position);
        position
    }
}

impl Sink for MessageBuilder {
    fn event(&mut self, event: Event<'_>) {
        let ended_incomplete = self.ended_incomplete.take();
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
                if let Some((p, call)) = self.open.take().and_then(|p| Some((p, self.message.tool_calls.get_mut(p)?))) {
                    call.complete = complete;
                    if !complete {
                        self.ended_incomplete = Some(p);
                    }
                }
            }
            Event::ToolCallBroken { from, len } => {
                if let Some(call) = ended_incomplete {
                    self.broken.push(Broken { call, content: self.message.content.len(), from, len });
                }
            }
            Event::ToolCallCut { tail } => {
                if self.open.take().is_some() && self.cut.is_none() {
                    self.cut = Some((self.before_call, tail));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_objects_are_told_from_cut_ones() {
        for whole in ["{}", " {\"a\": [1, {\"b\": \"}\"}]} ", "{\"s\": \"\\\"}\"}"] {
            assert!(whole_object(whole), "{whole}");
        }
        for cut in ["", "{", "{\"city\": ", "{\"a\": \"}", "{\"a\": 1}}", "[1]", "{\"a\": 1} x", "{\"s\": \"\\\"}"] {
            assert!(!whole_object(cut), "{cut}");
        }
    }

    #[test]
    fn a_broken_call_with_whole_arguments_stays_a_call() {
        let output = "<call>f{\"a\": 1}, x</call>";
        let mut builder = MessageBuilder::new();
        for event in [
            Event::ToolCallStart { index: 0 },
            Event::ToolName("f"),
            Event::ToolArgs("{\"a\": 1}"),
            Event::ToolCallEnd { complete: false },
            Event::ToolCallBroken { from: 0, len: 16 },
            Event::Content(", x</call>"),
        ] {
            builder.event(event);
        }
        let message = builder.finish(output, CutOffCalls::AsContent);
        assert_eq!((message.content.as_str(), message.tool_calls.len(), message.tool_calls[0].complete), (", x</call>", 1, false));
    }
}
