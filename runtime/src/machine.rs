//! The state every generated parser keeps, and the steps its states share.
//!
//! A generated parser is a `match` over its states in a loop; each state is
//! one position in the template's output grammar (a marker to match, text to
//! read up to a stop, a JSON value, a guarded choice). What the states have
//! in common lives here, in fixed-size state: the input window that holds
//! back text a later chunk decides about, the loops' counters, the regions a
//! broken call rewinds to, the events a call holds back until it is certain,
//! and the incremental JSON scanner.
//!
//! The semantics are those of the generator's reference parser
//! (`chat_parser_generator::interp`), which the generated parsers are
//! property-tested against:
//! - markup that breaks before the call's name is complete is content: one
//!   character is given back and parsing goes on after it;
//! - a named call that breaks later ends with `complete: false`, and the text
//!   after its last reported piece is content again;
//! - invalid UTF-8 becomes U+FFFD.
//!
//! Bounds (so that no input makes the state grow): the window holds
//! [`WINDOW`] bytes. When more than that would have to be held back (markup
//! that never resolves, whitespace without end between two markers), the
//! held markup counts as broken, by the same rules.

use crate::json::{JsonScanner, Scan, SHORT_ESCAPE};
use crate::word::{holds_any, holds_json_escape, Word};
use crate::table::StopSet;
use crate::{ArgType, Event, Sink, Tool};

/// Bytes of input a parser can hold back across chunks.
pub const WINDOW: usize = 96;
/// The longest tool or argument name (the generator's `ir::MAX_NAME_LEN`).
pub const MAX_NAME_LEN: usize = 64;
/// The longest untyped value read as JSON (the generator's `ir::AUTO_JSON_MAX`).
pub const AUTO_JSON_MAX: usize = 64;
/// A state number that means "no state".
pub const NONE: u16 = u16::MAX;

/// A guard's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum G {
    /// Matched, ending here.
    Match(usize),
    /// Does not match.
    No,
    /// The text ends inside what could still match.
    More,
}

/// What a state of a generated machine asks its driver to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Run the (new) current state.
    Go,
    /// The text ends before this state can decide: wait for more, or, at
    /// the end of the output, fail.
    More,
    /// The markup is broken here: fall back to the last region.
    Fail,
    /// The grammar is done (what follows is content).
    Stop,
}

/// What the text between two markers is reported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Reasoning,
    Content,
    Discard,
    /// Read and dropped for good (a harmony message to a built-in tool):
    /// accounted for as it is read, as reported text is, so the window never
    /// holds it (`ir::TextKind::Dropped` in the generator).
    Dropped,
    ToolId,
    ToolName,
    /// A call id holding the tool's name (see [`name_in_id`]).
    ToolIdName,
    ArgName,
    ArgString,
    ArgAuto,
}

/// The tool name inside a call id of the form `namespace.NAME:index` (Kimi
/// K2's `functions.get_weather:0`): what follows the first `.` up to the
/// last `:` (each only when present), so names with dots or dashes
/// (`functions.mcp.read-file:3`) keep them.
///
/// # Example
/// ```
/// use chat_parser_runtime::machine::name_in_id;
/// assert_eq!(name_in_id("functions.get_weather:0"), "get_weather");
/// assert_eq!(name_in_id("functions.mcp.read-file:12"), "mcp.read-file");
/// assert_eq!(name_in_id("get_weather"), "get_weather");
/// ```
pub fn name_in_id(id: &str) -> &str {
    let after_namespace = id.split_once('.').map_or(id, |(_, rest)| rest);
    match after_namespace.rsplit_once(':') {
        Some((name, index)) if !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => after_namespace,
    }
}

/// The declared tool a call id names: its index in `names` (the request's
/// tools, in order). The id's name as [`name_in_id`] reads it, where a tool
/// has that name; else, in ids of the [`ID_NAMESPACE`] whose separators
/// are written as `_` or left out, as Kimi K2 writes them, the longest
/// tool name between the namespace and the index:
/// `functions_get_weather_1` (the form clients hand back sanitised, which
/// the model then copies: exo #2281) and `functionsexec5` (sglang #21377).
/// By this loose reading the namespace and the index are required, so
/// `get_weather_1` names no tool (by the exact one, `get_weather` names
/// `get_weather`).
///
/// # Example
/// ```
/// use chat_parser_runtime::machine::tool_in_id;
/// let names = ["weather", "get_weather", "run_in_terminal"];
/// assert_eq!(tool_in_id("functions.get_weather:0", names.into_iter()), Some(1));
/// // The longest name the id holds: `get_weather`, not `weather`.
/// assert_eq!(tool_in_id("functions_get_weather_1", names.into_iter()), Some(1));
/// assert_eq!(tool_in_id("functionsrun_in_terminal5", names.into_iter()), Some(2));
/// assert_eq!(tool_in_id("functions.get_time:0", names.into_iter()), None);
/// assert_eq!(tool_in_id("run_in_terminal_1", names.into_iter()), None);
/// assert_eq!(tool_in_id("get_weather_1", names.into_iter()), None);
/// ```
pub fn tool_in_id<'n>(id: &str, names: impl Iterator<Item = &'n str>) -> Option<usize> {
    let exact = name_in_id(id);
    let mut loose: Option<(usize, usize)> = None;
    for (i, name) in names.enumerate() {
        if name == exact {
            return Some(i);
        }
        if loose.is_none_or(|(_, len)| name.len() > len) && loose_id_names(id, name) {
            loose = Some((i, name.len()));
        }
    }
    loose.map(|(i, _)| i)
}

/// The declared tool a call's name text (`read`, trimmed) names: its index
/// in `names` (the request's tools, in order). The text is the name, or,
/// in a call id that holds the name (`in_id`), the name [`tool_in_id`]
/// finds in it. The runtime and the generator's interpreter both check a
/// call's name with it.
///
/// # Example
/// ```
/// use chat_parser_runtime::machine::named_tool;
/// let names = ["get_time", "get_weather"];
/// assert_eq!(named_tool("get_weather", false, names.into_iter()), Some(1));
/// assert_eq!(named_tool("functions.get_weather:0", true, names.into_iter()), Some(1));
/// assert_eq!(named_tool("functions.get_weather:0", false, names.into_iter()), None);
/// ```
pub fn named_tool<'n>(read: &str, in_id: bool, mut names: impl Iterator<Item = &'n str>) -> Option<usize> {
    if in_id {
        tool_in_id(read, names)
    } else {
        names.position(|name| name == read)
    }
}

/// A tool's or an argument's name as read (`read`, the text up to its
/// stop): without whitespace or quotes around it. Models quote a name
/// written as a tag's attribute (`<parameter="command">`,
/// `<function="bash">`: Qwen, openvinotoolkit/model_server #4487); a quote
/// is never part of a name (OpenAI's tool names are letters, digits, `_`
/// and `-`). The runtime and the generator's interpreter read names with it.
///
/// ```
/// use chat_parser_runtime::machine::name_text;
/// assert_eq!(name_text(" \"command\"\n"), "command");
/// assert_eq!(name_text("get_weather"), "get_weather");
/// ```
pub fn name_text(read: &str) -> &str {
    read.trim().trim_matches('"').trim()
}

/// The namespace of the call ids that hold a tool's name: OpenAI's tool
/// namespace, which Kimi K2 writes (`functions.get_weather:0`).
pub const ID_NAMESPACE: &str = "functions";

/// Whether `id` is `functions[._]?NAME[:_]?INDEX` with `name` as its name
/// (see [`tool_in_id`]).
fn loose_id_names(id: &str, name: &str) -> bool {
    let unindexed = id.trim_end_matches(|c: char| c.is_ascii_digit());
    if name.is_empty() || unindexed.len() == id.len() {
        return false;
    }
    let before_index = unindexed.strip_suffix([':', '_']).unwrap_or(unindexed);
    let Some(namespace) = before_index.strip_suffix(name) else { return false };
    namespace.strip_suffix(['.', '_']).unwrap_or(namespace) == ID_NAMESPACE
}

/// The start of a committed round whose text was dropped from the window.
const DROPPED: u32 = u32::MAX;

/// A loop round that may still turn back into content. Eight bytes: a
/// parser holds one per nesting level.
#[derive(Debug, Clone, Copy, Default)]
pub struct Region {
    pos: u32,
    /// The call count when the round started, modulo 2^16: a round that
    /// rewinds holds its markup in the window (at most 64 KiB), so it
    /// opened fewer than 2^16 calls and the difference is exact.
    calls_before: u16,
    repeat: u8,
    /// The round's alternative (the low 6 bits), [`LIMITED`] and
    /// [`COMMITTED`].
    alt: u8,
}

