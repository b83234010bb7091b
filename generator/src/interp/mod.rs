//! The reference parser: a streaming interpreter of the format IR.
//!
//! It takes model output in chunks of bytes of any size (a chunk may end
//! inside a marker or inside a UTF-8 sequence) and reports append-only
//! [`Event`]s to a [`Sink`]. It is the oracle generated parsers are tested
//! against, and the dynamic mode for servers that learn their template at run
//! time.
//!
//! How it streams: the IR's choices are guarded, so the interpreter only ever
//! looks ahead as far as a guard (a marker) before committing; text is held
//! back only while it could still be the start of a marker. Each chunk is
//! processed once (an explicit stack of frames resumes where the last chunk
//! ended).
//!
//! # Bad output
//! Model output is untrusted. The parser never panics and never loses text:
//! - markup that starts like a tool call but breaks before the call's name is
//!   complete is reported as content (one character at a time is given back
//!   and parsing goes on after it);
//! - a call whose name is known but whose rest is broken ends there, with the
//!   arguments seen so far and `complete: false`; the text after the last
//!   piece the call reported (its name, id or argument text) is content again,
//!   and parsing goes on after it (a later well-formed call is still a call);
//! - a call cut off by the end of the output ends the same way, reported as
//!   [`Event::ToolCallCut`] with the length of its text (what was open when
//!   the output ended and ends incomplete counts as cut off);
//! - invalid UTF-8 becomes U+FFFD.
//!
//! # Example
//! ```
//! use chat_parser_generator::{interp::StreamParser, ir::{Node, TextKind}};
//! use chat_parser_runtime::Event;
//! let g = Node::seq(vec![
//!     Node::optional(Node::lit("<think>"), Node::seq(vec![Node::until(&["</think>"], TextKind::Reasoning), Node::lit("</think>")])),
//!     Node::rest(TextKind::Content),
//! ]);
//! let mut reasoning = String::new();
//! let mut content = String::new();
//! let mut sink = |e: Event<'_>| match e {
//!     Event::Reasoning(t) => reasoning.push_str(t),
//!     Event::Content(t) => content.push_str(t),
//!     _ => {}
//! };
//! let mut p = StreamParser::new(&g);
//! for chunk in ["<thi", "nk>hmm</th", "ink>Hi"] {
//!     p.feed(chunk.as_bytes(), &mut sink);
//! }
//! p.finish(&mut sink);
//! assert_eq!((reasoning.as_str(), content.as_str()), ("hmm", "Hi"));
//! ```

use chat_parser_runtime::{Event, Sink};

use crate::ir::build::{ToolSignature, ValueKind};
use crate::ir::{Alt, JsonKind, Mark, Node, TextKind, AUTO_JSON_MAX, MAX_NAME_LEN};
use chat_parser_runtime::json::{JsonScanner, Scan};
use chat_parser_runtime::table::CLOSER_GAP;

/// An event waiting to be delivered (owned, because it may be taken back
/// while its call is not committed yet).
#[derive(Debug, Clone, PartialEq)]
enum Out {
    Content(String),
    Reasoning(String),
    ToolStart(usize),
    ToolName(String),
    ToolId(String),
    ToolArgs(String),
    ToolEnd(bool),
    /// The output cut the call off; its text is this long.
    ToolCut(usize),
    /// [`Event::ToolCallBroken`]: the broken call's text, as an offset in
    /// the output and a length.
    ToolBroken(usize, usize),
}

enum Step<'g> {
    /// The frame finished; pop it.
    Done,
    /// Run this node next (on top of the frame).
    Push(Frame<'g>),
    /// The frame needs more input.
    NeedMore,
    Fail,
}

enum UntilText {
    /// Nothing of the value seen yet (a leading newline may still be dropped).
    Fresh,
    Started,
}

