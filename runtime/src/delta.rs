//! Streaming a reply as OpenAI `chat.completion.chunk` deltas.
//!
//! [`DeltaBuilder`] is a [`Sink`]: feed a parser one chunk of model output
//! with the builder as sink, then [`take`](DeltaBuilder::take) the merged
//! [`Delta`] to send to the client. Folding every delta with
//! [`Message::apply_delta`](crate::message::Message::apply_delta) rebuilds
//! the message a [`MessageBuilder`](crate::message::MessageBuilder) assembles
//! from the same events.

use alloc::string::String;
use alloc::vec::Vec;

use crate::{Event, Sink};

/// The `delta` of one streaming choice: what the reply gained since the
/// previous delta.
///
/// Text fields are `None` rather than `Some("")` when nothing was added.
/// With the `serde` feature it serializes in OpenAI's shape,
/// `{"content": .., "reasoning_content": .., "tool_calls": [..]}`, leaving out
/// `None` fields and an empty `tool_calls`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Delta {
    /// Answer text added.
    pub content: Option<String>,
    /// Reasoning text added.
    pub reasoning_content: Option<String>,
    /// Tool-call progress, at most one entry per call, in call order.
    pub tool_calls: Vec<ToolCallDelta>,
}

impl Delta {
    /// True if the delta adds nothing.
    pub fn is_empty(&self) -> bool {
        self.content.is_none() && self.reasoning_content.is_none() && self.tool_calls.is_empty()
    }
}

/// Progress of one tool call within a [`Delta`].
///
/// The first entry for a call (its header) has `kind: Some("function")` and
/// carries the name and, if known by then, the id. Later entries carry
/// `arguments` pieces, and `id` if it arrived after the header.
///
/// With the `serde` feature it serializes as OpenAI does:
/// `{"index": 0, "id": "..", "type": "function", "function": {"name": "..",
/// "arguments": ".."}}`, leaving out `None` fields; `function` is present when
/// `name` or `arguments` is, and then always has `arguments` (`""` if `None`),
/// as OpenAI's header chunk does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolCallDelta {
    /// Position of the call in the message's `tool_calls`, from 0.
    pub index: usize,
    /// The call id, or a piece of it.
    pub id: Option<String>,
    /// `Some("function")` on the call's first delta, else `None`.
    pub kind: Option<&'static str>,
    /// The function name (on the call's first delta).
    pub name: Option<String>,
    /// A piece of the arguments' JSON text.
    pub arguments: Option<String>,
}

/// The call a [`DeltaBuilder`] is in the middle of.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct OpenCall {
    index: usize,
    /// Whether its header entry has been queued.
    announced: bool,
    /// Id text seen before the header, to go into it.
    held_id: String,
}