/// [`Region::alt`]'s bit for a round that is certain (it will not rewind
/// to its start).
const COMMITTED: u8 = 0x80;
/// [`Region::alt`]'s bit for a round of a limited alternative: it counts
/// in its loop's [`Rounds::limited`], and gives its count back when it
/// turns back into content.
const LIMITED: u8 = 0x40;
/// The most alternatives a loop may have (`Region::alt`'s low bits; the
/// generator checks every grammar against it).
pub const MAX_ALTERNATIVES: usize = LIMITED as usize;

impl Region {
    #[inline]
    fn committed(&self) -> bool {
        self.alt & COMMITTED != 0
    }

    #[inline]
    fn limited(&self) -> bool {
        self.alt & LIMITED != 0
    }

    #[inline]
    fn alt(&self) -> u8 {
        self.alt & (LIMITED - 1)
    }
}

/// A loop's counters (one per loop of the grammar).
#[derive(Debug, Clone, Copy)]
pub struct Rounds {
    /// The rounds its limited alternatives took: they share one count
    /// (`ir::Node::Repeat`), so one call is one call whatever form it came
    /// in.
    limited: u8,
    /// The alternative that failed at `failed_pos` (not retried there).
    failed_alt: u8,
    failed_pos: u32,
}

impl Default for Rounds {
    fn default() -> Self {
        Rounds { limited: 0, failed_alt: u8::MAX, failed_pos: 0 }
    }
}

/// Where a loop resumes: its head, and what runs after a broken round.
#[derive(Debug, Clone, Copy)]
pub struct Resume {
    pub head: u16,
    pub recover: u16,
}

/// Events of an uncommitted call, held back until its name makes it
/// certain: the call's start and an id written before the name.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    id_from: u32,
    id_to: u32,
}

/// A [`Core`]'s yes/no facts, a bit each: a generated parser's state is
/// counted in bytes, and ten `bool`s would take ten.
#[derive(Debug, Clone, Copy)]
struct Flags(u16);

/// The output broke beyond repair: the rest is content.
const DEGRADED: u16 = 1;
/// A call was opened and not closed.
const CALL_OPEN: u16 = 1 << 1;
/// The open call reported an argument (the next needs a separator).
const ARGS_WRITTEN: u16 = 1 << 2;
/// Text up to a stop: nothing of it read yet.
const FRESH: u16 = 1 << 3;
/// Text up to a stop: a newline read last and not reported (it may be the
/// layout before the stop).
const HELD_NEWLINE: u16 = 1 << 4;
/// Text up to a stop: an untyped value decided to be a string.
const AS_STRING: u16 = 1 << 5;
/// The text being read has reported nothing yet. (Set until it has, not
/// the other way round: the fast path tests it with its rare cases, so a
/// chunk of text reported sets no flag.)
const UNREPORTED: u16 = 1 << 6;
/// A region or failed round sits at position 0, where the next consumed
/// text would drop it (see [`Core::fast_consumed`]).
const ANCHORED: u16 = 1 << 7;
/// An uncommitted call's start is held back ([`Pending`]).
const PENDING_START: u16 = 1 << 8;
/// The held-back id is JSON string content (escapes to decode).
const ID_ESCAPED: u16 = 1 << 9;
/// The output ended while the open call was open: if it ends incomplete,
/// the end cut it off ([`Event::ToolCallCut`]).
const CUT_OFF: u16 = 1 << 10;

impl Flags {
    #[inline]
    fn has(self, flag: u16) -> bool {
        self.0 & flag != 0
    }

    /// Sets or clears `flag` (or several, or'ed together).
    #[inline]
    fn set(&mut self, flag: u16, on: bool) {
        if on {
            self.0 |= flag;
        } else {
            self.0 &= !flag;
        }
    }

    /// Whether `flag` was set; clears it.
    #[inline]
    fn take(&mut self, flag: u16) -> bool {
        let was = self.has(flag);
        self.set(flag, false);
        was
    }
}

/// The fixed-size state of a generated parser: `R` nested regions, `P`
/// loops (of at most [`MAX_ALTERNATIVES`] alternatives each).
pub struct Core<'t, const R: usize, const P: usize> {
    /// The current state.
    pub st: u16,
    /// Input position (in the text of the current step).
    pub pos: usize,
    /// Position after the last reported piece.
    pub emit_pos: usize,
    flags: Flags,
    calls: u32,
    regions: [Region; R],
    n_regions: u8,
    rounds: [Rounds; P],
    pending: Pending,
    /// Text up to a stop: where its unreported part starts.
    acc_from: u32,
    pub json: JsonScanner,
    tools: &'t [Tool<'t>],
    tool: u16,
    arg_type: ArgType,
    /// Where the open call's markup starts in the output (modulo 2^32,
    /// like `dropped`).
    call_from: u32,
    /// How much of the output came before the text of the current step:
    /// text positions plus this are output offsets, which events that
    /// point back into the output carry ([`Event::ToolCallCut`],
    /// [`Event::ToolCallBroken`]). Kept modulo 2^32 (wrapping): exact for
    /// outputs under 4 GiB, and for the length of any call under that.
    dropped: u32,
}

/// `text[from..]`, or `""` when `from` is out of range or not a boundary.
#[inline]
fn tail(text: &str, from: usize) -> &str {
    text.get(from..).unwrap_or("")
}

/// Matches a literal at `pos`.
#[inline]
pub fn lit(text: &str, pos: usize, s: &str, last: bool) -> G {
    // (The match of a literal of up to 16 bytes by word compares, not a
    // `memcmp` call: a literal is tried at many places, and a streamed
    // chunk of markup tries its state's literals again on every chunk.)
    let rest = tail(text, pos).as_bytes();
    let s = s.as_bytes();
    if starts_with_stop(rest, s) {
        G::Match(pos + s.len())
    } else if !last && s.starts_with(rest) {
        G::More
    } else {
        G::No
    }
}

/// Skips whitespace at `pos`; `More` when it runs to the end of the text.
#[inline]
pub fn space(text: &str, pos: usize, last: bool) -> G {
    let rest = tail(text, pos).as_bytes();
    let n = rest.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count();
    if n == rest.len() && !last {
        G::More
    } else {
        G::Match(pos + n)
    }
}

/// At most one newline.
#[inline]
pub fn opt_newline(text: &str, pos: usize, last: bool) -> G {
    let rest = tail(text, pos).as_bytes();
    if rest.is_empty() && !last {
        G::More
    } else if rest.first() == Some(&b'\n') {
        G::Match(pos + 1)
    } else {
        G::Match(pos)
    }
}

/// The end of the output.
#[inline]
pub fn end(text: &str, pos: usize, last: bool) -> G {
    if pos < text.len() {
        G::No
    } else if last {
        G::Match(pos)
    } else {
        G::More
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of a stop.
#[inline]
pub fn partial(text: &[u8], stops: &[&str]) -> usize {
    let mut best = 0;
    for stop in stops {
        let stop = stop.as_bytes();
        let Some(&first) = stop.first() else { continue };
        let max = (stop.len() - 1).min(text.len());
        // Only positions holding the stop's first byte can start it.
        let from = text.len() - max;
        let until = text.len() - best;
        let mut i = from;
        while i < until {
            if text[i] == first && same_bytes(&stop[..text.len() - i], &text[i..]) {
                best = text.len() - i;
                break;
            }
            i += 1;
        }
    }
    best
}

/// For [`Core::fast_partial`]: the length of the longest end of `chunk`
/// that starts a stop (is a proper prefix of one), when that end holds no
/// whole stop after its first byte and the bytes before it hold no stop,
/// nor the start of one cut off where they end (`chunk` is then text, then
/// a stop's start to hold back). `None` otherwise, or when no stop starts
/// at the end.
///
/// Only the positions holding a stop's first byte can start one: they are
/// found first (one or two in a chunk of streamed text), and the stops are
/// compared there alone, where comparing every stop at every position cost
/// about 500 instructions a chunk.
#[inline]
pub(crate) fn stop_start_at_end(chunk: &[u8], stops: &StopSet) -> Option<usize> {
    let n = chunk.len();
    if n > 32 {
        return stop_start_at_end_by_stops(chunk, stops.all);
    }
    let starts = stops.starts_in(chunk);
    let stops = stops.all;
    let p = partial_from(chunk, starts, stops);
    if p == 0 {
        return None;
    }
    let body = n - p;
    // No stop (nor its start, cut off where the body ends) in the body.
    for i in positions(starts & ((1u32 << body) - 1)) {
        let rest = &chunk[i..body];
        let agree = |s: &[u8]| {
            let m = rest.len().min(s.len());
            same_bytes(&rest[..m], &s[..m])
        };
        if stops.iter().any(|s| !s.is_empty() && agree(s.as_bytes())) {
            return None;
        }
    }
    // No whole stop inside the held end after its first byte (`</think>`
    // in `\n</think>`, the start of `\n</think>\n`: the machine stops there).
    for i in positions(starts & !(2u32 << body).wrapping_sub(1)) {
        if stops.iter().any(|s| !s.is_empty() && chunk[i..].starts_with(s.as_bytes())) {
            return None;
        }
    }
    Some(p)
}

/// The positions of `bytes` (at most 32) that hold one of `firsts` (all of
/// them when `firsts` is empty), as the bits of a mask.
#[inline(always)]
pub(crate) fn may_start(bytes: &[u8], firsts: &[u8]) -> u32 {
    let mut starts = 0u32;
    for (i, b) in bytes.iter().enumerate().take(32) {
        if firsts.is_empty() || firsts.contains(b) {
            starts |= 1 << i;
        }
    }
    starts
}

/// [`partial`] trying only the positions in `starts` (see [`may_start`]):
/// the longest end that is a proper prefix of a stop starts at the first
/// of them that starts one.
#[inline(always)]
pub(crate) fn partial_from(text: &[u8], starts: u32, stops: &[&str]) -> usize {
    for i in positions(starts) {
        let rest = &text[i..];
        if stops.iter().any(|s| s.len() > rest.len() && s.as_bytes().starts_with(rest)) {
            return rest.len();
        }
    }
    0
}

/// The set bits of `mask`, lowest first.
#[inline(always)]
fn positions(mut mask: u32) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        let i = mask.trailing_zeros() as usize;
        mask &= mask.wrapping_sub(1);
        (i < 32).then_some(i)
    })
}

