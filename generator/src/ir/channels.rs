//! Replies made of channel messages (OpenAI harmony, [`ChannelSpec`]) as IR.
//!
//! ```text
//! reply    = SPACE content { message content }*
//! message  = HEADER-START ROLE? SPACE                   (the next round reads the rest)
//!          | RECIPIENT NAMESPACE call                   (a call addressed in the role header)
//!          | RECIPIENT ROLE                             (addressed to the model itself: ignored)
//!          | RECIPIENT other-recipient header body      (a built-in tool: dropped as read)
//!          | CHANNEL word header-tail
//!          | CHANNEL unreadable-header END             (an empty message: dropped)
//!          | CHANNEL other-word RECIPIENT …            (as a recipient after a channel word)
//! call     = NAME header "<|message|>" JSON END?
//! ```
//!
//! A channel word decides what the body is: the reasoning channel's body is
//! reasoning (only when reasoning is extracted; otherwise the header is not
//! recognised and stays content, as the reference does), a content
//! channel's body is content. A header the model garbled and closed with
//! a message end, without a body (`<|channel|>??<|end|>`,
//! `<|channel|>commentary?<|end|>`: gpt-oss-20b at temperature 1 writes
//! one in 1–4% of its turns, then the real message, llama.cpp #27720), is
//! an empty message: dropped, as its header's other unread words are. Only
//! a garbled word: free text there, and a garbled header with a body (an
//! unknown channel word's message), come back as content. A recipient
//! after the channel word makes the message a call (or a dropped built-in
//! tool message). Everything is built
//! from guarded choices, so the generic interpreter, the code generator and
//! the grammar backend read it like any other format.

use super::{Alt, JsonKind, Mark, Node, TextKind};
use crate::spec::{ChannelSpec, FormatSpec};

/// `RECIPIENT` without its leading space (`to=`): the space is whitespace
/// between header pieces.
fn recipient(c: &ChannelSpec) -> String {
    c.recipient.trim().to_string()
}

/// The rest of a header up to and including the body marker: an optional
/// channel word, then an optional content type, with or without its marker
/// (the template writes `commentary json`, models `<|constrain|>json`).
fn header_rest(c: &ChannelSpec) -> Node {
    Node::seq(vec![header_words(c, &[]), Node::lit(c.message.clone())])
}

/// [`header_rest`] up to its body marker. With `ends` (a channel message's
/// header, which a message end may close before any body), the content
/// type is one word, ending also at whitespace, the next header or one of
/// `ends`: what a message end then closes is a garbled word
/// (`commentary?`), never text (`final The answer.<|end|>`, a body whose
/// `<|message|>` is missing, fails and stays content).
fn header_words(c: &ChannelSpec, ends: &[String]) -> Node {
    let word_stops = vec![" ".to_string(), c.constrain.clone(), c.message.clone(), c.channel.clone()];
    // The content type ends at the body marker; a channel marker here is
    // broken markup (so a grammar cannot slip text after a name).
    let mut type_stops = vec![c.message.clone(), c.channel.clone()];
    if !ends.is_empty() {
        type_stops.extend([" ", "\n", c.header_start.as_str()].map(String::from));
        type_stops.extend(ends.iter().cloned());
    }
    Node::seq(vec![
        Node::Space,
        Node::optional(Node::lit(c.channel.clone()), Node::Until { stops: word_stops, kind: TextKind::Discard, trim_newlines: false, closers: Vec::new() }),
        Node::Space,
        Node::optional(Node::lit(c.constrain.clone()), Node::Empty),
        Node::Until { stops: type_stops, kind: TextKind::Discard, trim_newlines: false, closers: Vec::new() },
        if ends.is_empty() { Node::Empty } else { Node::Space },
    ])
}

/// The plain end of a message (`<|end|>`, the first of
/// [`ChannelSpec::message_ends`]): the only end that closes a garbled
/// header. (A call's or the final answer's end after a header without a
/// body is a broken call or answer: its text stays content.)
fn plain_end(c: &ChannelSpec) -> Vec<String> {
    c.message_ends.first().filter(|e| !e.is_empty()).cloned().into_iter().collect()
}