/// A [`Sink`] that turns events into OpenAI streaming [`Delta`]s.
///
/// Events queue up until [`take`](Self::take), which returns them merged
/// into one delta: consecutive content (and reasoning) pieces join into one
/// string, and each call gets at most one [`ToolCallDelta`] per delta.
///
/// Guarantees, for any event sequence (never panics):
/// - Calls get indexes 0, 1, 2, … in the order they start (the `index` of
///   `ToolCallStart` is not used; a well-behaved parser's agrees).
/// - A call's first [`ToolCallDelta`] is its header: `index`, `id` (if it
///   arrived before or with the name), `kind: Some("function")` and `name`.
///   It is held back until the name arrives, so the header carries it even if
///   the parser reports the call start and the name in different chunks. A
///   call whose argument text or end comes first, or that is still nameless
///   when the next call starts or at [`finish`](Self::finish), gets its
///   header then, without a name.
/// - Later entries for the call carry `index` and `arguments`, plus `id` if
///   the id came after the header.
/// - Empty text pieces add nothing: no `Some("")`.
/// - `ToolName`, `ToolId` or `ToolArgs` with no open call (a parser bug)
///   start a new implicit call, as [`MessageBuilder`](crate::message::MessageBuilder)
///   does; `ToolCallEnd` with no open call is ignored.
/// - Deltas carry no completeness: `ToolCallEnd { complete }` and
///   `ToolCallCut` only close the call (and `ToolCallBroken` adds nothing,
///   unless the builder holds calls).
///
/// # Holding calls until they are complete
/// By default a call streams as it is parsed, as OpenAI streams: its header
/// as soon as the name is known, then argument pieces. A call the output
/// then cuts off (`max_tokens`) has been sent in part. [`holding`](Self::holding)
/// makes a builder that holds everything from a call's start until the
/// call ends: a complete call (or one whose markup broke before the end of
/// the output, which the message keeps too) is released whole, and a call
/// the output cut off is never sent; [`finish_output`](Self::finish_output)
/// sends its text as content instead, as [`CutOffCalls::AsContent`]
/// does for the message. A call whose markup broke inside its arguments
/// ([`Event::ToolCallBroken`]) is not sent either: its text goes where the
/// call was, so from there on everything is held until `finish_output`,
/// which has the text (broken markup is rare; a server that wants the rest
/// sooner streams without holding).
///
/// [`CutOffCalls::AsContent`]: crate::message::CutOffCalls::AsContent
///
/// # Example
/// ```
/// use chat_parser_runtime::delta::{Delta, DeltaBuilder, ToolCallDelta};
/// use chat_parser_runtime::{Event, Sink};
/// let mut builder = DeltaBuilder::new();
///
/// // What a parser might report for one chunk of output.
/// builder.event(Event::Content("Let me "));
/// builder.event(Event::Content("check."));
/// builder.event(Event::ToolCallStart { index: 0 });
/// assert_eq!(builder.take(), Some(Delta { content: Some("Let me check.".into()), ..Delta::default() }));
///
/// // The next chunk: the name (and the header with it), then arguments.
/// builder.event(Event::ToolName("get_weather"));
/// builder.event(Event::ToolArgs("{\"city\":"));
/// let header = builder.take().unwrap();
/// assert_eq!(
///     header.tool_calls,
///     [ToolCallDelta {
///         index: 0,
///         id: None,
///         kind: Some("function"),
///         name: Some("get_weather".into()),
///         arguments: Some("{\"city\":".into()),
///     }]
/// );
///
/// builder.event(Event::ToolArgs("\"Paris\"}"));
/// builder.event(Event::ToolCallEnd { complete: true });
/// let rest = builder.take().unwrap();
/// assert_eq!(rest.tool_calls[0].arguments.as_deref(), Some("\"Paris\"}"));
/// assert_eq!(rest.tool_calls[0].name, None);
/// assert_eq!(builder.take(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeltaBuilder {
    pending: Delta,
    /// How many calls have started.
    calls: usize,
    open: Option<OpenCall>,
    /// Holding mode: what is ready to send while `pending` collects the
    /// open call.
    hold: Option<Delta>,
    /// The output cut the open call off; its text has this many bytes.
    cut: Option<usize>,
    /// The index of the call that just ended incomplete, until the next
    /// event.
    ended_incomplete: Option<usize>,
    /// Holding mode: the calls whose markup broke, as where their text
    /// goes in the held content and its span in the output.
    broken: Vec<(usize, usize, usize)>,
}

/// Appends `more` to `delta`, merging the entries of a call that both have.
fn merge(delta: &mut Delta, more: Delta) {
    if let Some(text) = more.content {
        append(&mut delta.content, &text);
    }
    if let Some(text) = more.reasoning_content {
        append(&mut delta.reasoning_content, &text);
    }
    for entry in more.tool_calls {
        match delta.tool_calls.last_mut() {
            Some(last) if last.index == entry.index => {
                if let Some(id) = entry.id {
                    append(&mut last.id, &id);
                }
                last.kind = last.kind.or(entry.kind);
                if let Some(name) = entry.name {
                    append(&mut last.name, &name);
                }
                if let Some(arguments) = entry.arguments {
                    append(&mut last.arguments, &arguments);
                }
            }
            _ => delta.tool_calls.push(entry),
        }
    }
}