/// [`stop_start_at_end`] for any length, comparing every stop at every
/// position (the definition the positions' version keeps).
pub(crate) fn stop_start_at_end_by_stops(chunk: &[u8], stops: &[&str]) -> Option<usize> {
    let p = partial(chunk, stops);
    let body = &chunk[..chunk.len() - p];
    if p == 0 || !clear_of_stops(body, stops) {
        return None;
    }
    let tail = &chunk[body.len()..];
    if (1..tail.len()).any(|i| stops.iter().any(|s| !s.is_empty() && tail[i..].starts_with(s.as_bytes()))) {
        return None;
    }
    Some(p)
}

/// Whether `text`, inside a JSON string, stays inside it: no closing quote,
/// no control character, and every backslash starts a one-character escape
/// (`\n`, `\"`...), the last one possibly cut off at the end. The scanner
/// copies such text unchanged. `Some(true)` when it ends with that cut-off
/// backslash, `None` when the text needs the scanner.
#[inline]
fn plain_json_string_run(text: &[u8]) -> Option<bool> {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => return None,
            b if b < 0x20 => return None,
            b'\\' => match text.get(i + 1) {
                Some(&b) if SHORT_ESCAPE[usize::from(b)] => i += 1,
                None => return Some(true),
                _ => return None,
            },
            _ => {}
        }
        i += 1;
    }
    Some(false)
}

/// Whether `a` and `b` hold the same bytes, compared one by one: the
/// texts compared here (a chunk's end, the start of a stop) are a few
/// bytes, where a `memcmp` call costs more than the loop.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Whether reading `chunk` as text up to `stops` reports all of it: no
/// stop starts in it, not even one cut off at its end.
#[inline]
pub fn clear_of_stops(chunk: &[u8], stops: &[&str]) -> bool {
    for (i, &b) in chunk.iter().enumerate() {
        for stop in stops {
            let stop = stop.as_bytes();
            if stop.first() != Some(&b) {
                continue;
            }
            let rest = &chunk[i..];
            let n = rest.len().min(stop.len());
            if same_bytes(&rest[..n], &stop[..n]) {
                return false;
            }
        }
    }
    true
}

/// Where `marker` starts in `chunk` when it is cut off by the chunk's end:
/// the length of that start (0 when the marker does not start in it);
/// `None` when the chunk holds the whole marker.
#[inline]
pub fn marker_cut(chunk: &[u8], marker: &[u8]) -> Option<usize> {
    let first = *marker.first()?;
    for (i, &b) in chunk.iter().enumerate() {
        if b != first {
            continue;
        }
        let rest = &chunk[i..];
        if rest.len() >= marker.len() {
            if same_bytes(&rest[..marker.len()], marker) {
                return None;
            }
        } else if same_bytes(&marker[..rest.len()], rest) {
            return Some(rest.len());
        }
    }
    Some(0)
}

/// What reading text up to a stop found.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// Bytes of text before the stop (or before the held-back tail).
    pub take: usize,
    /// The stop was found (or the output ended).
    pub done: bool,
}