/// A channel word the template never writes, read up to the header's next
/// piece (lenient: grammars never write it). Then either:
/// - the plain message end, before any body marker: an empty message whose
///   garbled header (`??`, `commentary?`) is dropped;
/// - a recipient (`<|channel|>comment to=functions.f …`: vLLM #42454 saw
///   calls on a `comment` channel and reads a function recipient on any
///   channel): the word is dropped with the header, and the message is
///   what its recipient makes it (`addressed`).
///
/// What reaches whitespace, a body marker, another header or another end
/// instead fails, and the round's markup comes back as content: free text
/// where the channel word belongs may be a stranded answer, and no text is
/// dropped; so does an unknown word's message without a recipient
/// (`<|channel|>summary<|message|>…`).
fn other_word(c: &ChannelSpec, tools: bool) -> Alt {
    let mut stops = vec![" ".to_string(), "\n".to_string(), c.message.clone(), c.channel.clone(), c.header_start.clone()];
    stops.extend(c.message_ends.iter().cloned());
    let ends = vec![
        Alt { guard: Node::one_of(plain_end(c)), body: Node::Mark(Mark::Commit) },
        Alt { guard: Node::seq(vec![Node::Space, Node::lit(recipient(c))]), body: Node::Choice(addressed(c, tools, Node::Mark(Mark::Commit))) },
    ];
    Alt::lenient(Node::Empty, Node::seq(vec![Node::Until { stops, kind: TextKind::Discard, trim_newlines: false, closers: Vec::new() }, Node::Choice(ends)]))
}

/// What ends a message body: its end marker or the next header.
fn body_stops(c: &ChannelSpec) -> Vec<String> {
    let mut stops = c.message_ends.clone();
    stops.push(c.header_start.clone());
    stops
}

/// A message body of this kind up to its end marker (or the next header).
fn body(c: &ChannelSpec, kind: TextKind) -> Node {
    Node::seq(vec![
        Node::Until { stops: body_stops(c), kind, trim_newlines: false, closers: Vec::new() },
        Node::optional(Node::one_of(c.message_ends.iter().cloned()), Node::Empty),
    ])
}

/// What ends a recipient's name: the header's next piece.
fn name_stops(c: &ChannelSpec) -> Vec<String> {
    vec![" ".to_string(), c.channel.clone(), c.constrain.clone(), c.message.clone()]
}

/// A call from after `to=functions.`: its name, the rest of its header, its
/// JSON arguments and its end marker. A body that is not JSON (neither an
/// object nor arguments written as a JSON string) is the value of the
/// tool's one string argument, where it has one (`Mark::SoleArg`): gpt-oss
/// sends its built-in python form, raw code, to a declared function named
/// `python` in most runs (odysseus #5877: 10-12 of 12 runs). Lenient:
/// grammars write JSON.
fn call_after_namespace(c: &ChannelSpec) -> Node {
    let json = Node::Json { kind: JsonKind::ToolArgs, schema: None, python: false, marker: String::new(), ends: Vec::new() };
    // (Only a message end tells that a raw value is whole: without one the
    // output cut the call off.)
    let raw = Node::seq(vec![
        Node::Mark(Mark::SoleArg),
        Node::Until { stops: body_stops(c), kind: TextKind::ArgString, trim_newlines: false, closers: Vec::new() },
        Node::one_of(c.message_ends.iter().cloned()),
        Node::Mark(Mark::ArgsClose),
    ]);
    let args = Node::Choice(vec![Alt { guard: Node::Peek(Box::new(Node::one_of(["{", "\"{"]))), body: json }, Alt::lenient(Node::Empty, raw)]);
    Node::seq(vec![
        Node::Mark(Mark::ToolOpen),
        Node::Until { stops: name_stops(c), kind: TextKind::ToolName, trim_newlines: false, closers: Vec::new() },
        header_rest(c),
        Node::Space,
        args,
        Node::Space,
        Node::optional(Node::one_of(c.message_ends.iter().cloned()), Node::Empty),
        Node::Mark(Mark::ToolClose),
    ])
}

/// A message to a recipient other than a function or the model: a built-in
/// tool call the request cannot express; its header and body are dropped.
fn other_recipient(c: &ChannelSpec) -> Node {
    Node::seq(vec![
        Node::Until { stops: name_stops(c), kind: TextKind::Discard, trim_newlines: false, closers: Vec::new() },
        Node::Mark(Mark::Commit),
        header_rest(c),
        // The body is dropped as it is read: a long program for the python
        // tool must not be held back whole (nor become content when it
        // outgrows a parser's window).
        body(c, TextKind::Dropped),
    ])
}