enum Frame<'g> {
    Seq { items: &'g [Node], next: usize },
    Choice { alts: &'g [Alt], taken: bool },
    Repeat { alts: &'g [Alt], limits: &'g [Option<u32>], counts: Vec<u32>, recover: Option<&'g Node>, in_body: bool, region: Option<usize>, failed_at: Option<(usize, usize)> },
    Peek(&'g Node),
    Literal(&'g str),
    Space,
    OptionalNewline,
    Until { stops: &'g [String], closers: &'g [String], kind: TextKind, trim_newlines: bool, state: UntilText, acc: String, held_newline: bool, as_string: bool, reported: bool },
    Json { kind: JsonKind, scanner: JsonScanner, marker: &'g str, ends: &'g [String] },
    /// A JSON value stopped before one of `ends` may follow, with
    /// containers left open (see [`Node::Json`]).
    JsonEnd { kind: JsonKind, scanner: JsonScanner, ends: &'g [String] },
    JsonString { kind: TextKind, escaped: bool },
    Mark(&'g Mark),
    ArgKey(&'g str),
    ByArgType { string: &'g Node, json: &'g Node, auto: &'g Node },
    ByToolName { stops: &'g [String], declared: &'g Node, other: &'g Node },
    End,
}

/// A place to rewind to if a guarded alternative's body breaks before its
/// call is committed.
struct Region {
    /// Input position of the guard's start.
    pos: usize,
    /// Pending events at that point.
    out_len: usize,
    /// Stack depth of the owning `Repeat` frame.
    depth: usize,
    /// A call name was reported: the region can no longer be taken back.
    committed: bool,
    call_index_before: usize,
    /// Which alternative of the loop took the round.
    alt: usize,
}

/// Streaming interpreter of one grammar.
///
/// The grammar must outlive the parser (it is borrowed).
pub struct StreamParser<'g> {
    root: &'g Node,
    /// Text received so far (complete characters only).
    text: String,
    /// Bytes of an incomplete UTF-8 sequence at the end of the input.
    utf8_tail: Vec<u8>,
    pos: usize,
    stack: Vec<Frame<'g>>,
    regions: Vec<Region>,
    out: Vec<Out>,
    calls: usize,
    call_open: bool,
    args_written: u32,
    started: bool,
    finished: bool,
    /// The grammar could not continue: everything left is content.
    degraded: bool,
    /// Whitespace already scanned by guards (so a long run of whitespace at
    /// the end of the input is not rescanned on every chunk).
    ws: WsCache,
    /// Input position of the last reported piece: a broken call's text after
    /// it goes back to content.
    emit_pos: usize,
    /// Reused for text that must be copied out of `text` before reporting.
    scratch: String,
    /// The request's tools: call names are checked against them and
    /// argument values typed by them. Empty: any name, untyped arguments.
    tools: Vec<ToolSignature>,
    /// The declared tool of the current call.
    tool: Option<usize>,
    /// The declared type of the argument just named.
    arg_type: ValueKind,
    /// Markup longer than this (from an uncommitted round's start or the
    /// last reported piece) is broken; `None`: no limit.
    hold_limit: Option<usize>,
    /// Markers the hold limit counts as 2 bytes (see `codegen::pack_table`).
    pack: Vec<String>,
    /// Markup read as [`TextKind::Discard`] or [`TextKind::Dropped`], when asked for (tests that
    /// check no text is lost tell dropped markup from lost text).
    discarded: Option<String>,
    /// Text dropped from the front of `text` so far.
    dropped: usize,
    /// Where the open call's markup starts, counted from the output's start.
    call_from: usize,
    /// The output ended with a call open: if it ends incomplete, the end
    /// cut it off.
    cut_off: bool,
}

/// `text[from..to]` is known to be whitespace.
#[derive(Default)]
struct WsCache {
    from: usize,
    to: usize,
}

impl<'g> StreamParser<'g> {
    pub fn new(root: &'g Node) -> StreamParser<'g> {
        StreamParser {
            root,
            text: String::new(),
            utf8_tail: Vec::new(),
            pos: 0,
            stack: Vec::new(),
            regions: Vec::new(),
            out: Vec::new(),
            calls: 0,
            call_open: false,
            args_written: 0,
            started: false,
            finished: false,
            degraded: false,
            ws: WsCache::default(),
            emit_pos: 0,
            scratch: String::new(),
            tools: Vec::new(),
            tool: None,
            arg_type: ValueKind::Auto,
            hold_limit: None,
            pack: Vec::new(),
            discarded: None,
            dropped: 0,
            call_from: 0,
            cut_off: false,
        }
    }

    /// Breaks markup longer than `limit` bytes, as a generated parser with
    /// that `HOLD_LIMIT` does (see `codegen::hold_limit`; with the
    /// template's [`Self::with_pack`] table too), so the two behave the same
    /// on any output.
    pub fn with_hold_limit(mut self, limit: usize) -> StreamParser<'g> {
        self.hold_limit = Some(limit);
        self
    }

    /// Counts the markers of `pack` as 2 bytes in the hold limit, as a
    /// generated parser with that `PACK` table does.
    pub fn with_pack(mut self, pack: Vec<String>) -> StreamParser<'g> {
        self.pack = pack;
        self
    }

    /// Whether the held markup is longer than the hold limit.
    fn over_hold_limit(&self) -> bool {
        self.over_hold_limit_at(self.pos)
    }

    /// Whether the markup held up to `to` is longer than the hold limit.
    fn over_hold_limit_at(&self, to: usize) -> bool {
        let Some(limit) = self.hold_limit else { return false };
        let keep = self.keep();
        if to.saturating_sub(keep) <= limit {
            return false;
        }
        chat_parser_runtime::pack::packed_len(self.text.as_bytes().get(keep..to).unwrap_or(&[]), &self.pack) > limit
    }

    /// How far back the parser may still have to go.
    fn keep(&self) -> usize {
        let mut keep = self.pos.min(self.emit_pos);
        for r in self.regions.iter().filter(|r| !r.committed) {
            keep = keep.min(r.pos);
        }
        keep
    }

    /// Keeps the markup the format drops ([`TextKind::Discard`] and
    /// [`TextKind::Dropped`]: harmony's content types and messages to
    /// built-in tools), for
    /// [`StreamParser::discarded`]. It grows with the output: for tests.
    pub fn with_discard_log(mut self) -> StreamParser<'g> {
        self.discarded = Some(String::new());
        self
    }

    /// The markup dropped so far (with [`StreamParser::with_discard_log`];
    /// text read again after a backtrack appears again).
    pub fn discarded(&self) -> &str {
        self.discarded.as_deref().unwrap_or("")
    }

    /// Checks call names against these tools and types arguments by them
    /// (see [`crate::ir::build::tool_signatures`]).
    pub fn with_tools(mut self, tools: Vec<ToolSignature>) -> StreamParser<'g> {
        self.tools = tools;
        self
    }

    /// Parses a chunk of output and reports what is certain so far.
    pub fn feed(&mut self, bytes: &[u8], sink: &mut impl Sink) {
        if self.finished {
            return;
        }
        self.push_bytes(bytes);
        self.run(false);
        self.flush(sink);
        self.compact();
    }

    /// Drops the text no frame or region can come back to, so memory stays
    /// bounded by what is held back (a partial marker, an uncommitted call's
    /// markup) instead of growing with the output.
    fn compact(&mut self) {
        // Text after the last reported piece may still be given back as content.
        let keep = self.regions.iter().map(|r| r.pos).min().unwrap_or(self.pos).min(self.pos).min(self.emit_pos);
        if keep == 0 || keep < self.text.len() / 2 && keep < 4096 {
            return;
        }
        self.text.drain(..keep);
        self.dropped += keep;
        self.pos -= keep;
        self.emit_pos -= keep;
        self.ws = WsCache::default();
        for r in &mut self.regions {
            r.pos -= keep;
        }
        for frame in &mut self.stack {
            if let Frame::Repeat { failed_at, .. } = frame {
                *failed_at = failed_at.and_then(|(alt, at)| at.checked_sub(keep).map(|at| (alt, at)));
            }
        }
    }

    /// Ends the output: reports everything held back, and closes a call the
    /// output cut off (`complete: false`).
    pub fn finish(&mut self, sink: &mut impl Sink) {
        if self.finished {
            return;
        }
        if !self.utf8_tail.is_empty() {
            self.utf8_tail.clear();
            self.text.push('\u{FFFD}');
            self.run(false);
        }
        // Markup held over the limit breaks as it would have at the next
        // chunk: that is not the end cutting the call off.
        self.run(false);
        // All the text is read as far as it goes: what breaks the open
        // call from here is the end.
        self.cut_off = self.call_open;
        self.run(true);
        if self.end_broken_call() {
            // (A call the end did not cut off: its text runs to the end all
            // the same.)
            self.report_broken_call(self.text.len());
        }
        self.regions.clear();
        self.flush(sink);
        self.finished = true;
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        // Common case: nothing carried over and the chunk is valid UTF-8.
        if self.utf8_tail.is_empty() {
            if let Ok(s) = std::str::from_utf8(bytes) {
                self.text.push_str(s);
                return;
            }
        }
        let mut data = std::mem::take(&mut self.utf8_tail);
        data.extend_from_slice(bytes);
        let mut rest: &[u8] = &data;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    self.text.push_str(s);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // Safe: `valid_up_to` bytes are valid UTF-8.
                    self.text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            self.text.push('\u{FFFD}');
                            rest = &after[n..];
                        }
                        None => {
                            self.utf8_tail = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
    }

    fn flush(&mut self, sink: &mut impl Sink) {
        // Events after the oldest uncommitted region may still be taken back.
        let limit = self.regions.iter().find(|r| !r.committed).map(|r| r.out_len).unwrap_or(self.out.len());
        for ev in self.out.drain(..limit) {
            match &ev {
                Out::Content(t) if !t.is_empty() => sink.event(Event::Content(t)),
                Out::Reasoning(t) if !t.is_empty() => sink.event(Event::Reasoning(t)),
                Out::ToolStart(i) => sink.event(Event::ToolCallStart { index: *i }),
                Out::ToolName(t) => sink.event(Event::ToolName(t)),
                Out::ToolId(t) if !t.is_empty() => sink.event(Event::ToolId(t)),
                Out::ToolArgs(t) if !t.is_empty() => sink.event(Event::ToolArgs(t)),
                Out::ToolEnd(c) => sink.event(Event::ToolCallEnd { complete: *c }),
                Out::ToolCut(tail) => sink.event(Event::ToolCallCut { tail: *tail }),
                Out::ToolBroken(from, len) => sink.event(Event::ToolCallBroken { from: *from, len: *len }),
                _ => {}
            }
        }
        for r in &mut self.regions {
            r.out_len = r.out_len.saturating_sub(limit);
        }
    }

    fn emit_text(&mut self, kind: TextKind, text: &str) {
        if text.is_empty() {
            return;
        }
        // Discarded markup is not a reported piece: a broken call gives it
        // back as content, as the generated parsers do. Dropped text is
        // accounted for as a reported piece is, with nothing to report.
        if matches!(kind, TextKind::Discard | TextKind::Dropped) {
            if let Some(log) = &mut self.discarded {
                log.push_str(text);
                log.push('\0');
            }
            if kind == TextKind::Dropped {
                self.emit_pos = self.pos;
            }
            return;
        }
        self.emit_pos = self.pos;
        match kind {
            TextKind::Content => match self.out.last_mut() {
                Some(Out::Content(t)) => t.push_str(text),
                _ => self.out.push(Out::Content(text.to_string())),
            },
            TextKind::Reasoning => match self.out.last_mut() {
                Some(Out::Reasoning(t)) => t.push_str(text),
                _ => self.out.push(Out::Reasoning(text.to_string())),
            },
            TextKind::ToolId => self.out.push(Out::ToolId(text.to_string())),
            // Names and raw values are reported through their own paths
            // (and discarded markup returned above).
            TextKind::Discard | TextKind::Dropped | TextKind::ToolName | TextKind::ToolIdName | TextKind::ArgName | TextKind::ArgString | TextKind::ArgAuto => {}
        }
    }

    fn emit_args(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.emit_pos = self.pos;
        match self.out.last_mut() {
            Some(Out::ToolArgs(t)) => t.push_str(text),
            _ => self.out.push(Out::ToolArgs(text.to_string())),
        }
    }

    fn emit_name(&mut self, name: &str) {
        self.emit_pos = self.pos;
        self.out.push(Out::ToolName(name.to_string()));
        // A named call is real: commit the innermost region.
        if let Some(r) = self.regions.last_mut() {
            r.committed = true;
        }
    }

    fn open_key(&mut self, key: &str) {
        self.arg_type = self.tool.and_then(|t| self.tools.get(t)).map(|t| t.arg_type(key)).unwrap_or(ValueKind::Auto);
        let sep = if self.args_written > 0 { ", " } else { "" };
        self.args_written += 1;
        let text = format!("{sep}{}: ", json_quote(key));
        self.emit_args(&text);
    }

    fn mark(&mut self, m: &Mark) {
        match m {
            Mark::ToolOpen => {
                // The call's markup starts with its round, or after the last
                // reported piece when that is later (a later call of a section).
                let round = self.regions.last().map_or(0, |r| r.pos);
                self.call_from = self.dropped + round.max(self.emit_pos);
                self.out.push(Out::ToolStart(self.calls));
                self.calls += 1;
                self.call_open = true;
                self.args_written = 0;
            }
            Mark::ToolClose => {
                if self.call_open {
                    self.out.push(Out::ToolEnd(true));
                    self.call_open = false;
                }
                // The call's markup up to here is accounted for.
                self.emit_pos = self.pos;
            }
            Mark::Name(n) => self.emit_name(n),
            Mark::Commit => {
                if let Some(r) = self.regions.last_mut() {
                    r.committed = true;
                }
            }
            Mark::ArgsOpen => {
                self.args_written = 0;
                self.emit_args("{");
            }
            Mark::ArgsClose => self.emit_args("}"),
            // (Read in `step`: it may fail.)
            Mark::SoleArg => {}
            Mark::Prefilled(kind, text) => self.emit_text(*kind, text),
            Mark::Lenient => {}
        }
    }

    fn run(&mut self, last: bool) {
        if !self.started {
            self.started = true;
            self.stack.push(frame_for(self.root));
        }
        loop {
            if self.degraded {
                let rest = self.text[self.pos..].to_string();
                self.emit_text(TextKind::Content, &rest);
                self.pos = self.text.len();
                return;
            }
            if self.over_hold_limit() {
                self.fail();
                continue;
            }
            let Some(top) = self.stack.pop() else {
                // The grammar is done; anything after it is content.
                if self.pos < self.text.len() {
                    self.degraded = true;
                    continue;
                }
                return;
            };
            match self.step(top, last) {
                (Step::Done, _) => {}
                (Step::Push(child), Some(parent)) => {
                    self.stack.push(parent);
                    self.stack.push(child);
                }
                (Step::Push(child), None) => self.stack.push(child),
                (Step::NeedMore, Some(frame)) => {
                    self.stack.push(frame);
                    if last {
                        // No more input will come: treat as a failure.
                        self.fail();
                        continue;
                    }
                    return;
                }
                (Step::NeedMore, None) => return,
                (Step::Fail, _) => self.fail(),
            }
        }
    }

    /// The open call broke: it ends incomplete, cut off when the output
    /// ended inside it. True when it broke before the end: the caller
    /// reports its text's span ([`Self::report_broken_call`]) once it knows
    /// where reading goes on.
    fn end_broken_call(&mut self) -> bool {
        if !std::mem::take(&mut self.call_open) {
            return false;
        }
        if std::mem::take(&mut self.cut_off) {
            let tail = (self.dropped + self.text.len()).saturating_sub(self.call_from);
            self.out.push(Out::ToolCut(tail));
            false
        } else {
            self.out.push(Out::ToolEnd(false));
            true
        }
    }

    /// The text of the call that just broke: from its start to `end` (a
    /// position in `text`), where reading goes on.
    fn report_broken_call(&mut self, end: usize) {
        let to = self.dropped + end;
        self.out.push(Out::ToolBroken(self.call_from, to.saturating_sub(self.call_from)));
    }

    /// Unwinds to the innermost region and either gives the markup back as
    /// content (uncommitted) or ends the broken call (committed).
    fn fail(&mut self) {
        let Some(region) = self.regions.pop() else {
            // Nothing to fall back to: everything after the last reported
            // piece is content (whitespace or markup consumed since included).
            if self.emit_pos < self.pos {
                self.pos = self.emit_pos;
            }
            self.stack.clear();
            self.degraded = true;
            return;
        };
        self.stack.truncate(region.depth + 1);
        // A committed round that reported nothing and opened no call (a
        // harmony message to a built-in tool, dropped by design, whose
        // header broke) is given back as an uncommitted one is: its text
        // is content, not lost.
        let committed = region.committed && (self.emit_pos > region.pos || self.call_open);
        let mut resume = None;
        let mut failed_alt = None;
        if let Some(Frame::Repeat { in_body, region: r, counts, recover, .. }) = self.stack.last_mut() {
            *in_body = false;
            *r = None;
            if !committed {
                // The round did not happen.
                if let Some(c) = counts.get_mut(region.alt) {
                    *c = c.saturating_sub(1);
                }
                failed_alt = Some(region.alt);
            }
            resume = *recover;
        }
        if committed {
            let broken = self.end_broken_call();
            // Markup consumed after the last reported piece (whitespace, a
            // partial marker) is content again.
            if self.emit_pos > region.pos && self.emit_pos < self.pos {
                self.pos = self.emit_pos;
            }
            if broken {
                self.report_broken_call(self.pos);
            }
            if let Some(node) = resume {
                self.stack.push(frame_for(node));
            }
            // Make progress: never fail twice at the guard's start.
            if self.pos == region.pos {
                self.give_back_one_char();
            }
        } else {
            self.out.truncate(region.out_len);
            self.calls = region.call_index_before;
            self.call_open = false;
            self.pos = region.pos;
            self.give_back_one_char();
            // Never retry the same alternative where it just failed (a guard
            // that matched nothing at the end of the text would loop).
            if let (Some(alt), Some(Frame::Repeat { failed_at, .. })) = (failed_alt, self.stack.last_mut()) {
                *failed_at = Some((alt, self.pos));
            }
            // Go on with what follows a round (the content after it).
            if let Some(node) = resume {
                self.stack.push(frame_for(node));
            }
        }
    }

    fn give_back_one_char(&mut self) {
        if let Some(c) = self.text[self.pos..].chars().next() {
            let s = c.to_string();
            self.pos += c.len_utf8();
            self.emit_text(TextKind::Content, &s);
        }
    }

    /// Runs one frame; returns what to do and the frame to keep (if any).
    fn step(&mut self, frame: Frame<'g>, last: bool) -> (Step<'g>, Option<Frame<'g>>) {
        match frame {
            Frame::Seq { items, next } => {
                let items_ref = items;
                if next >= items_ref.len() {
                    return (Step::Done, None);
                }
                (Step::Push(frame_for(&items_ref[next])), Some(Frame::Seq { items, next: next + 1 }))
            }
            Frame::Choice { alts, taken } => {
                if taken {
                    return (Step::Done, None);
                }
                let alts_ref = alts;
                for alt in alts_ref {
                    match guard(&alt.guard, &self.text, self.pos, last, &mut self.ws) {
                        Guard::Match(end) => {
                            self.pos = end;
                            return (Step::Push(frame_for(&alt.body)), Some(Frame::Choice { alts, taken: true }));
                        }
                        Guard::NeedMore => return (Step::NeedMore, Some(Frame::Choice { alts, taken })),
                        Guard::NoMatch => {}
                    }
                }
                (Step::Fail, None)
            }
            Frame::Repeat { alts, limits, mut counts, recover, in_body, region, failed_at } => {
                if in_body {
                    // The body of the last round finished.
                    if let Some(depth) = region {
                        if let Some(pos) = self.regions.iter().rposition(|r| r.depth == depth) {
                            self.regions.remove(pos);
                        }
                    }
                }
                let alts_ref = alts;
                let limits_ref = limits;
                for (i, alt) in alts_ref.iter().enumerate() {
                    // Only limited alternatives count (the count they share).
                    let limit = limits_ref.get(i).copied().flatten();
                    if limit.is_some_and(|max| counts.iter().sum::<u32>() >= max) {
                        continue;
                    }
                    if failed_at == Some((i, self.pos)) {
                        continue;
                    }
                    let start = self.pos;
                    match guard(&alt.guard, &self.text, self.pos, last, &mut self.ws) {
                        Guard::Match(end) => {
                            counts[i] += u32::from(limit.is_some());
                            let depth = self.stack.len();
                            let region = if recover.is_some() {
                                self.regions.push(Region {
                                    pos: start,
                                    out_len: self.out.len(),
                                    depth,
                                    committed: false,
                                    call_index_before: self.calls,
                                    alt: i,
                                });
                                Some(depth)
                            } else {
                                None
                            };
                            self.pos = end;
                            let me = Frame::Repeat { alts, limits, counts, recover, in_body: true, region, failed_at };
                            return (Step::Push(frame_for(&alt.body)), Some(me));
                        }
                        Guard::NeedMore => {
                            return (Step::NeedMore, Some(Frame::Repeat { alts, limits, counts, recover, in_body: false, region: None, failed_at }))
                        }
                        Guard::NoMatch => {}
                    }
                }
                (Step::Done, None)
            }
            Frame::Peek(node) => match guard(node, &self.text, self.pos, last, &mut self.ws) {
                Guard::Match(_) => (Step::Done, None),
                Guard::NeedMore => (Step::NeedMore, Some(Frame::Peek(node))),
                Guard::NoMatch => (Step::Fail, None),
            },
            Frame::Literal(lit) => {
                let rest = &self.text[self.pos..];
                if rest.starts_with(lit) {
                    self.pos += lit.len();
                    (Step::Done, None)
                } else if lit.starts_with(rest) && !last {
                    (Step::NeedMore, Some(Frame::Literal(lit)))
                } else {
                    (Step::Fail, None)
                }
            }
            Frame::Space => {
                let rest = &self.text[self.pos..];
                let n = rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
                self.pos += n;
                if self.pos == self.text.len() && !last {
                    (Step::NeedMore, Some(Frame::Space))
                } else {
                    (Step::Done, None)
                }
            }
            Frame::OptionalNewline => {
                let rest = &self.text[self.pos..];
                if rest.is_empty() && !last {
                    return (Step::NeedMore, Some(Frame::OptionalNewline));
                }
                if rest.starts_with('\n') {
                    self.pos += 1;
                }
                (Step::Done, None)
            }
            Frame::Mark(Mark::SoleArg) => {
                let key = self.tool.and_then(|t| self.tools.get(t)).and_then(|t| t.sole_string_arg()).map(str::to_string);
                let Some(key) = key else { return (Step::Fail, None) };
                self.mark(&Mark::ArgsOpen);
                self.open_key(&key);
                (Step::Done, None)
            }
            Frame::Mark(m) => {
                self.mark(m);
                (Step::Done, None)
            }
            Frame::ArgKey(k) => {
                self.open_key(k);
                (Step::Done, None)
            }
            Frame::ByArgType { string, json, auto } => {
                let node = match self.arg_type {
                    ValueKind::String => string,
                    ValueKind::Json => json,
                    ValueKind::Auto | ValueKind::StringOrNull => auto,
                };
                (Step::Push(frame_for(node)), None)
            }
            Frame::ByToolName { stops, declared, other } => match self.tool_name_ahead(stops, last) {
                Some(true) => (Step::Push(frame_for(declared)), None),
                Some(false) => (Step::Push(frame_for(other)), None),
                None => (Step::NeedMore, Some(Frame::ByToolName { stops, declared, other })),
            },
            Frame::End => {
                if self.pos < self.text.len() {
                    (Step::Fail, None)
                } else if last {
                    (Step::Done, None)
                } else {
                    (Step::NeedMore, Some(Frame::End))
                }
            }
            Frame::Until { stops, closers, kind, trim_newlines, state, acc, held_newline, as_string, reported } => {
                self.step_until(stops, closers, kind, trim_newlines, state, acc, held_newline, as_string, reported, last)
            }
            Frame::Json { kind, mut scanner, marker, ends } => {
                let rest = &self.text[self.pos..];
                let mut piece = std::mem::take(&mut self.scratch);
                piece.clear();
                let decoding = scanner.is_decoding();
                let (consumed, result) = scanner.scan_marked(rest, last, marker, &mut |s: &str| piece.push_str(s));
                self.pos += consumed;
                self.emit_json(kind, &piece);
                // (Arguments written as a string consume bytes they report
                // nothing for: `JsonScanner::is_decoding`.)
                if decoding || scanner.is_decoding() {
                    self.emit_pos = self.pos;
                }
                self.scratch = piece;
                match result {
                    Scan::Done => (Step::Done, None),
                    Scan::NeedMore => (Step::NeedMore, Some(Frame::Json { kind, scanner, marker, ends })),
                    Scan::Invalid if !ends.is_empty() && scanner.can_close() => (Step::Push(Frame::JsonEnd { kind, scanner, ends }), None),
                    Scan::Invalid => (Step::Fail, None),
                }
            }
            Frame::JsonEnd { kind, mut scanner, ends } => {
                // The first end marker that follows (after whitespace), as
                // a generated parser's guards try them.
                let rest = &self.text[self.pos..];
                let after_ws = rest.trim_start_matches([' ', '\t', '\n', '\r']);
                let mut found = None;
                for m in ends {
                    if after_ws.starts_with(m.as_str()) {
                        found = Some(true);
                    } else if !last && m.starts_with(after_ws) {
                        found = Some(false);
                    }
                    if found.is_some() {
                        break;
                    }
                }
                match found {
                    Some(true) => {
                        let mut closers = String::new();
                        scanner.close_open(&mut |p: &str| closers.push_str(p));
                        self.emit_json(kind, &closers);
                        (Step::Done, None)
                    }
                    Some(false) => (Step::NeedMore, Some(Frame::JsonEnd { kind, scanner, ends })),
                    None => (Step::Fail, None),
                }
            }
            Frame::JsonString { kind, mut escaped } => {
                let rest = &self.text[self.pos..];
                let mut end = None;
                for (i, b) in rest.bytes().enumerate() {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        end = Some(i);
                        break;
                    }
                }
                let n = end.unwrap_or(rest.len());
                // A trailing backslash waits for its escaped character.
                let mut n = if end.is_none() && escaped { n - 1 } else { n };
                // So does an incomplete `\u` escape.
                if end.is_none() && !escaped {
                    let b = rest.as_bytes();
                    if let Some(k) = b[..n].iter().rposition(|&c| c == b'\\') {
                        let run = b[..=k].iter().rev().take_while(|&&c| c == b'\\').count();
                        if run % 2 == 1 && b.get(k + 1) == Some(&b'u') && n - k < 6 {
                            n = k;
                        }
                    }
                }
                let piece = json_unescape(&rest[..n]);
                escaped = false;
                self.pos += n;
                self.emit_text(kind, &piece);
                match end {
                    Some(_) => (Step::Done, None),
                    None if last => (Step::Fail, None),
                    None => (Step::NeedMore, Some(Frame::JsonString { kind, escaped })),
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn step_until(
        &mut self,
        stops: &'g [String],
        closers: &'g [String],
        kind: TextKind,
        trim_newlines: bool,
        mut state: UntilText,
        mut acc: String,
        mut held_newline: bool,
        mut as_string: bool,
        mut reported: bool,
        last: bool,
    ) -> (Step<'g>, Option<Frame<'g>>) {
        let stops_ref = stops;
        let mut rest = &self.text[self.pos..];
        let is_name = matches!(kind, TextKind::ToolName | TextKind::ToolIdName | TextKind::ArgName);
        if is_name {
            // A name is short: look no further than where it could end.
            let room = MAX_NAME_LEN - acc.len().min(MAX_NAME_LEN);
            let longest = stops_ref.iter().map(String::len).max().unwrap_or(0);
            let mut cut = (room + longest).min(rest.len());
            // Round up to the whole character: one that straddles the limit
            // does not fit (the checks below break the name). Rounding down
            // could leave nothing to read, and the parser would wait for
            // text that cannot help.
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            let window = &rest[..cut];
            match find_first_stop(window, stops_ref) {
                Some(i) if i > room => return (Step::Fail, None),
                None if window.len() - partial_stop_len(window, stops_ref) > room => return (Step::Fail, None),
                _ => {}
            }
            rest = window;
        }
        let found = find_ending_stop(rest, stops_ref, closers, last);
        let (take, done) = match found {
            Ok(Some(i)) => (i, true),
            // The closer and what follows it wait for the text that decides.
            Err(i) => (i, false),
            // A name the output cut off is not a name.
            Ok(None) if last && is_name => return (Step::Fail, None),
            Ok(None) if last => (rest.len(), true),
            Ok(None) => (rest.len() - partial_stop_len(rest, stops_ref), false),
        };
        // A name that ends commits (or reports) in this step: the hold limit
        // is checked where it ends too, so that a name read whole breaks
        // where one read in pieces would.
        if is_name && done && self.over_hold_limit_at(self.pos + take) {
            return (Step::Fail, None);
        }
        // A reused buffer: the piece must outlive the borrow of `self.text`.
        let mut owned = std::mem::take(&mut self.scratch);
        owned.clear();
        owned.push_str(&rest[..take]);
        let mut piece = owned.as_str();
        self.pos += take;
        if trim_newlines {
            if matches!(state, UntilText::Fresh) {
                if piece.is_empty() && !done {
                    self.scratch = owned;
                    return (Step::NeedMore, Some(Frame::Until { stops, closers, kind, trim_newlines, state, acc, held_newline, as_string, reported }));
                }
                if let Some(p) = piece.strip_prefix('\n') {
                    piece = p;
                }
                state = UntilText::Started;
                self.begin_value(kind);
            }
        } else if matches!(state, UntilText::Fresh) {
            state = UntilText::Started;
            self.begin_value(kind);
        }
        // A newline right before the stop is layout: hold it until we know.
        let mut text = String::new();
        if held_newline {
            text.push('\n');
            held_newline = false;
        }
        text.push_str(piece);
        if trim_newlines && text.ends_with('\n') {
            text.pop();
            held_newline = !done;
        }
        let before = self.emit_pos;
        self.value_text(kind, &text, &mut acc, &mut as_string);
        reported |= self.emit_pos != before;
        self.scratch = owned;
        if done {
            // Text read up to the stop is accounted for (a layout newline
            // dropped at the end included), however the output was split.
            if reported && matches!(kind, TextKind::Content | TextKind::Reasoning) {
                self.emit_pos = self.pos;
            }
            if !self.end_value(kind, &acc, as_string) {
                return (Step::Fail, None);
            }
            (Step::Done, None)
        } else {
            (Step::NeedMore, Some(Frame::Until { stops, closers, kind, trim_newlines, state, acc, held_newline, as_string, reported }))
        }
    }

    /// Whether the text ahead, up to the first of `stops`, names a declared
    /// tool (`Node::ByToolName`); `None` until a stop or more than a name's
    /// length is read.
    fn tool_name_ahead(&self, stops: &[String], last: bool) -> Option<bool> {
        let rest = &self.text[self.pos..];
        let longest = stops.iter().map(String::len).max().unwrap_or(0);
        let mut cut = (MAX_NAME_LEN + longest).min(rest.len());
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let window = &rest[..cut];
        match find_first_stop(window, stops) {
            Some(i) if i <= MAX_NAME_LEN => {
                let name = chat_parser_runtime::machine::name_text(&window[..i]);
                Some(chat_parser_runtime::machine::named_tool(name, false, self.tools.iter().map(|t| t.name.as_str())).is_some())
            }
            Some(_) => Some(false),
            None if last || window.len() - partial_stop_len(window, stops) > MAX_NAME_LEN => Some(false),
            None => None,
        }
    }

    /// JSON text of a value of this kind: arguments, or the reply itself.
    fn emit_json(&mut self, kind: JsonKind, text: &str) {
        match kind {
            JsonKind::ToolArgs | JsonKind::ArgValue => self.emit_args(text),
            JsonKind::Content => self.emit_text(TextKind::Content, text),
        }
    }

    fn begin_value(&mut self, kind: TextKind) {
        if kind == TextKind::ArgString {
            self.emit_args("\"");
        }
    }

    fn value_text(&mut self, kind: TextKind, text: &str, acc: &mut String, as_string: &mut bool) {
        match kind {
            TextKind::ArgString => {
                let escaped = json_escape(text);
                self.emit_args(&escaped);
            }
            TextKind::ArgAuto if *as_string => self.emit_args(&json_escape(text)),
            TextKind::ArgAuto => {
                acc.push_str(text);
                if acc.len() > AUTO_JSON_MAX {
                    // Too long to be read as JSON: a string from here on.
                    *as_string = true;
                    let start = format!("\"{}", json_escape(acc));
                    acc.clear();
                    self.emit_args(&start);
                }
            }
            TextKind::ToolName | TextKind::ToolIdName | TextKind::ArgName => acc.push_str(text),
            other => self.emit_text(other, text),
        }
    }

    /// Reports what a finished value stands for; false when it is not
    /// acceptable (a call name the request's tools do not declare).
    fn end_value(&mut self, kind: TextKind, acc: &str, as_string: bool) -> bool {
        match kind {
            TextKind::ArgString => self.emit_args("\""),
            TextKind::ToolName | TextKind::ToolIdName => {
                let in_id = kind == TextKind::ToolIdName;
                let read = if in_id { acc.trim() } else { chat_parser_runtime::machine::name_text(acc) };
                let name = if self.tools.is_empty() {
                    if in_id { chat_parser_runtime::machine::name_in_id(read) } else { read }.to_string()
                } else {
                    let Some(i) = chat_parser_runtime::machine::named_tool(read, in_id, self.tools.iter().map(|t| t.name.as_str())) else { return false };
                    self.tool = Some(i);
                    self.tools[i].name.clone()
                };
                self.emit_name(&name);
                if kind == TextKind::ToolIdName {
                    self.out.push(Out::ToolId(read.to_string()));
                }
            }
            TextKind::ArgName => self.open_key(chat_parser_runtime::machine::name_text(acc)),
            TextKind::ArgAuto if as_string => self.emit_args("\""),
            TextKind::ArgAuto => {
                // Short untyped values are JSON when they are JSON text.
                if self.arg_type.reads_as_json(acc) {
                    self.emit_args(acc.trim());
                } else {
                    self.emit_args(&json_quote(acc));
                }
            }
            _ => {}
        }
        true
    }
}

/// Frames that report marks or keys do it when entered.
fn frame_for(node: &Node) -> Frame<'_> {
    match node {
        Node::Empty => Frame::Seq { items: &[], next: 0 },
        Node::Literal(s) => Frame::Literal(s.as_str()),
        Node::Space => Frame::Space,
        Node::OptionalNewline => Frame::OptionalNewline,
        Node::Seq(items) => Frame::Seq { items: items.as_slice(), next: 0 },
        Node::Choice(alts) => Frame::Choice { alts: alts.as_slice(), taken: false },
        Node::Repeat { alts, limits, recover } => Frame::Repeat {
            alts: alts.as_slice(),
            limits: limits.as_slice(),
            counts: vec![0; alts.len()],
            recover: recover.as_deref(),
            in_body: false,
            region: None,
            failed_at: None,
        },
        Node::Peek(inner) => Frame::Peek(inner.as_ref()),
        Node::Until { stops, kind, trim_newlines, closers } => Frame::Until {
            stops: stops.as_slice(),
            closers: closers.as_slice(),
            kind: *kind,
            trim_newlines: *trim_newlines,
            state: UntilText::Fresh,
            acc: String::new(),
            held_newline: false,
            as_string: false,
            reported: false,
        },
        Node::Json { kind, python, marker, ends, .. } => {
            Frame::Json { kind: *kind, scanner: JsonScanner::new(*python, *kind == JsonKind::ToolArgs), marker, ends }
        }
        Node::JsonStringContent(kind) => Frame::JsonString { kind: *kind, escaped: false },
        Node::ArgKey(k) => Frame::ArgKey(k.as_str()),
        Node::ByArgType { string, json, auto } => Frame::ByArgType { string, json, auto },
        Node::ByToolName { stops, declared, other } => Frame::ByToolName { stops, declared, other },
        Node::Mark(m) => Frame::Mark(m),
        Node::End => Frame::End,
    }
}

enum Guard {
    Match(usize),
    NoMatch,
    NeedMore,
}

/// Matches a guard (literals, whitespace, lookaheads, choices of these)
/// without reporting anything.
fn guard(node: &Node, text: &str, pos: usize, last: bool, ws: &mut WsCache) -> Guard {
    match node {
        Node::Empty => Guard::Match(pos),
        Node::Literal(s) => {
            let rest = &text[pos..];
            if rest.starts_with(s.as_str()) {
                Guard::Match(pos + s.len())
            } else if s.starts_with(rest) && !last {
                Guard::NeedMore
            } else {
                Guard::NoMatch
            }
        }
        Node::Space => {
            let from = if ws.from == pos && ws.to > pos { ws.to } else { pos };
            let rest = &text[from..];
            let end = from + rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
            *ws = WsCache { from: pos, to: end };
            if end == text.len() && !last {
                Guard::NeedMore
            } else {
                Guard::Match(end)
            }
        }
        Node::OptionalNewline => {
            let rest = &text[pos..];
            if rest.is_empty() && !last {
                Guard::NeedMore
            } else if rest.starts_with('\n') {
                Guard::Match(pos + 1)
            } else {
                Guard::Match(pos)
            }
        }
        Node::End => {
            if pos < text.len() {
                Guard::NoMatch
            } else if last {
                Guard::Match(pos)
            } else {
                Guard::NeedMore
            }
        }
        Node::Seq(items) => {
            let mut at = pos;
            for item in items {
                match guard(item, text, at, last, ws) {
                    Guard::Match(next) => at = next,
                    other => return other,
                }
            }
            Guard::Match(at)
        }
        Node::Choice(alts) => {
            for alt in alts {
                let mut at = pos;
                let mut outcome = Guard::Match(pos);
                for part in [&alt.guard, &alt.body] {
                    match guard(part, text, at, last, ws) {
                        Guard::Match(next) => at = next,
                        other => {
                            outcome = other;
                            break;
                        }
                    }
                }
                match outcome {
                    Guard::Match(_) => return Guard::Match(at),
                    Guard::NeedMore => return Guard::NeedMore,
                    Guard::NoMatch => {}
                }
            }
            Guard::NoMatch
        }
        Node::Peek(inner) => match guard(inner, text, pos, last, ws) {
            Guard::Match(_) => Guard::Match(pos),
            other => other,
        },
        // Guards are literal markup only; anything else never matches.
        _ => Guard::NoMatch,
    }
}

/// Position of the earliest stop in `text`. One pass over the text (a stop
/// that never occurs must not cost a scan of the whole text per call).
fn find_first_stop(text: &str, stops: &[String]) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut first_bytes = [false; 256];
    let mut any = false;
    for stop in stops.iter().filter(|s| !s.is_empty()) {
        first_bytes[stop.as_bytes()[0] as usize] = true;
        any = true;
    }
    if !any {
        return None;
    }
    (0..bytes.len()).find(|&i| first_bytes[bytes[i] as usize] && stops.iter().any(|s| !s.is_empty() && bytes[i..].starts_with(s.as_bytes())))
}

/// Where text ends in `text`: at the earliest stop, past closers that text
/// follows (`Node::Until`'s `closers`: one ends the text where, after at
/// most `CLOSER_GAP` whitespace bytes, a byte a stop starts with
/// follows, or the output ends). `Ok(None)`: no stop ends it in `text`;
/// `Err(i)`: the closer at `i` waits for more text.
fn find_ending_stop(text: &str, stops: &[String], closers: &[String], last: bool) -> Result<Option<usize>, usize> {
    let mut from = 0;
    while let Some(i) = find_first_stop(&text[from..], stops) {
        let at = from + i;
        let rest = &text[at..];
        let Some(closer) = closers.iter().find(|c| rest.starts_with(c.as_str())) else { return Ok(Some(at)) };
        let after = &rest[closer.len()..];
        let gap = after.len() - after.trim_start_matches(|c: char| c.is_ascii_whitespace()).len();
        match after.as_bytes().get(gap) {
            _ if gap > CLOSER_GAP => return Ok(Some(at)),
            Some(b) if stops.iter().any(|s| s.as_bytes().first() == Some(b)) => return Ok(Some(at)),
            // Text follows: the closer is the text's own.
            Some(_) => from = at + rest.chars().next().map_or(1, char::len_utf8),
            None if last => return Ok(Some(at)),
            None => return Err(at),
        }
    }
    Ok(None)
}

/// Length of the longest suffix of `text` that is a proper prefix of a stop.
fn partial_stop_len(text: &str, stops: &[String]) -> usize {
    let mut best = 0;
    for stop in stops {
        let max = stop.len().saturating_sub(1).min(text.len());
        for n in (best + 1..=max).rev() {
            if text.is_char_boundary(text.len() - n) && stop.as_bytes().starts_with(&text.as_bytes()[text.len() - n..]) {
                best = n;
                break;
            }
        }
    }
    best
}

/// `s` as a JSON string literal.
pub fn json_quote(s: &str) -> String {
    format!("\"{}\"", json_escape(s))
}

/// The text of JSON string content (`a\"b` → `a"b`). Escapes are complete
/// here (the caller holds back a trailing backslash); `\u` escapes of
/// surrogate pairs and invalid escapes are kept as written.
fn json_unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.clone().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().filter(|_| hex.len() == 4).and_then(char::from_u32) {
                    Some(ch) => {
                        out.push(ch);
                        for _ in 0..4 {
                            chars.next();
                        }
                    }
                    None => out.push_str("\\u"),
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// `s` escaped for the inside of a JSON string (the runtime's escaping,
/// collected into a `String`).
pub fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    chat_parser_runtime::escape::json_escape(s, &mut |piece: &str| out.push_str(piece));
    out
}

#[cfg(test)]
mod tests;