impl<'t, const R: usize, const P: usize> Core<'t, R, P> {
    /// A parser at `start`, checking call names against `tools`.
    pub fn new(start: u16, tools: &'t [Tool<'t>]) -> Self {
        Core {
            st: start,
            pos: 0,
            emit_pos: 0,
            flags: Flags(FRESH | UNREPORTED),
            calls: 0,
            regions: [Region::default(); R],
            n_regions: 0,
            rounds: [Rounds::default(); P],
            pending: Pending::default(),
            acc_from: 0,
            json: JsonScanner::new(false, false),
            tools,
            tool: u16::MAX,
            arg_type: ArgType::Auto,
            call_from: 0,
            dropped: 0,
        }
    }

    /// The oldest position a later step may come back to: text before it
    /// can be dropped.
    pub fn keep(&self) -> usize {
        let mut keep = self.pos.min(self.emit_pos);
        // A committed round never rewinds to its start (only to the last
        // reported piece), so only uncommitted rounds keep their markup.
        for r in self.regions[..self.n_regions as usize].iter().filter(|r| !r.committed()) {
            keep = keep.min(r.pos as usize);
        }
        keep
    }

    /// Drops `n` bytes from the front of the text (they were consumed).
    pub fn rebase(&mut self, n: usize) {
        if n == 0 {
            // Nothing moves; only a run since the last rebase may have
            // anchored something at the start.
            self.flags.set(ANCHORED, self.anchored());
            return;
        }
        self.pos -= n;
        self.emit_pos = self.emit_pos.saturating_sub(n);
        let n32 = n as u32;
        for r in &mut self.regions[..self.n_regions as usize] {
            if r.pos != DROPPED {
                r.pos = r.pos.checked_sub(n32).unwrap_or(DROPPED);
            }
        }
        for rounds in &mut self.rounds {
            if rounds.failed_alt != u8::MAX {
                match rounds.failed_pos.checked_sub(n32) {
                    Some(p) => rounds.failed_pos = p,
                    None => rounds.failed_alt = u8::MAX,
                }
            }
        }
        self.acc_from = self.acc_from.saturating_sub(n32);
        self.dropped = self.dropped.wrapping_add(n32);
        self.pending.id_from = self.pending.id_from.saturating_sub(n32);
        self.pending.id_to = self.pending.id_to.saturating_sub(n32);
        self.flags.set(ANCHORED, self.anchored());
    }

    /// Whether a region or a failed round is at the start of the text
    /// (what [`Self::fast_consumed`] must move).
    fn anchored(&self) -> bool {
        self.regions[..self.n_regions as usize].iter().any(|r| r.pos == 0)
            || self.rounds.iter().any(|r| r.failed_alt != u8::MAX && r.failed_pos == 0)
    }

    /// After a fast path reported `n` bytes of text the machine did not
    /// see: what consuming them would have done to positions (regions and
    /// failed rounds at the start of them are dropped), as the rebase after
    /// a run would.
    #[inline(always)]
    pub fn fast_consumed(&mut self, n: usize) {
        self.dropped = self.dropped.wrapping_add(n as u32);
        if self.flags.has(ANCHORED) {
            self.drop_anchors();
        }
    }

    #[cold]
    #[inline(never)]
    fn drop_anchors(&mut self) {
        // Only the anchors move: the text was counted as dropped already.
        let dropped = self.dropped;
        self.pos += 1;
        self.emit_pos = self.pos;
        self.rebase(1);
        self.dropped = dropped;
    }

    fn uncommitted(&self) -> bool {
        self.regions[..self.n_regions as usize].iter().any(|r| !r.committed())
    }

    // ---- Reporting ----

    /// Reports text of a kind (content, reasoning or an id).
    #[inline]
    pub fn text(&mut self, kind: Kind, text: &str, sink: &mut impl Sink) {
        if text.is_empty() {
            return;
        }
        self.emit_pos = self.pos;
        match kind {
            Kind::Content => sink.event(Event::Content(text)),
            Kind::Reasoning => sink.event(Event::Reasoning(text)),
            Kind::ToolId => sink.event(Event::ToolId(text)),
            _ => {}
        }
    }

    #[inline]
    fn args(&mut self, text: &str, sink: &mut impl Sink) {
        if text.is_empty() {
            return;
        }
        self.emit_pos = self.pos;
        sink.event(Event::ToolArgs(text));
    }

    fn args_escaped(&mut self, text: &str, sink: &mut impl Sink) {
        if text.is_empty() {
            return;
        }
        self.emit_pos = self.pos;
        crate::escape::json_escape(text, &mut |piece: &str| sink.event(Event::ToolArgs(piece)));
    }

    /// A call's id from `text[from..to]` (JSON string content when
    /// `escaped`), held back while the call is uncommitted.
    pub fn id(&mut self, text: &str, from: usize, to: usize, escaped: bool, sink: &mut impl Sink) {
        if from >= to {
            return;
        }
        if self.uncommitted() {
            if self.pending.id_to as usize != from || self.pending.id_from == self.pending.id_to {
                self.pending.id_from = from as u32;
            }
            self.pending.id_to = to as u32;
            self.flags.set(ID_ESCAPED, escaped);
            self.emit_pos = self.pos;
            return;
        }
        self.emit_pos = self.pos;
        report_id(text.get(from..to).unwrap_or(""), escaped, sink);
    }

    /// The events held back for an uncommitted call, dropped (the call
    /// broke).
    fn forget_pending(&mut self) {
        self.pending = Pending::default();
        self.flags.set(PENDING_START | ID_ESCAPED, false);
    }

    /// The events held back for an uncommitted call, now certain.
    fn flush_pending(&mut self, text: &str, sink: &mut impl Sink) {
        let p = core::mem::take(&mut self.pending);
        if self.flags.take(PENDING_START) {
            sink.event(Event::ToolCallStart { index: self.calls as usize - 1 });
        }
        let escaped = self.flags.take(ID_ESCAPED);
        if p.id_from < p.id_to {
            report_id(text.get(p.id_from as usize..p.id_to as usize).unwrap_or(""), escaped, sink);
        }
    }

    fn commit(&mut self, text: &str, sink: &mut impl Sink) {
        if let Some(r) = self.regions[..self.n_regions as usize].last_mut() {
            r.alt |= COMMITTED;
        }
        if !self.uncommitted() {
            self.flush_pending(text, sink);
        }
    }

    /// A call begins. Its markup starts at the round that opened it, or
    /// after the last reported piece when that is later (a later call of a
    /// section, whose round began before the earlier calls).
    #[inline(never)]
    pub fn tool_open(&mut self, sink: &mut impl Sink) {
        let round = match self.regions[..self.n_regions as usize].last() {
            Some(r) if r.pos != DROPPED => r.pos as usize,
            _ => 0,
        };
        self.call_from = self.dropped.wrapping_add(round.max(self.emit_pos) as u32);
        if self.uncommitted() {
            self.flags.set(PENDING_START, true);
        } else {
            sink.event(Event::ToolCallStart { index: self.calls as usize });
        }
        self.calls += 1;
        self.flags.set(CALL_OPEN, true);
        self.flags.set(ARGS_WRITTEN, false);
    }

    /// The call ended (its closing markup matched).
    #[inline(never)]
    pub fn tool_close(&mut self, sink: &mut impl Sink) {
        if self.flags.take(CALL_OPEN) {
            sink.event(Event::ToolCallEnd { complete: true });
        }
        self.emit_pos = self.pos;
    }

    /// A round is certain from here.
    #[inline(never)]
    pub fn mark_commit(&mut self, text: &str, sink: &mut impl Sink) {
        self.commit(text, sink);
    }

    /// `{` of arguments built from tags.
    pub fn args_open(&mut self, sink: &mut impl Sink) {
        self.flags.set(ARGS_WRITTEN, false);
        self.args("{", sink);
    }

    /// `}` of arguments built from tags.
    pub fn args_close(&mut self, sink: &mut impl Sink) {
        self.args("}", sink);
    }

    /// `{` and the key of the called tool's one string argument; false
    /// (nothing reported) where it has none.
    pub fn sole_arg(&mut self, sink: &mut impl Sink) -> bool {
        let tools = self.tools;
        let Some(key) = tools.get(self.tool as usize).and_then(|t| t.sole_string_arg()) else { return false };
        self.args_open(sink);
        self.open_key(key, sink);
        true
    }

    /// Text the generation prompt already wrote.
    pub fn prefilled(&mut self, kind: Kind, text: &'static str, sink: &mut impl Sink) {
        self.text(kind, text, sink);
    }

    /// An argument's key: `, "key": `.
    pub fn open_key(&mut self, key: &str, sink: &mut impl Sink) {
        self.arg_type = self.tools.get(self.tool as usize).map(|t| t.arg_type(key)).unwrap_or(ArgType::Auto);
        if self.flags.has(ARGS_WRITTEN) {
            self.args(", ", sink);
        }
        self.flags.set(ARGS_WRITTEN, true);
        self.args("\"", sink);
        self.args_escaped(key, sink);
        self.args("\": ", sink);
    }

    /// The declared type of the argument just named.
    pub fn arg_type(&self) -> ArgType {
        self.arg_type
    }

    /// Gives the next character back as content.
    pub fn give_back_one_char(&mut self, text: &str, sink: &mut impl Sink) {
        if let Some(c) = tail(text, self.pos).chars().next() {
            let from = self.pos;
            self.pos += c.len_utf8();
            self.text(Kind::Content, &text[from..self.pos], sink);
        }
    }

    /// Whether the output broke beyond repair (the rest is content).
    #[inline]
    pub fn degraded(&self) -> bool {
        self.flags.has(DEGRADED)
    }

    /// The output broke beyond repair: the rest is content.
    #[inline]
    pub fn set_degraded(&mut self) {
        self.flags.set(DEGRADED, true);
        // No JSON value is open any more: the JSON fast path, which tests
        // for an open string, leaves the rest to the content rule.
        self.json = JsonScanner::new(false, false);
    }

    /// Everything left is content.
    pub fn degrade(&mut self, text: &str, sink: &mut impl Sink) {
        let from = self.pos.min(text.len());
        self.pos = text.len();
        self.text(Kind::Content, tail(text, from), sink);
    }

    // ---- Loops ----

    /// A loop is entered: fresh counters.
    #[inline(never)]
    pub fn enter_loop(&mut self, repeat: usize) {
        if let Some(r) = self.rounds.get_mut(repeat) {
            *r = Rounds::default();
        }
    }

    /// Whether alternative `alt` of a loop may take another round here.
    /// The limited alternatives share one count (only they count rounds):
    /// `limit` bounds the rounds all of them took.
    pub fn may_try(&self, repeat: usize, alt: usize, limit: Option<u8>) -> bool {
        let Some(r) = self.rounds.get(repeat) else { return false };
        if limit.is_some_and(|max| r.limited >= max) {
            return false;
        }
        !(r.failed_alt as usize == alt && r.failed_pos as usize == self.pos)
    }

    /// A round of a loop starts at `start` (its guard matched up to `end`),
    /// counted where the alternative is `limited`. With `recover`, the
    /// round is a region that can turn back into content.
    pub fn start_round(&mut self, repeat: usize, alt: usize, limited: bool, recover: bool, start: usize, end: usize) -> bool {
        if let (true, Some(r)) = (limited, self.rounds.get_mut(repeat)) {
            r.limited = r.limited.saturating_add(1);
        }
        if recover {
            if self.n_regions as usize >= R {
                return false;
            }
            self.regions[self.n_regions as usize] =
                Region { pos: start as u32, calls_before: self.calls as u16, repeat: repeat as u8, alt: (alt as u8 & (LIMITED - 1)) | if limited { LIMITED } else { 0 } };
            self.n_regions += 1;
        }
        self.pos = end;
        true
    }

    /// A round's body finished: its region (if any) is closed.
    #[inline(never)]
    pub fn end_round(&mut self, recover: bool, text: &str, sink: &mut impl Sink) {
        if recover && self.n_regions > 0 {
            self.n_regions -= 1;
            if !self.uncommitted() {
                self.flush_pending(text, sink);
            }
        }
    }

    /// Something did not match: rewinds to the innermost region (giving
    /// markup back as content, or ending a broken call), or, with no region
    /// left, reports the rest as content. `resume` gives each loop's head
    /// and recovery state.
    pub fn fail(&mut self, text: &str, sink: &mut impl Sink, resume: impl Fn(usize) -> Resume) {
        if self.n_regions == 0 {
            if self.emit_pos < self.pos {
                self.pos = self.emit_pos;
            }
            self.set_degraded();
            return;
        }
        self.n_regions -= 1;
        let region = self.regions[self.n_regions as usize];
        let repeat = region.repeat as usize;
        let Resume { head, recover } = resume(repeat);
        let dropped = region.pos == DROPPED;
        let start = region.pos as usize;
        // A committed round that reported nothing and opened no call (a
        // harmony message to a built-in tool, dropped by design, whose
        // header broke) is given back as an uncommitted one is: its text
        // is content, not lost.
        // Something of the round was reported: it rewinds only that far.
        let reported_inside = dropped || self.emit_pos > start;
        if region.committed() && (reported_inside || self.flags.has(CALL_OPEN)) {
            let broken = self.end_broken_call(text.len(), sink);
            if reported_inside && self.emit_pos < self.pos {
                self.pos = self.emit_pos;
            }
            if broken {
                // Its text runs to where reading goes on.
                self.report_broken_call(self.pos, sink);
            }
            self.st = if recover != NONE { recover } else { head };
            if !dropped && self.pos == start {
                self.give_back_one_char(text, sink);
            }
        } else {
            if let (true, Some(r)) = (region.limited(), self.rounds.get_mut(repeat)) {
                r.limited = r.limited.saturating_sub(1);
            }
            self.forget_pending();
            self.calls = self.calls.wrapping_sub(u32::from((self.calls as u16).wrapping_sub(region.calls_before)));
            self.flags.set(CALL_OPEN, false);
            self.pos = region.pos as usize;
            self.give_back_one_char(text, sink);
            if let Some(r) = self.rounds.get_mut(repeat) {
                r.failed_alt = region.alt();
                r.failed_pos = self.pos as u32;
            }
            self.st = if recover != NONE { recover } else { head };
        }
    }

    /// The open call broke: it ends incomplete, cut off when the output
    /// ended inside it (`text_len`: the length of the text, which runs to
    /// the output's end when it was cut). True when it broke before the
    /// end: the caller reports its text's span ([`Event::ToolCallBroken`])
    /// once it knows where reading goes on.
    fn end_broken_call(&mut self, text_len: usize, sink: &mut impl Sink) -> bool {
        if !self.flags.take(CALL_OPEN) {
            return false;
        }
        if self.flags.take(CUT_OFF) {
            let tail = self.dropped.wrapping_add(text_len as u32).wrapping_sub(self.call_from);
            sink.event(Event::ToolCallCut { tail: tail as usize });
            false
        } else {
            sink.event(Event::ToolCallEnd { complete: false });
            true
        }
    }

    /// The text of the call that just broke: from its start to `end` (a
    /// position in the current text), where reading goes on.
    fn report_broken_call(&self, end: usize, sink: &mut impl Sink) {
        let to = self.dropped.wrapping_add(end as u32);
        sink.event(Event::ToolCallBroken { from: self.call_from as usize, len: to.wrapping_sub(self.call_from) as usize });
    }

    /// The output is about to end: a call open now and ending incomplete
    /// was cut off by the end. (Not one that breaks later: the machine has
    /// read all it could, so what breaks it now is the end.)
    pub fn ending(&mut self) {
        let open = self.flags.has(CALL_OPEN);
        self.flags.set(CUT_OFF, open);
    }

    /// The output ended (`text_len`: the length of the last text run): a
    /// call still open is cut off.
    pub fn finish(&mut self, text_len: usize, sink: &mut impl Sink) {
        if self.end_broken_call(text_len, sink) {
            // (A call `ending` did not mark cut off: its text runs to the
            // end all the same.)
            self.report_broken_call(text_len, sink);
        }
        self.flags.set(CUT_OFF, false);
        self.n_regions = 0;
    }

    // ---- Text up to a stop ----

    /// Starts reading text up to a stop.
    pub fn until_start(&mut self) {
        self.flags.set(FRESH | UNREPORTED, true);
        self.flags.set(HELD_NEWLINE | AS_STRING, false);
    }

    /// One step of reading text of `kind` up to a stop, which the generated
    /// state located (`found`). Returns `Some(true)` when the text is
    /// complete, `Some(false)` when more input is needed, `None` when it is
    /// not acceptable (a name that is too long or not declared).
    pub fn until_step(&mut self, text: &str, kind: Kind, trim_newlines: bool, found: Found, sink: &mut impl Sink) -> Option<bool> {
        let Found { take, done } = found;
        let mut from = self.pos;
        self.pos += take;
        let mut to = self.pos;
        if self.flags.has(FRESH) {
            if trim_newlines && from == to && !done {
                return Some(false);
            }
            if trim_newlines && text.as_bytes().get(from) == Some(&b'\n') && from < to {
                from += 1;
            }
            self.flags.set(FRESH, false);
            self.acc_from = from as u32;
            if kind == Kind::ArgString {
                self.args("\"", sink);
            }
        }
        // A newline right before the stop is layout: hold it until we know.
        let held_before = self.flags.take(HELD_NEWLINE);
        let mut newline_first = false;
        let nothing_new = from == to;
        if nothing_new {
            // Nothing new: a held newline is still the last character (and
            // is dropped if the stop follows it).
            self.flags.set(HELD_NEWLINE, held_before && !done);
        } else {
            newline_first = held_before;
            if trim_newlines && text.as_bytes().get(to - 1) == Some(&b'\n') {
                to -= 1;
                self.flags.set(HELD_NEWLINE, !done);
            }
        }
        // The value so far: `text[acc_from..to]` (values that are not
        // reported as they come stay in the window, held newline included).
        // A held newline that is still the last character so far is not
        // part of it (one that new text followed is, even when that text is
        // a layout newline trimmed here).
        let acc_to = if nothing_new && held_before { to.saturating_sub(1) } else { to };
        let acc_from = (self.acc_from as usize).min(acc_to);
        match kind {
            Kind::ArgAuto if !self.flags.has(AS_STRING) => {
                if acc_to - acc_from > AUTO_JSON_MAX {
                    // Too long to be read as JSON: a string from here on.
                    self.flags.set(AS_STRING, true);
                    self.args("\"", sink);
                    self.args_escaped(text.get(acc_from..acc_to).unwrap_or(""), sink);
                }
            }
            Kind::ArgString | Kind::ArgAuto => {
                if newline_first {
                    self.args("\\n", sink);
                }
                self.args_escaped(text.get(from..to).unwrap_or(""), sink);
            }
            // Dropped text is accounted for as content is (by `text`, which
            // reports nothing for it).
            Kind::Content | Kind::Reasoning | Kind::Dropped => {
                if newline_first {
                    self.text(kind, "\n", sink);
                }
                let piece = text.get(from..to).unwrap_or("");
                self.text(kind, piece, sink);
                if newline_first || !piece.is_empty() {
                    self.flags.set(UNREPORTED, false);
                }
            }
            Kind::ToolId => self.id(text, from, to, false, sink),
            Kind::ToolName | Kind::ToolIdName | Kind::ArgName | Kind::Discard => {}
        }
        if !done {
            return Some(false);
        }
        // Text read up to the stop is accounted for (a layout newline
        // dropped at the end included), however the output was split.
        if !self.flags.has(UNREPORTED) {
            self.emit_pos = self.pos;
        }
        let acc = text.get(acc_from..acc_to).unwrap_or("");
        match kind {
            Kind::ArgString => self.args("\"", sink),
            Kind::ToolName | Kind::ToolIdName => {
                let in_id = kind == Kind::ToolIdName;
                let read = if in_id { acc.trim() } else { name_text(acc) };
                let tools = self.tools;
                let name = if tools.is_empty() {
                    if in_id { name_in_id(read) } else { read }
                } else {
                    let i = named_tool(read, in_id, tools.iter().map(|t| t.name))?;
                    self.tool = i as u16;
                    tools[i].name
                };
                self.emit_pos = self.pos;
                self.commit(text, sink);
                sink.event(Event::ToolName(name));
                if kind == Kind::ToolIdName {
                    sink.event(Event::ToolId(read));
                }
            }
            Kind::ArgName => self.open_key(name_text(acc), sink),
            Kind::ArgAuto if self.flags.has(AS_STRING) => self.args("\"", sink),
            Kind::ArgAuto => {
                if self.arg_type.reads_as_json(acc) {
                    self.args(acc.trim(), sink);
                } else {
                    self.args("\"", sink);
                    self.args_escaped(acc, sink);
                    self.args("\"", sink);
                }
            }
            _ => {}
        }
        Some(true)
    }

    // ---- Fast paths for a whole chunk that changes nothing but the output ----
    //
    // The input calls these for a small chunk (with at most a few held-back
    // bytes the state has not read): when the chunk needs no decision, it is
    // reported as the state would report it, without running the machine.
    // A stop's start at its end, and a layout newline, are held as the
    // machine holds them. Each returns false, having changed nothing, when
    // the machine must run.

    /// Whether no round is uncommitted (none holds markup to rewind to).
    #[inline]
    pub fn settled(&self) -> bool {
        self.regions[..self.n_regions as usize].iter().all(|r| r.committed())
    }

    /// Text of `kind` read up to `stops`, mid-value, in a chunk that ends
    /// with the start of a stop (`a <` before `<tool_call>`): reports the
    /// text before it, as [`Self::fast_text`] would, and returns the length
    /// of that start. `None` (nothing reported) when the chunk needs the
    /// machine: no such start, one longer than `max`, nothing before it, or
    /// a stop inside.
    #[inline]
    pub fn fast_partial(&mut self, kind: Kind, trim_newlines: bool, chunk: &str, stops: &StopSet, max: usize, sink: &mut impl Sink) -> Option<usize> {
        let p = stop_start_at_end(chunk.as_bytes(), stops)?;
        let body = chunk.get(..chunk.len() - p)?;
        if p > max || body.is_empty() {
            return None;
        }
        let word = Word::new(body.as_bytes()).unwrap_or(Word::NONE);
        self.fast_text(kind, trim_newlines, body, word, sink).then_some(p)
    }

    /// Text of `kind` read up to a stop, mid-value: reports `chunk` if
    /// nothing in it needs a decision (a newline at its end that may be
    /// layout is held, as `until_step` holds it).
    #[inline(always)]
    pub fn fast_text(&mut self, kind: Kind, trim_newlines: bool, chunk: &str, word: Word, sink: &mut impl Sink) -> bool {
        if !matches!(kind, Kind::Content | Kind::Reasoning | Kind::ArgString) {
            return false;
        }
        // One test for the rare cases: output that degraded (all content),
        // text not started yet (the machine reads its start), a layout
        // newline held or ending the chunk, the text's first report.
        let newline_last = trim_newlines && chunk.as_bytes().last() == Some(&b'\n');
        if self.flags.has(DEGRADED | FRESH | HELD_NEWLINE | UNREPORTED) || newline_last {
            if self.flags.has(DEGRADED) {
                sink.event(Event::Content(chunk));
                return true;
            }
            if self.flags.has(FRESH) {
                return false;
            }
            if self.flags.has(HELD_NEWLINE) || newline_last {
                return self.fast_text_newlines(kind, newline_last, chunk, word, sink);
            }
            // The first report of this text: the chunk is reported below.
            self.flags.set(UNREPORTED, false);
        }
        match kind {
            Kind::Content => sink.event(Event::Content(chunk)),
            Kind::Reasoning => sink.event(Event::Reasoning(chunk)),
            Kind::ArgString if !holds_json_escape(chunk.as_bytes(), word) => sink.event(Event::ToolArgs(chunk)),
            // A raw value becomes JSON string content, escaped without
            // allocating: a small chunk as one piece.
            Kind::ArgString => args_escaped_inline(chunk, sink),
            _ => return false,
        }
        true
    }

    /// [`Self::fast_text`] with a layout newline: as `until_step` does, a
    /// newline that ends the chunk may come right before the stop, so it is
    /// held; a held one turns out to be text.
    #[inline(never)]
    fn fast_text_newlines(&mut self, kind: Kind, newline_last: bool, chunk: &str, word: Word, sink: &mut impl Sink) -> bool {
        let (body, word) = if newline_last { (&chunk[..chunk.len() - 1], word.without_last()) } else { (chunk, word) };
        let newline_first = self.flags.has(HELD_NEWLINE);
        match kind {
            Kind::Content | Kind::Reasoning => {
                let event = if kind == Kind::Content { Event::Content } else { Event::Reasoning };
                if newline_first {
                    sink.event(event("\n"));
                }
                if !body.is_empty() {
                    sink.event(event(body));
                }
            }
            Kind::ArgString => {
                let newline = if newline_first { "\\n" } else { "" };
                if !holds_json_escape(body.as_bytes(), word) {
                    if newline_first {
                        sink.event(Event::ToolArgs(newline));
                    }
                    if !body.is_empty() {
                        sink.event(Event::ToolArgs(body));
                    }
                } else {
                    args_escaped_chunk(newline, body, sink);
                }
            }
            _ => return false,
        }
        self.flags.set(HELD_NEWLINE, newline_last);
        if newline_first || !body.is_empty() {
            self.flags.set(UNREPORTED, false);
        }
        true
    }

    /// Inside a JSON string (arguments or structured output; `marker`:
    /// the marked dialect's string marker, empty for JSON): reports `chunk`
    /// whole if it holds nothing the scanner must look at.
    #[inline(always)]
    pub fn fast_json(&mut self, content: bool, marker: &str, chunk: &str, word: Word, sink: &mut impl Sink) -> bool {
        // (Output that degraded has no open string: `set_degraded` resets
        // the scanner, so this finds none and the machine reports it.)
        if let Some(&first) = marker.as_bytes().first() {
            return self.fast_marked(content, first, marker, chunk, word, sink);
        }
        let Some(escaped) = self.json.string_escape_state() else { return false };
        let bytes = chunk.as_bytes();
        // The common case: no quote, backslash or control character at all.
        if !escaped && !holds_json_escape(bytes, word) {
            sink.event(if content { Event::Content(chunk) } else { Event::ToolArgs(chunk) });
            return true;
        }
        // A backslash the last chunk ended with: this one starts with the
        // escaped character.
        let from = if escaped {
            match bytes.first() {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 1,
                _ => return false,
            }
        } else {
            0
        };
        let Some(ends_escaped) = plain_json_string_run(&bytes[from..]) else { return false };
        self.json.set_string_escape(ends_escaped);
        sink.event(if content { Event::Content(chunk) } else { Event::ToolArgs(chunk) });
        true
    }

    /// Inside a string between markers: reports `chunk`, JSON-escaped, if
    /// nothing in it can end the string. Its `first` bytes (the `<` of
    /// `x < 3` against `<|"|>`) may start no marker, except one cut off at
    /// the chunk's end: that start is held in the scanner, as the scanner
    /// holds it. A start the last chunk ended with is text when this chunk
    /// does not go on with the marker.
    #[inline(always)]
    fn fast_marked(&mut self, content: bool, first: u8, marker: &str, chunk: &str, word: Word, sink: &mut impl Sink) -> bool {
        let bytes = chunk.as_bytes();
        let Some(held) = self.json.marked_held() else { return false };
        if held > 0 || holds_any(bytes, word, [first]) {
            return self.fast_marked_cut(content, held, marker, chunk, sink);
        }
        marked_text(content, chunk, word, sink);
        true
    }

    /// [`Self::fast_marked`] for a chunk with the marker's first byte in
    /// it, or after a chunk that ended with `held` bytes of the marker.
    #[inline(never)]
    fn fast_marked_cut(&mut self, content: bool, held: usize, marker: &str, chunk: &str, sink: &mut impl Sink) -> bool {
        let bytes = chunk.as_bytes();
        let Some(cut) = marker_cut(bytes, marker.as_bytes()) else { return false };
        let Some(body) = chunk.get(..chunk.len() - cut) else { return false };
        if held > 0 {
            if bytes.first() == marker.as_bytes().get(held) {
                return false;
            }
            let start = marker.get(..held).unwrap_or("");
            marked_text(content, start, Word::new(start.as_bytes()).unwrap_or(Word::NONE), sink);
        }
        if !body.is_empty() {
            marked_text(content, body, Word::new(body.as_bytes()).unwrap_or(Word::NONE), sink);
        }
        self.json.set_marked_held(cut);
        true
    }

    /// Whether `name` is a declared tool's (none is without tools).
    pub fn declares(&self, name: &str) -> bool {
        named_tool(name, false, self.tools.iter().map(|t| t.name)).is_some()
    }

    /// How far a name may still run: reading a name looks no further.
    pub fn name_room(&self) -> usize {
        if self.flags.has(FRESH) {
            return MAX_NAME_LEN;
        }
        MAX_NAME_LEN.saturating_sub(self.pos.saturating_sub(self.acc_from as usize))
    }

    /// Whether nothing of the current text has been read yet.
    pub fn until_fresh(&self) -> bool {
        self.flags.has(FRESH)
    }

    /// JSON string content (`kind`) from `pos` up to an unescaped quote.
    /// Returns `Some(true)` at the quote, `Some(false)` when more input is
    /// needed, `None` when the output ended first.
    pub fn json_string_step(&mut self, text: &str, kind: Kind, last: bool, sink: &mut impl Sink) -> Option<bool> {
        let rest = tail(text, self.pos).as_bytes();
        let mut escaped = false;
        let mut end = None;
        for (i, &b) in rest.iter().enumerate() {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                end = Some(i);
                break;
            }
        }
        let mut n = end.unwrap_or(rest.len());
        // A trailing backslash waits for its escaped character; so does an
        // incomplete `\u` escape.
        if end.is_none() {
            if escaped {
                n -= 1;
            } else if let Some(b) = rest[..n].iter().rposition(|&b| b == b'\\') {
                let backslashes = rest[..=b].iter().rev().take_while(|&&c| c == b'\\').count();
                if backslashes % 2 == 1 && rest.get(b + 1) == Some(&b'u') && n - b < 6 {
                    n = b;
                }
            }
        }
        let from = self.pos;
        self.pos += n;
        match kind {
            Kind::ToolId => self.id(text, from, self.pos, true, sink),
            Kind::Content | Kind::Reasoning if n > 0 => {
                self.emit_pos = self.pos;
                let raw = text.get(from..self.pos).unwrap_or("");
                crate::escape::json_unescape(raw, &mut |piece: &str| {
                    sink.event(if kind == Kind::Content { Event::Content(piece) } else { Event::Reasoning(piece) })
                });
            }
            _ => {}
        }
        match end {
            Some(_) => Some(true),
            None if last => None,
            None => Some(false),
        }
    }
}