impl DeltaBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty builder that holds each call until it is complete (see
    /// the type's docs).
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::delta::DeltaBuilder;
    /// use chat_parser_runtime::message::Message;
    /// use chat_parser_runtime::{Event, Sink};
    /// let mut builder = DeltaBuilder::holding();
    /// builder.event(Event::Content("Hi"));
    /// builder.event(Event::ToolCallStart { index: 0 });
    /// builder.event(Event::ToolName("f"));
    /// builder.event(Event::ToolArgs("{\"a\":"));
    /// // The call is held: only the content goes out.
    /// assert_eq!(builder.take().and_then(|d| d.content).as_deref(), Some("Hi"));
    /// // The output ends inside the call, 12 bytes after its start.
    /// builder.event(Event::ToolCallCut { tail: 12 });
    /// let last = builder.finish_output("Hi<call>f{\"a\":").unwrap();
    /// assert_eq!(last.content.as_deref(), Some("<call>f{\"a\":"));
    /// assert!(last.tool_calls.is_empty());
    /// ```
    pub fn holding() -> Self {
        DeltaBuilder { hold: Some(Delta::default()), ..Self::default() }
    }

    /// The merged delta of the events since the last `take`, or `None` if
    /// they added nothing. A call whose name has not arrived yet stays held
    /// back (see the type's guarantees), and so does every open call in
    /// [holding](Self::holding) mode.
    pub fn take(&mut self) -> Option<Delta> {
        if !self.broken.is_empty() {
            // A broken call's text is still to come: all is held.
            if self.open.is_none() {
                self.release();
            }
            return None;
        }
        let delta = match &mut self.hold {
            Some(ready) if self.open.is_some() => core::mem::take(ready),
            Some(ready) => {
                let mut delta = core::mem::take(ready);
                merge(&mut delta, core::mem::take(&mut self.pending));
                delta
            }
            None => core::mem::take(&mut self.pending),
        };
        (!delta.is_empty()).then_some(delta)
    }

    /// Releases what a holding builder collected for the call that just
    /// ended (or everything, when no call is open).
    fn release(&mut self) {
        if let Some(ready) = &mut self.hold {
            merge(ready, core::mem::take(&mut self.pending));
        }
    }

    /// [`finish`](Self::finish) for a builder that was given the whole
    /// output (decoded as the parser decodes it): in holding mode, a call
    /// the output cut off is left out and its text sent as content.
    pub fn finish_output(&mut self, output: &str) -> Option<Delta> {
        if let Some(ready) = &mut self.hold {
            let mut content = ready.content.take().unwrap_or_default();
            // The last first: an earlier call's place does not move.
            for (at, from, len) in self.broken.drain(..).rev() {
                if content.is_char_boundary(at) {
                    content.insert_str(at, crate::message::span(output, from, len));
                }
            }
            append(&mut ready.content, &content);
        }
        if let (Some(tail), Some(ready)) = (self.cut, &mut self.hold) {
            append(&mut ready.content, crate::message::last_bytes(output, tail));
        }
        self.finish()
    }

    /// Like [`take`](Self::take), for the end of the stream: a call still
    /// waiting for its name is released with a header that has none. Use it
    /// for the last delta so that no started call goes missing even if the
    /// parser never ended it.
    pub fn finish(&mut self) -> Option<Delta> {
        // (Broken calls' text needs the output: `finish_output`.)
        self.broken.clear();
        self.announce();
        self.open = None;
        self.release();
        self.take()
    }

    /// Starts a new call, after releasing the previous open one.
    fn start_call(&mut self) {
        self.announce();
        self.release();
        self.open = Some(OpenCall {
            index: self.calls,
            ..OpenCall::default()
        });
        self.calls = self.calls.saturating_add(1);
    }

    /// The open call, starting an implicit one if none is open.
    fn open_call(&mut self) -> &mut OpenCall {
        if self.open.is_none() {
            self.start_call();
        }
        self.open.get_or_insert_with(OpenCall::default)
    }

    /// Queues the open call's header if it is not queued yet.
    fn announce(&mut self) {
        let Some(open) = &mut self.open else { return };
        if open.announced {
            return;
        }
        open.announced = true;
        let id = core::mem::take(&mut open.held_id);
        let index = open.index;
        self.pending.tool_calls.push(ToolCallDelta {
            index,
            id: if id.is_empty() { None } else { Some(id) },
            kind: Some("function"),
            ..ToolCallDelta::default()
        });
    }

    /// The pending entry of the open call, announcing the call first.
    fn entry(&mut self) -> &mut ToolCallDelta {
        if self.open.is_none() {
            self.start_call();
        }
        self.announce();
        let index = self.open.as_ref().map_or(0, |open| open.index);
        let calls = &mut self.pending.tool_calls;
        if calls.last().is_none_or(|last| last.index != index) {
            calls.push(ToolCallDelta {
                index,
                ..ToolCallDelta::default()
            });
        }
        // In bounds: `calls` is non-empty after the push above.
        let last = calls.len() - 1;
        &mut calls[last]
    }
}