/// What may follow a recipient marker. `own` is what a message to the
/// model itself (`to=assistant`) is: a commit, so that the content after
/// it is reported as the content of a committed round (an uncommitted
/// round's content would be reported by the generated parsers and given
/// back again when the round broke later).
fn addressed(c: &ChannelSpec, tools: bool, own: Node) -> Vec<Alt> {
    let mut alts = Vec::new();
    if tools {
        alts.push(Alt { guard: Node::lit(c.namespace.clone()), body: call_after_namespace(c) });
    }
    alts.push(Alt { guard: Node::lit(c.role.clone()), body: own });
    // A declared tool's name without the namespace (`to=get_weather`:
    // gpt-oss in long contexts, vLLM #42454, which reads it the same way)
    // is a call to it; any other recipient is a built-in tool's.
    let other = if tools {
        Node::ByToolName { stops: name_stops(c), declared: Box::new(call_after_namespace(c)), other: Box::new(other_recipient(c)) }
    } else {
        other_recipient(c)
    };
    alts.push(Alt { guard: Node::Empty, body: other });
    alts
}

/// The reply grammar.
pub fn reply(spec: &FormatSpec, extract_reasoning: bool, tools: bool) -> Node {
    let c = &spec.channels;
    let to = recipient(c);
    let content = Node::Until { stops: vec![c.header_start.clone(), c.channel.clone(), to.clone()], kind: TextKind::Content, trim_newlines: false, closers: Vec::new() };
    // After the channel word: an optional recipient, then the body.
    let tail = |kind: TextKind| {
        // The body, or nothing where a message end closes the header (an
        // empty message, its garbled rest dropped: `commentary?<|end|>`).
        let opened = Alt { guard: Node::lit(c.message.clone()), body: Node::seq(vec![Node::Mark(Mark::Commit), body(c, kind)]) };
        let ended = Alt::lenient(Node::one_of(plain_end(c)), Node::Mark(Mark::Commit));
        let own = Node::seq(vec![header_words(c, &c.message_ends), Node::Choice(vec![opened, ended])]);
        // `to=assistant` after the channel word: the model addressed itself
        // and writes a new channel header next (the next round reads it).
        let mut alts = vec![Alt { guard: Node::seq(vec![Node::Space, Node::lit(to.clone())]), body: Node::Choice(addressed(c, tools, Node::Mark(Mark::Commit))) }];
        alts.push(Alt { guard: Node::Empty, body: own });
        Node::Choice(alts)
    };
    let mut words = Vec::new();
    if extract_reasoning && !c.reasoning_channel.is_empty() {
        words.push(Alt { guard: Node::lit(c.reasoning_channel.clone()), body: tail(TextKind::Reasoning) });
    }
    for w in &c.content_channels {
        words.push(Alt { guard: Node::lit(w.clone()), body: tail(TextKind::Content) });
    }
    words.push(other_word(c, tools));
    let then = |n: Node| Node::seq(vec![Node::Mark(Mark::Commit), n, content.clone()]);
    let alts = vec![
        // The role header; the next round reads the rest of it. The
        // whitespace after the role is the header's: one space before a
        // recipient (`<|start|>assistant to=functions.f`).
        Alt { guard: Node::lit(c.header_start.clone()), body: then(Node::seq(vec![Node::Space, Node::optional(Node::lit(c.role.clone()), Node::Empty), Node::Space])) },
        // A recipient in the role header.
        Alt { guard: Node::lit(to.clone()), body: Node::seq(vec![Node::Choice(addressed(c, tools, Node::Mark(Mark::Commit))), content.clone()]) },
        Alt { guard: Node::lit(c.channel.clone()), body: Node::seq(vec![Node::Choice(words), content.clone()]) },
    ];
    let n = alts.len();
    // The reply starts inside the role header the generation prompt opened
    // (`<|start|>assistant`): whitespace there is the header's too.
    Node::seq(vec![Node::Space, content.clone(), Node::Repeat { alts, limits: vec![None; n], recover: Some(Box::new(content)) }, Node::End])
}

/// What starts a call: the recipient marker and the function namespace.
pub fn trigger(spec: &FormatSpec) -> String {
    format!("{}{}", recipient(&spec.channels), spec.channels.namespace)
}

/// The call from its trigger on (for grammars).
pub fn calls(spec: &FormatSpec) -> Node {
    Node::seq(vec![Node::lit(trigger(spec)), call_after_namespace(&spec.channels)])
}