fn report_id(raw: &str, escaped: bool, sink: &mut impl Sink) {
    if !escaped {
        if !raw.is_empty() {
            sink.event(Event::ToolId(raw));
        }
        return;
    }
    crate::escape::json_unescape(raw, &mut |piece: &str| sink.event(Event::ToolId(piece)));
}

/// Raw text of a marked string (`word`: its [`Word`], or [`Word::NONE`]),
/// reported JSON-escaped: as it is when nothing in it needs an escape.
#[inline(always)]
fn marked_text(content: bool, text: &str, word: Word, sink: &mut impl Sink) {
    if !holds_json_escape(text.as_bytes(), word) {
        sink.event(json_event(content, text));
    } else if content {
        crate::escape::json_escape(text, &mut |piece: &str| sink.event(Event::Content(piece)));
    } else {
        args_escaped_chunk("", text, sink);
    }
}

/// `text` escaped as JSON string content, on the streaming fast path (the
/// machine's own reports go through [`Core::args_escaped`]): a chunk of up
/// to 8 bytes as one event, escaped here (a lookup and a store per byte: cheaper than the
/// call), a longer one by [`args_escaped_chunk`]. For a raw value's text;
/// a marked string's calls [`args_escaped_chunk`] (inlined there, Gemma 4's
/// chunk loop took 1–4% more instructions).
#[inline(always)]
fn args_escaped_inline(text: &str, sink: &mut impl Sink) {
    let mut buf = [0u8; 64];
    match crate::escape::json_escape_short("", text, &mut buf) {
        Some(escaped) => sink.event(Event::ToolArgs(escaped)),
        None => args_escaped_chunk("", text, sink),
    }
}