fn append(field: &mut Option<String>, text: &str) {
    if !text.is_empty() {
        field.get_or_insert_with(String::new).push_str(text);
    }
}

impl Sink for DeltaBuilder {
    fn event(&mut self, event: Event<'_>) {
        if self.cut.is_some() && self.hold.is_some() {
            // The cut-off call's text read again: it is sent whole instead.
            return;
        }
        let ended_incomplete = self.ended_incomplete.take();
        match event {
            Event::Content(text) => append(&mut self.pending.content, text),
            Event::Reasoning(text) => append(&mut self.pending.reasoning_content, text),
            Event::ToolCallStart { .. } => self.start_call(),
            Event::ToolName(name) => {
                let entry = self.entry();
                append(&mut entry.name, name);
            }
            Event::ToolId(id) => {
                let open = self.open_call();
                if open.announced {
                    append(&mut self.entry().id, id);
                } else {
                    open.held_id.push_str(id);
                }
            }
            Event::ToolArgs(arguments) => {
                if arguments.is_empty() {
                    // Still make sure a stray piece starts its implicit call.
                    self.open_call();
                } else {
                    append(&mut self.entry().arguments, arguments);
                }
            }
            Event::ToolCallEnd { complete } => {
                if let Some(open) = &self.open {
                    if !complete {
                        self.ended_incomplete = Some(open.index);
                    }
                    self.announce();
                    self.open = None;
                    self.release();
                }
            }
            Event::ToolCallBroken { from, len } => {
                if let (Some(index), Some(ready)) = (ended_incomplete, &mut self.hold) {
                    // (As the message keeps it: see `CutOffCalls::AsContent`.)
                    let mut arguments = String::new();
                    ready.tool_calls.iter().filter(|e| e.index == index).for_each(|e| arguments.push_str(e.arguments.as_deref().unwrap_or("")));
                    if crate::message::whole_object(&arguments) {
                        return;
                    }
                    // Never sent: the call is taken back, its index free.
                    ready.tool_calls.retain(|entry| entry.index != index);
                    if index + 1 == self.calls {
                        self.calls = index;
                    }
                    let at = ready.content.as_ref().map_or(0, String::len);
                    self.broken.push((at, from, len));
                }
            }
            Event::ToolCallCut { tail } => {
                if self.open.is_some() {
                    self.cut = Some(tail);
                    if self.hold.is_some() {
                        // Never sent: the call is dropped, its index free.
                        self.pending = Delta::default();
                        self.calls = self.calls.saturating_sub(1);
                    } else {
                        self.announce();
                    }
                    self.open = None;
                }
            }
        }
    }
}

#[cfg(feature = "serde")]
mod serialize {
    use super::{Delta, ToolCallDelta};
    use serde::ser::{Serialize, SerializeMap, Serializer};

    impl Serialize for Delta {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            if let Some(content) = &self.content {
                map.serialize_entry("content", content)?;
            }
            if let Some(reasoning) = &self.reasoning_content {
                map.serialize_entry("reasoning_content", reasoning)?;
            }
            if !self.tool_calls.is_empty() {
                map.serialize_entry("tool_calls", &self.tool_calls)?;
            }
            map.end()
        }
    }

    /// OpenAI's `function` object: `name` if present, `arguments` always.
    struct Function<'a> {
        name: Option<&'a str>,
        arguments: &'a str,
    }

    impl Serialize for Function<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            if let Some(name) = self.name {
                map.serialize_entry("name", name)?;
            }
            map.serialize_entry("arguments", self.arguments)?;
            map.end()
        }
    }

    impl Serialize for ToolCallDelta {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(None)?;
            map.serialize_entry("index", &self.index)?;
            if let Some(id) = &self.id {
                map.serialize_entry("id", id)?;
            }
            if let Some(kind) = self.kind {
                map.serialize_entry("type", kind)?;
            }
            if self.name.is_some() || self.arguments.is_some() {
                let function = Function {
                    name: self.name.as_deref(),
                    arguments: self.arguments.as_deref().unwrap_or(""),
                };
                map.serialize_entry("function", &function)?;
            }
            map.end()
        }
    }
}