/// `prefix` (an escape already) and `text` escaped as JSON string content:
/// one event for a small chunk, pieces otherwise.
#[inline(never)]
fn args_escaped_chunk(prefix: &str, text: &str, sink: &mut impl Sink) {
    let mut buf = [0u8; 64];
    if let Some(escaped) = crate::escape::json_escape_short(prefix, text, &mut buf) {
        sink.event(Event::ToolArgs(escaped));
        return;
    }
    if !prefix.is_empty() {
        sink.event(Event::ToolArgs(prefix));
    }
    crate::escape::json_escape(text, &mut |piece: &str| sink.event(Event::ToolArgs(piece)));
}

/// Scans JSON at `pos` with `core.json`, reporting pieces; returns the scan
/// outcome. `marker` is the string marker of the marked dialect (`""` for
/// JSON; see [`JsonScanner::scan_marked`]). (A free function so the scanner
/// and the reporter borrow different fields.)
#[inline(never)]
pub fn json_step<const R: usize, const P: usize>(
    core: &mut Core<'_, R, P>,
    text: &str,
    content: bool,
    marker: &str,
    last: bool,
    sink: &mut impl Sink,
) -> Scan {
    let rest = tail(text, core.pos);
    let mut any = false;
    let decoding = core.json.is_decoding();
    let (n, scan) = core.json.scan_marked(rest, last, marker, &mut |piece: &str| {
        if !piece.is_empty() {
            any = true;
            sink.event(json_event(content, piece));
        }
    });
    core.pos += n;
    // (Arguments written as a string consume bytes they report nothing
    // for: [`JsonScanner::is_decoding`].)
    if any || decoding || core.json.is_decoding() {
        core.emit_pos = core.pos;
    }
    scan
}

/// Completes a JSON value left open before the call's end marker
/// ([`JsonScanner::close_open`]), reporting the closers as the value's text.
#[inline(never)]
pub fn json_close<const R: usize, const P: usize>(core: &mut Core<'_, R, P>, content: bool, sink: &mut impl Sink) {
    core.json.close_open(&mut |piece: &str| sink.event(json_event(content, piece)));
}

/// A piece of a JSON value's text: the reply itself (structured output) or
/// a call's arguments.
#[inline(always)]
fn json_event(content: bool, piece: &str) -> Event<'_> {
    if content {
        Event::Content(piece)
    } else {
        Event::ToolArgs(piece)
    }
}

/// The first position in `hay` where one of `stops` begins, looking only at
/// positions holding one of `firsts` (the stops' distinct first bytes;
/// every position when it is empty). Up to four stops are compared from an
/// array, so the comparison per candidate is unrolled. `pairs` (the stops'
/// distinct first two bytes, or none) take over in a long text where the
/// first bytes alone keep turning up ([`find_from`]).
#[inline]
pub fn find_in(hay: &[u8], firsts: &[u8], pairs: &[[u8; 2]], stops: &[&str]) -> Option<usize> {
    match *stops {
        [a] => find_firsts(hay, firsts, pairs, &[a]),
        [a, b] => find_firsts(hay, firsts, pairs, &[a, b]),
        [a, b, c] => find_firsts(hay, firsts, pairs, &[a, b, c]),
        [a, b, c, d] => find_firsts(hay, firsts, pairs, &[a, b, c, d]),
        _ => find_firsts(hay, firsts, pairs, stops),
    }
}

/// [`find_in`] over a list of stops of a known or unknown length.
#[inline(always)]
fn find_firsts<L: StopList + ?Sized>(hay: &[u8], firsts: &[u8], pairs: &[[u8; 2]], stops: &L) -> Option<usize> {
    match *firsts {
        [a] => find_from(hay, |x| x == a, |h| memchr::memchr(a, h), pairs, stops),
        [a, b] => find_from(hay, |x| x == a || x == b, |h| memchr::memchr2(a, b, h), pairs, stops),
        [a, b, c] => find_from(hay, |x| x == a || x == b || x == c, |h| memchr::memchr3(a, b, c, h), pairs, stops),
        _ => (0..hay.len()).find(|&i| (firsts.is_empty() || firsts.contains(&hay[i])) && stops.at(hay, i)),
    }
}

/// Stops to compare at a position: an array (its length known, the loop
/// unrolled) or a slice.
trait StopList {
    /// Whether one of the stops begins at `hay[i]`.
    fn at(&self, hay: &[u8], i: usize) -> bool;
    /// The stops as a slice.
    fn as_slice(&self) -> &[&str];
}

impl<const N: usize> StopList for [&str; N] {
    #[inline(always)]
    fn at(&self, hay: &[u8], i: usize) -> bool {
        self.iter().any(|s| starts_with_stop(&hay[i..], s.as_bytes()))
    }

    fn as_slice(&self) -> &[&str] {
        self
    }
}

impl StopList for [&str] {
    #[inline(always)]
    fn at(&self, hay: &[u8], i: usize) -> bool {
        self.iter().any(|s| starts_with_stop(&hay[i..], s.as_bytes()))
    }

    fn as_slice(&self) -> &[&str] {
        self
    }
}

/// The first stop in `hay`, trying the positions that hold a stop's first
/// byte: `first` tests one, `next` finds the next (a `memchr` search, worth
/// its setup only past [`SHORT`] bytes). After [`DENSE`] of them close
/// together that start no stop (the `<`s of source code before a
/// `</parameter>`), the rest of a long text is searched for the stops'
/// first two bytes (`pairs`) a block at a time ([`find_pairs`]: 32 bytes
/// with AVX2, else 16).
#[inline(always)]
fn find_from<L: StopList + ?Sized>(hay: &[u8], first: impl Fn(u8) -> bool, next: impl Fn(&[u8]) -> Option<usize>, pairs: &[[u8; 2]], stops: &L) -> Option<usize> {
    if hay.len() < SHORT {
        return (0..hay.len()).find(|&i| first(hay[i]) && stops.at(hay, i));
    }
    let mut at = 0;
    // The misses since `since`, which starts each run of misses closer
    // together than [`DENSE_SPAN`].
    let (mut misses, mut since) = (0, 0);
    while let Some(i) = next(&hay[at..]) {
        let i = at + i;
        if stops.at(hay, i) {
            return Some(i);
        }
        at = i + 1;
        if i - since > DENSE_SPAN {
            (misses, since) = (0, i);
        }
        misses += 1;
        if misses == DENSE && !pairs.is_empty() && hay.len() - at >= SHORT {
            return find_pairs(hay, at, pairs, stops.as_slice());
        }
    }
    None
}

/// Below this many bytes, [`find_from`] tests each byte.
const SHORT: usize = 32;

/// First bytes starting no stop, all within [`DENSE_SPAN`] bytes, after
/// which [`find_from`] searches pairs (source code: a `<` every few dozen
/// bytes; prose with an occasional `a < b` keeps the byte search).
const DENSE: usize = 4;
/// See [`DENSE`].
const DENSE_SPAN: usize = 256;

/// The first stop in `hay` from `i`, trying the positions that hold one of
/// `pairs` (up to four, dispatched to arrays). One function for every stop
/// list: a pair that starts a stop is rare, so the stops are compared from
/// a slice.
#[inline(never)]
fn find_pairs(hay: &[u8], i: usize, pairs: &[[u8; 2]], stops: &[&str]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if hay.len().saturating_sub(i) >= 2 * crate::block::WIDE && crate::block::has_avx2() {
        // SAFETY: the CPU has AVX2.
        return unsafe { find_pairs_avx2(hay, i, pairs, stops) };
    }
    find_pairs_by_blocks(hay, i, pairs, stops)
}

/// [`find_pairs`] 16 bytes at a time.
#[inline(always)]
fn find_pairs_by_blocks(hay: &[u8], i: usize, pairs: &[[u8; 2]], stops: &[&str]) -> Option<usize> {
    match *pairs {
        [p] => scan_pairs(hay, i, [p], stops),
        [p, q] => scan_pairs(hay, i, [p, q], stops),
        [p, q, r] => scan_pairs(hay, i, [p, q, r], stops),
        [p, q, r, s] => scan_pairs(hay, i, [p, q, r, s], stops),
        _ => (i..hay.len()).find(|&k| stops.at(hay, k)),
    }
}

/// [`find_pairs`] for `K` pairs: a block and the block one byte on give
/// the positions where a pair starts; the last bytes are tried one by one.
#[inline(always)]
fn scan_pairs<const K: usize>(hay: &[u8], mut i: usize, pairs: [[u8; 2]; K], stops: &[&str]) -> Option<usize> {
    use crate::block::{pairs_in, BLOCK};
    if let Some(at) = pairs_by_blocks::<BLOCK>(hay, &mut i, stops, |b0, b1| pairs_in(b0, b1, pairs)) {
        return Some(at);
    }
    (i..hay.len()).find(|&k| stops.at(hay, k))
}

/// The block loop of the pair searches, for blocks of `W` bytes: `hits`
/// gives a block's (and the block one byte on's) pair positions; the
/// first that starts a stop. Moves `i` past the blocks read.
#[inline(always)]
fn pairs_by_blocks<const W: usize>(hay: &[u8], i: &mut usize, stops: &[&str], hits: impl Fn(&[u8; W], &[u8; W]) -> u32) -> Option<usize> {
    let block = |at: usize| -> Option<&[u8; W]> { hay.get(at..at.checked_add(W)?)?.try_into().ok() };
    while let (Some(b0), Some(b1)) = (block(*i), block(*i + 1)) {
        let mut hits = hits(b0, b1);
        while hits != 0 {
            let at = *i + hits.trailing_zeros() as usize;
            if stops.at(hay, at) {
                return Some(at);
            }
            hits &= hits - 1;
        }
        *i += W;
    }
    None
}

/// [`find_pairs`] 32 bytes at a time (AVX2: half the blocks of
/// [`scan_pairs`] over a long raw value), the last bytes by it.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn find_pairs_avx2(hay: &[u8], i: usize, pairs: &[[u8; 2]], stops: &[&str]) -> Option<usize> {
    // SAFETY (each arm): the caller's CPU has AVX2.
    match *pairs {
        [p] => unsafe { scan_pairs_avx2(hay, i, [p], stops) },
        [p, q] => unsafe { scan_pairs_avx2(hay, i, [p, q], stops) },
        [p, q, r] => unsafe { scan_pairs_avx2(hay, i, [p, q, r], stops) },
        [p, q, r, s] => unsafe { scan_pairs_avx2(hay, i, [p, q, r, s], stops) },
        _ => find_pairs_by_blocks(hay, i, pairs, stops),
    }
}

/// [`scan_pairs`] by 32-byte blocks while a block and the byte after it
/// are left, then by [`scan_pairs`].
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn scan_pairs_avx2<const K: usize>(hay: &[u8], mut i: usize, pairs: [[u8; 2]; K], stops: &[&str]) -> Option<usize> {
    use crate::block::{pairs_in_wide, WIDE};
    // SAFETY: the caller's CPU has AVX2.
    if let Some(at) = pairs_by_blocks::<WIDE>(hay, &mut i, stops, |b0, b1| unsafe { pairs_in_wide(b0, b1, pairs) }) {
        return Some(at);
    }
    scan_pairs(hay, i, pairs, stops)
}

/// Whether `hay` starts with `stop`: for stops of 4 to 16 bytes, two
/// (overlapping) word loads from each side, not a call to `memcmp` (the
/// stops are a module's data, so their lengths are not constants here).
#[inline(always)]
pub fn starts_with_stop(hay: &[u8], stop: &[u8]) -> bool {
    let n = stop.len();
    if hay.len() < n {
        return false;
    }
    let hay = &hay[..n];
    let u64_at = |s: &[u8], i: usize| s.get(i..i + 8).and_then(|w| w.try_into().ok()).map(u64::from_le_bytes);
    let u32_at = |s: &[u8], i: usize| s.get(i..i + 4).and_then(|w| w.try_into().ok()).map(u32::from_le_bytes);
    match n {
        8..=16 => u64_at(hay, 0) == u64_at(stop, 0) && u64_at(hay, n - 8) == u64_at(stop, n - 8),
        4..=7 => u32_at(hay, 0) == u32_at(stop, 0) && u32_at(hay, n - 4) == u32_at(stop, n - 4),
        _ => hay == stop,
    }
}

/// Whitespace at `pos`: where it ends.
#[inline]
pub fn ws_end(text: &str, pos: usize) -> usize {
    pos + tail(text, pos).bytes().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count()
}

/// The largest `n <= max` at which `text` may be cut (a char boundary).
#[inline]
pub fn floor_boundary(text: &str, mut n: usize) -> usize {
    n = n.min(text.len());
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    n
}

impl<'t, const R: usize, const P: usize> Core<'t, R, P> {
    /// A name given by the grammar: reporting it commits the call.
    pub fn literal_name(&mut self, text: &str, name: &'static str, sink: &mut impl Sink) {
        self.emit_pos = self.pos;
        self.commit(text, sink);
        sink.event(Event::ToolName(name));
    }
}

/// How reasoning is reported (the request's `reasoning_format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReasoningFormat {
    /// Reasoning stays in the content, markers included.
    None,
    /// Reasoning is extracted into reasoning events.
    #[default]
    Auto,
    /// Same as `Auto` (DeepSeek's name for it).
    Deepseek,
}

/// The request options a generated parser is built for.
///
/// # Example
/// ```
/// use chat_parser_runtime::{machine::Options, ArgType, Tool};
/// let tools = [Tool { name: "get_weather", args: &[("city", ArgType::String)] }];
/// let options = Options { tools: &tools, ..Options::default() };
/// assert!(options.enable_thinking && !options.parallel_tool_calls);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options<'t> {
    pub enable_thinking: bool,
    pub reasoning_format: ReasoningFormat,
    pub parallel_tool_calls: bool,
    /// The declared tools. Empty: the output has no tool calls (markup that
    /// looks like one is content). Names are checked against these, and
    /// tagged argument values typed by them.
    pub tools: &'t [Tool<'t>],
    /// Structured output (the request's `json_schema` or `response_format`):
    /// the reply is one JSON value, reported as content.
    pub structured_output: bool,
    /// The request's `chat_template_kwargs`: a variable that switches
    /// thinking in this template (a module's `THINKING_SWITCHES`) overrides
    /// `enable_thinking` (see [`crate::kwargs`]).
    pub chat_template_kwargs: &'t [(&'t str, crate::kwargs::Kwarg<'t>)],
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            enable_thinking: true,
            reasoning_format: ReasoningFormat::Auto,
            parallel_tool_calls: false,
            tools: &[],
            structured_output: false,
            chat_template_kwargs: &[],
        }
    }
}
