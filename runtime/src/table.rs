//! A generated parser's state machine as data.
//!
//! A generated module holds its template's machine as a [`Table`]: one
//! [`State`] per position in the output grammar (a marker to match, text to
//! read up to a stop, a JSON value, a guarded choice), the alternatives of
//! its choices and loops ([`Arm`]), the markup their guards match
//! ([`Guard`]) and the stop sets of its text ([`StopSet`]). The runtime
//! walks it ([`Table::run`]), so the code is the same for every template and
//! a module is only its data:
//!
//! ```text
//! s[St::ContentText as usize] = State::Text { kind: Kind::Content, trim: false, stops: 0, next: St::LoopHead as u16 };
//! s[St::LitToolCall as usize] = State::Literal { text: Lit::ToolCall as u16, next: St::Space2 as u16 };
//! ```
//!
//! Markup, names and keys are numbers into the table's [`Table::literals`]
//! (the module's `Lit` enum names them), so a state is 10 bytes where a
//! `&str` in it made every state 24: most of a module's size is its states.
//!
//! A state's successors are state numbers (the module's `St` enum), so the
//! reference parser's frame stack is gone: what stays dynamic is small and
//! fixed (see [`crate::machine::Core`]).

use crate::kwargs::ThinkingSwitch;
use crate::machine::{clear_of_stops, end, find_in, json_close, json_step, lit, may_start, opt_newline, partial, partial_from, space, Core, Flow, Kind, Resume, G, NONE};
use crate::word::{has_byte, holds_any_of, may_start_stop, Word};
use crate::{ArgType, Sink};

/// One state of a generated machine: what it reads, and where it goes next
/// (`next` and the like are state numbers).
#[derive(Debug, Clone, Copy)]
pub enum State {
    /// The grammar is done: anything after it makes the rest content.
    Done,
    /// Markup that must come next, exactly.
    Literal { text: u16, next: u16 },
    /// Whitespace, then markup that must come next, exactly.
    SpacedLiteral { text: u16, next: u16 },
    /// Whitespace (none or more).
    Space { next: u16 },
    /// One newline, if there is one.
    Newline { next: u16 },
    /// The end of the output.
    End { next: u16 },
    /// The first alternative whose guard matches; broken markup when none does.
    Choice { arms: Arms },
    /// A loop without counters: a round whenever a guard matches, else on
    /// to `next`.
    Loop { arms: Arms, next: u16 },
    /// The head of a counted loop (number `repeat` of its variant): a round
    /// of the first alternative that may run another and whose guard
    /// matches (a region that can turn back into content with `recover`),
    /// else on to `next`.
    LoopHead { repeat: u8, recover: bool, arms: Arms, next: u16 },
    /// A counted loop's round finished: back to its head.
    RoundDone { recover: bool, head: u16 },
    /// A counted loop is entered: fresh counters.
    EnterLoop { repeat: u8, head: u16 },
    /// On to `next` when the guard matches here, reading nothing.
    Peek { guard: u16, next: u16 },
    /// Starts reading text up to a stop (state `next` reads it).
    TextStart { next: u16 },
    /// Text of `kind` up to the first of stop set `stops`.
    Text { kind: Kind, trim: bool, stops: u16, next: u16 },
    /// A name up to the first of stop set `stops` (see
    /// [`Core::name_state`]).
    Name { kind: Kind, trim: bool, stops: u16, next: u16 },
    /// Starts a JSON value (state `next` scans it).
    JsonStart { python: bool, object_only: bool, next: u16 },
    /// A JSON value, reported as content or as a call's arguments
    /// (`marker`: the string marker of a marked dialect, `""` for JSON).
    /// A value left open where it cannot go on goes to `open_end` (the
    /// states that close it before an end marker), or breaks with [`NONE`].
    Json { content: bool, marker: u16, open_end: u16, next: u16 },
    /// Closes a JSON value left open before its call's end marker.
    JsonClose { content: bool, next: u16 },
    /// The content of a JSON string, reported as `kind`.
    JsonString { kind: Kind, next: u16 },
    /// An argument's key: `, "key": `.
    ArgKey { key: u16, next: u16 },
    /// On by the declared type of the argument just named.
    ByArgType { string: u16, json: u16, auto: u16 },
    /// On to `declared` when the text ahead, up to the first of stop set
    /// `stops`, names a declared tool, else to `other`; reads nothing.
    ByToolName { stops: u16, declared: u16, other: u16 },
    /// A call begins.
    ToolOpen { next: u16 },
    /// A call's closing markup matched.
    ToolClose { next: u16 },
    /// A name given by the grammar (reporting it commits the call).
    ToolName { name: u16, next: u16 },
    /// The round is certain from here.
    Commit { next: u16 },
    /// `{` of arguments built from tags.
    ArgsOpen { next: u16 },
    /// `}` of arguments built from tags.
    ArgsClose { next: u16 },
    /// `{` and the key of the called tool's one string argument; fails
    /// where it has no such argument ([`crate::Tool::sole_string_arg`]).
    SoleArg { next: u16 },
    /// Text the generation prompt already wrote, reported as `kind`.
    Prefilled { kind: Kind, text: u16, next: u16 },
}

/// A range of a table's [`Arm`]s: `len` of them from `first`.
#[derive(Debug, Clone, Copy)]
pub struct Arms {
    pub first: u16,
    pub len: u16,
}

/// One alternative of a choice or loop: taken to state `to` when guard
/// `guard` matches (and, in a counted loop, fewer than `limit` rounds of it
/// ran).
#[derive(Debug, Clone, Copy)]
pub struct Arm {
    pub guard: u16,
    pub to: u16,
    pub limit: Option<u8>,
}

/// Markup a guard matches without reporting anything. Compound guards name
/// their parts by index into the table's guards.
#[derive(Debug, Clone, Copy)]
pub enum Guard {
    /// Matches here, reading nothing.
    Empty,
    /// Never matches.
    Never,
    /// This markup (a number into [`Table::literals`]), exactly.
    Lit(u16),
    /// Whitespace (none or more).
    Space,
    /// One newline, if there is one.
    Newline,
    /// The end of the output.
    End,
    /// `len` guards from `first`, one after the other.
    Seq { first: u16, len: u16 },
    /// `len` alternatives, each two guards from `first` (its guard, then its
    /// body): the first whose guard does not fail decides.
    Choice { first: u16, len: u16 },
    /// The guard matches here; reads nothing.
    Peek(u16),
}

/// What ends a run of text: the stops, and their distinct first bytes (at
/// most 4: the search looks for these before comparing whole stops; with
/// more, [`StopSet::MANY`], every byte is tried).
///
/// ```
/// use chat_parser_runtime::table::StopSet;
/// const STOPS: StopSet = StopSet::new(&["</think>", "<|im_end|>"]);
/// // A `<` that starts no stop is text.
/// assert_eq!(STOPS.find(b"a < b</think>"), Some(5));
/// // The end of a chunk may be the start of a stop: held back.
/// assert_eq!(STOPS.partial(b"text </thi"), 5);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StopSet {
    pub all: &'static [&'static str],
    pub firsts: [u8; 4],
    /// How many of `firsts` are used: 0 when no stop has a first byte (no
    /// stop can be found), [`StopSet::MANY`] when more than 4 differ.
    pub n_firsts: u8,
    /// The longest stop's length in bytes (`u16::MAX`: that or more).
    pub longest: u16,
    /// The stops' distinct first two bytes (`</` of `</parameter>`), for
    /// long texts where a first byte alone is frequent ([`find_in`]).
    pub pairs: [[u8; 2]; 4],
    /// How many of `pairs` are used: 0 when a stop is shorter than two
    /// bytes or more than 4 pairs differ (first bytes alone are searched).
    pub n_pairs: u8,
    /// The distinct second bytes of `pairs`, for the streaming fast path
    /// ([`Fast::Content`]'s `follow`): `[0, 0]` when there are no pairs
    /// or more than two second bytes differ; a zero second: one.
    pub follow: [u8; 2],
    /// The stops that end the text only where markup follows them
    /// ([`StopSet::closed_by`]); empty: every stop ends it.
    pub closers: &'static [&'static str],
}

/// The most whitespace between a closer and the markup that shows it is
/// one ([`StopSet::closed_by`]): after more, the closer ends the text as
/// any stop does. Code generation counts it in the window, which holds a
/// closer and what follows it until that is known.
pub const CLOSER_GAP: usize = 8;

/// Where a run of text ends in the text read so far ([`StopSet::ending`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// At the stop at this offset.
    At(usize),
    /// Maybe at the closer at this offset: what follows it is not read yet
    /// (the text before it is certain).
    Undecided(usize),
    /// No stop ends it here.
    Nowhere,
}

impl StopSet {
    /// [`StopSet::n_firsts`] of a set whose stops start with more than 4
    /// different bytes.
    pub const MANY: u8 = u8::MAX;

    /// The stop set of `all` (what a generated module writes out).
    pub const fn new(all: &'static [&'static str]) -> StopSet {
        let mut firsts = [0u8; 4];
        let mut n = 0usize;
        let mut longest = 0usize;
        let mut i = 0;
        let mut many = false;
        while i < all.len() {
            let s = all[i].as_bytes();
            if s.len() > longest {
                longest = s.len();
            }
            if !s.is_empty() {
                match add_distinct(&mut firsts, n, s[0]) {
                    Some(k) => n = k,
                    None => many = true,
                }
            }
            i += 1;
        }
        let n_firsts = if many { StopSet::MANY } else { n as u8 };
        let (pairs, n_pairs) = StopSet::pairs_of(all);
        let follow = StopSet::follow_of(&pairs, n_pairs);
        // (Saturated: `partial` reads a stop of 65,535 bytes or more as of
        // unknown length.)
        let longest = if longest > u16::MAX as usize { u16::MAX } else { longest as u16 };
        StopSet { all, firsts, n_firsts, longest, pairs, n_pairs, follow, closers: &[] }
    }

    /// The set, with `closers` (some of its stops) ending the text only
    /// where markup follows them: after at most [`CLOSER_GAP`] bytes of
    /// whitespace, a byte one of the set's stops starts with, or the end of
    /// the output. Anywhere else a closer is the text's own: a raw argument
    /// value that holds its own closing tag (a file written with
    /// `</parameter>` in it, a heredoc that writes XML) goes on past it,
    /// where the template's own render put it.
    ///
    /// ```
    /// use chat_parser_runtime::table::{Ending, StopSet};
    /// const VALUE: StopSet = StopSet::new(&["</parameter>", "<parameter="]).closed_by(&["</parameter>"]);
    /// // Text follows the first closer, markup the second.
    /// let text = b"return \"</parameter>\"\n</parameter>\n<parameter=b>";
    /// assert_eq!(VALUE.ending(text, false), Ending::At(22));
    /// // What follows the closer is not read yet; the output's end decides.
    /// assert_eq!(VALUE.ending(b"x</parameter>\n", false), Ending::Undecided(1));
    /// assert_eq!(VALUE.ending(b"x</parameter>\n", true), Ending::At(1));
    /// ```
    pub const fn closed_by(self, closers: &'static [&'static str]) -> StopSet {
        StopSet { closers, ..self }
    }

    /// Where the text at the start of `hay` ends: at its first stop, past
    /// closers that text follows ([`StopSet::closed_by`]). `last`: the
    /// output ends after `hay`.
    #[inline]
    pub fn ending(&self, hay: &[u8], last: bool) -> Ending {
        match self.find(hay) {
            None => Ending::Nowhere,
            Some(at) if self.closers.is_empty() => Ending::At(at),
            Some(at) => self.ending_from(hay, at, last),
        }
    }

    /// [`StopSet::ending`] from the stop at `at` on, for a set with closers.
    #[inline(never)]
    fn ending_from(&self, hay: &[u8], mut at: usize, last: bool) -> Ending {
        loop {
            match self.ends_at(hay, at, last) {
                Some(true) => return Ending::At(at),
                None => return Ending::Undecided(at),
                // Text follows the closer: the next stop after its start.
                Some(false) => match hay.get(at + 1..).and_then(|h| self.find(h)) {
                    Some(i) => at += 1 + i,
                    None => return Ending::Nowhere,
                },
            }
        }
    }

    /// Whether the stop at `at` ends the text: any stop but a closer does,
    /// and a closer where markup follows it. `None` until that is read.
    fn ends_at(&self, hay: &[u8], at: usize, last: bool) -> Option<bool> {
        let rest = &hay[at..];
        let Some(closer) = self.closers.iter().find(|c| rest.starts_with(c.as_bytes())) else {
            return Some(true);
        };
        let after = &rest[closer.len()..];
        let gap = after.iter().take(CLOSER_GAP + 1).take_while(|b| b.is_ascii_whitespace()).count();
        match after.get(gap) {
            _ if gap > CLOSER_GAP => Some(true),
            Some(&b) => Some(match self.n_firsts {
                StopSet::MANY => self.all.iter().any(|s| s.as_bytes().first() == Some(&b)),
                n => self.firsts[..(n as usize).min(4)].contains(&b),
            }),
            None if last => Some(true),
            None => None,
        }
    }

    /// [`StopSet::pairs`] and [`StopSet::n_pairs`] of `all`.
    const fn pairs_of(all: &'static [&'static str]) -> ([[u8; 2]; 4], u8) {
        let mut pairs = [[0u8; 2]; 4];
        let mut n = 0usize;
        let mut i = 0;
        while i < all.len() {
            let s = all[i].as_bytes();
            if s.len() < 2 {
                return ([[0u8; 2]; 4], 0);
            }
            let pair = [s[0], s[1]];
            let mut j = 0;
            let mut seen = false;
            while j < n {
                seen |= pairs[j][0] == pair[0] && pairs[j][1] == pair[1];
                j += 1;
            }
            if !seen {
                if n == 4 {
                    return ([[0u8; 2]; 4], 0);
                }
                pairs[n] = pair;
                n += 1;
            }
            i += 1;
        }
        (pairs, n as u8)
    }

    /// [`StopSet::follow`] of the first `n_pairs` of `pairs`.
    const fn follow_of(pairs: &[[u8; 2]; 4], n_pairs: u8) -> [u8; 2] {
        let mut follow = [0u8; 2];
        let mut n = 0;
        let mut i = 0;
        while i < n_pairs as usize && i < 4 {
            let b = pairs[i][1];
            // Zero means "none" in `follow`, so a stop going on with a zero
            // byte leaves the first bytes alone to decide.
            if b == 0 {
                return [0, 0];
            }
            match add_distinct(&mut follow, n, b) {
                Some(k) => n = k,
                None => return [0, 0],
            }
            i += 1;
        }
        follow
    }

    /// The first stop in `hay`.
    #[inline]
    pub fn find(&self, hay: &[u8]) -> Option<usize> {
        match self.n_firsts {
            0 => None,
            StopSet::MANY => find_in(hay, &[], &[], self.all),
            n => find_in(hay, &self.firsts[..(n as usize).min(4)], &self.pairs[..(self.n_pairs as usize).min(4)], self.all),
        }
    }

    /// How many bytes at the end of `hay` may start a stop: the longest end
    /// that is a stop's start ([`partial`]), looked for only in the end
    /// shorter than the longest stop, and there only at the positions of
    /// first bytes.
    #[inline]
    pub fn partial(&self, hay: &[u8]) -> usize {
        if self.longest == u16::MAX {
            // (A stop this long or longer: its length is not known.)
            return partial(hay, self.all);
        }
        let end = &hay[hay.len() - hay.len().min((self.longest as usize).saturating_sub(1))..];
        if end.len() > 32 {
            return partial(end, self.all);
        }
        partial_from(end, self.starts_in(end), self.all)
    }

    /// The positions of `bytes` (at most 32) that may start a stop, as the
    /// bits of a mask: those holding a stop's first byte (every one when
    /// more than 4 differ, none when no stop has one).
    #[inline(always)]
    pub(crate) fn starts_in(&self, bytes: &[u8]) -> u32 {
        match self.n_firsts {
            0 => 0,
            StopSet::MANY => may_start(bytes, &[]),
            k => may_start(bytes, &self.firsts[..(k as usize).min(4)]),
        }
    }

    /// Whether a chunk (with its word `w`, or [`Word::NONE`]) holds a byte
    /// a stop starts with.
    #[inline]
    fn may_stop(&self, s: &[u8], w: Word) -> bool {
        match self.n_firsts {
            0 => false,
            StopSet::MANY => true,
            n => holds_any_of(s, w, &self.firsts[..(n as usize).min(4)]),
        }
    }
}

/// Adds `b` to the first `n` bytes of `set` unless they hold it already:
/// the new count, or `None` when `set` is full and `b` is not in it.
const fn add_distinct<const N: usize>(set: &mut [u8; N], n: usize, b: u8) -> Option<usize> {
    let mut j = 0;
    while j < n {
        if set[j] == b {
            return Some(n);
        }
        j += 1;
    }
    if n >= N {
        return None;
    }
    set[n] = b;
    Some(n + 1)
}

/// What the streaming fast path may do in a state ([`Table::fast`]): each
/// kind of text is its own variant, so what a chunk is reported as is
/// known in each arm. A module's `fast_row` ([`Machine::fast_row`]) gives
/// each of its text and JSON states' rows as a constant, and
/// [`Machine::fast_step`] hands it to [`Table::fast_in`]: inlined into the
/// caller's chunk loop, each arm is compiled with its row's values.
/// Elsewhere the row is worked out from the state ([`Fast::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fast {
    /// The machine must run.
    No,
    /// Content up to stop set `stops`, whose stops all start with `first`
    /// or `second` (`second` 0: one byte; `first` 0: no first byte, or more
    /// than two, and the stop set decides), and go on with one of `follow`
    /// (`</` and `<t` of `</think>` and `<tool_call>`: `follow` is `/` and
    /// `t`; a zero second byte: one; `[0, 0]`: more than two, or a stop of
    /// one byte, and the first bytes alone decide).
    Content { trim: bool, first: u8, second: u8, follow: [u8; 2], stops: u16 },
    /// Reasoning, likewise.
    Reasoning { trim: bool, first: u8, second: u8, follow: [u8; 2], stops: u16 },
    /// A raw argument value (reported JSON-escaped), likewise.
    ArgString { trim: bool, first: u8, second: u8, follow: [u8; 2], stops: u16 },
    /// A JSON value; `marker` is the string marker of a marked dialect
    /// (empty: plain JSON).
    Json { content: bool, marker: &'static str },
}

impl Fast {
    /// The fast path of `state`, whose text ends at one of `stops` (the
    /// table's stop sets) and whose markup is in `literals`.
    /// (A `const fn`: a module's `fast_row` works its rows out when it is
    /// compiled.)
    pub const fn of(state: &State, stops: &[StopSet], literals: &[&'static str]) -> Fast {
        match *state {
            State::Text { kind, trim, stops: n, .. } => {
                let (first, second, follow) = if (n as usize) < stops.len() {
                    let set = &stops[n as usize];
                    let (first, second) = match set.n_firsts {
                        1 => (set.firsts[0], 0),
                        2 => (set.firsts[0], set.firsts[1]),
                        _ => (0, 0),
                    };
                    (first, second, set.follow)
                } else {
                    (0, 0, [0, 0])
                };
                match kind {
                    Kind::Content => Fast::Content { trim, first, second, follow, stops: n },
                    Kind::Reasoning => Fast::Reasoning { trim, first, second, follow, stops: n },
                    Kind::ArgString => Fast::ArgString { trim, first, second, follow, stops: n },
                    _ => Fast::No,
                }
            }
            State::Json { content, marker, .. } => {
                // (A marker out of the table's range reads as plain JSON,
                // as the machine's `Table::literal` reads it.)
                let marker = if (marker as usize) < literals.len() { literals[marker as usize] } else { "" };
                Fast::Json { content, marker }
            }
            _ => Fast::No,
        }
    }
}

/// Where a loop of a grammar variant resumes after a broken round: the
/// variant's entry state and the loop's number in it, its head, and the
/// state that runs after the broken round ([`NONE`]: none).
#[derive(Debug, Clone, Copy)]
pub struct LoopResume {
    pub entry: u16,
    pub repeat: u8,
    pub head: u16,
    pub recover: u16,
}

/// A template's machine: its states and what they refer to, the entry
/// state of each grammar variant, and its limits.
#[derive(Debug)]
pub struct Table {
    pub states: &'static [State],
    pub arms: &'static [Arm],
    pub guards: &'static [Guard],
    pub stops: &'static [StopSet],
    /// The markup, names and keys states and guards read, by number.
    pub literals: &'static [&'static str],
    pub resumes: &'static [LoopResume],
    /// The entry state of each grammar variant, by
    /// [`Options::variant`](crate::Options::variant).
    pub entries: [u16; 16],
    /// The `chat_template_kwargs` variables that switch thinking.
    pub switches: &'static [ThinkingSwitch],
    /// The template's pack table ([`crate::pack`]): empty for most.
    pub pack: &'static [&'static str],
    /// The longest markup read before it is known what it is.
    pub hold_limit: usize,
    /// The longest text the machine looks at at once (held text unpacked,
    /// plus a chunk): the window's size unless the template packs; at most
    /// [`crate::input::MAX_FULL`].
    pub full: u16,
}

/// What a generated module provides: its table, and its states' fast paths
/// as a function the caller's chunk loop inlines.
pub trait Machine {
    const TABLE: &'static Table;

    /// State `st`'s fast path ([`Fast::No`] for a state without one): a
    /// `match` whose arms are constants, so that [`Self::fast_step`],
    /// inlined, runs each arm with its row's values.
    fn fast_row(st: u16) -> Fast;

    /// [`Table::fast_in`] with the current state's row.
    #[inline(always)]
    fn fast_step<S: Sink, const R: usize, const P: usize>(c: &mut Core<'_, R, P>, chunk: &str, word: Word, sink: &mut S) -> bool {
        Self::TABLE.fast_in(Self::fast_row(c.st), c, chunk, word, sink)
    }
}

impl Table {
    /// Whether guard `g` matches at `p`.
    fn guard(&self, g: u16, t: &str, p: usize, last: bool) -> G {
        match self.guards.get(g as usize) {
            None | Some(Guard::Never) => G::No,
            Some(Guard::Empty) => G::Match(p),
            Some(&Guard::Lit(s)) => lit(t, p, self.literal(s), last),
            Some(Guard::Space) => space(t, p, last),
            Some(Guard::Newline) => opt_newline(t, p, last),
            Some(Guard::End) => end(t, p, last),
            Some(&Guard::Seq { first, len }) => {
                let mut p = p;
                for i in first..first + len {
                    match self.guard(i, t, p, last) {
                        G::Match(e) => p = e,
                        other => return other,
                    }
                }
                G::Match(p)
            }
            Some(&Guard::Choice { first, len }) => {
                for i in 0..len {
                    let at = first + 2 * i;
                    let outcome = match self.guard(at, t, p, last) {
                        G::Match(e) => self.guard(at + 1, t, e, last),
                        other => other,
                    };
                    if outcome != G::No {
                        return outcome;
                    }
                }
                G::No
            }
            Some(&Guard::Peek(inner)) => match self.guard(inner, t, p, last) {
                G::Match(_) => G::Match(p),
                other => other,
            },
        }
    }

    /// The first of `arms` whose guard matches, taken (or waited for);
    /// `None` when none does.
    fn first_arm<const R: usize, const P: usize>(&self, arms: Arms, c: &mut Core<'_, R, P>, t: &str, last: bool) -> Option<Flow> {
        self.arms(arms).iter().find_map(|arm| c.choose(self.guard(arm.guard, t, c.pos, last), arm.to))
    }

    fn arms(&self, arms: Arms) -> &'static [Arm] {
        self.arms.get(arms.first as usize..(arms.first + arms.len) as usize).unwrap_or(&[])
    }

    /// Literal `n` (empty past the table's: a generated table has them all).
    #[inline]
    fn literal(&self, n: u16) -> &'static str {
        self.literals.get(n as usize).copied().unwrap_or("")
    }

    fn stop_set(&self, n: u16) -> &'static StopSet {
        const NO_STOPS: StopSet = StopSet::new(&[]);
        self.stops.get(n as usize).unwrap_or(&NO_STOPS)
    }

    /// State `st`'s fast path.
    #[inline]
    fn fast_row(&self, st: u16) -> Fast {
        self.states.get(st as usize).map_or(Fast::No, |s| Fast::of(s, self.stops, self.literals))
    }

    /// Whether the markup held up to `to` is longer than the hold limit.
    /// Checked before every step, and where a name ends: a name read whole
    /// commits in the same step, so it is checked there too, and whole and
    /// streamed output break the same markup.
    #[inline]
    pub fn over_hold<const R: usize, const P: usize>(&self, c: &Core<'_, R, P>, t: &str, to: usize) -> bool {
        // Held markup starts at or after 0: a window no longer than the
        // limit cannot hold too much (the common case in streaming, where
        // the window is a few chunks), and `keep` need not be worked out.
        to > self.hold_limit
            && to - c.keep() > self.hold_limit
            && (self.pack.is_empty() || crate::pack::packed_len(t.as_bytes().get(c.keep()..to).unwrap_or(&[]), self.pack) > self.hold_limit)
    }

    /// Where loop `repeat` of the variant entered at `entry` resumes.
    pub fn resume(&self, entry: u16, repeat: usize) -> Resume {
        self.resumes
            .iter()
            .find(|r| r.entry == entry && r.repeat as usize == repeat)
            .map_or(Resume { head: 0, recover: NONE }, |r| Resume { head: r.head, recover: r.recover })
    }

    /// Runs the current state once: what comes next.
    #[inline(always)]
    pub fn step<S: Sink, const R: usize, const P: usize>(&self, c: &mut Core<'_, R, P>, t: &str, last: bool, sink: &mut S) -> Flow {
        let Some(&state) = self.states.get(c.st as usize) else {
            c.set_degraded();
            return Flow::Go;
        };
        let go = |c: &mut Core<'_, R, P>, next: u16| {
            c.st = next;
            Flow::Go
        };
        match state {
            State::Done => c.done_state(t),
            State::Literal { text, next } => c.literal_state(t, last, self.literal(text), next),
            State::SpacedLiteral { text, next } => c.spaced_literal_state(t, last, self.literal(text), next),
            State::Space { next } => c.space_state(t, last, next),
            State::Newline { next } => c.newline_state(t, last, next),
            State::End { next } => c.end_state(t, last, next),
            State::Choice { arms } => self.first_arm(arms, c, t, last).unwrap_or(Flow::Fail),
            State::Loop { arms, next } => self.first_arm(arms, c, t, last).unwrap_or_else(|| go(c, next)),
            State::LoopHead { repeat, recover, arms, next } => {
                for (k, arm) in self.arms(arms).iter().enumerate() {
                    let guard = |t: &str, p: usize, last: bool| self.guard(arm.guard, t, p, last);
                    if let Some(flow) = c.round(t, last, (repeat as usize, k, arm.limit), recover, guard, arm.to) {
                        return flow;
                    }
                }
                go(c, next)
            }
            State::RoundDone { recover, head } => {
                c.end_round(recover, t, sink);
                go(c, head)
            }
            State::EnterLoop { repeat, head } => {
                c.enter_loop(repeat as usize);
                go(c, head)
            }
            State::Peek { guard, next } => c.peek_state(self.guard(guard, t, c.pos, last), next),
            State::TextStart { next } => c.text_start(next),
            State::Text { kind, trim, stops, next } => c.text_state(t, last, kind, trim, self.stop_set(stops), next, sink),
            State::Name { kind, trim, stops, next } => c.name_state(t, last, kind, trim, self.stop_set(stops), self, next, sink),
            State::JsonStart { python, object_only, next } => c.json_start(python, object_only, next),
            State::Json { content, marker, open_end, next } => match json_step(c, t, content, self.literal(marker), last, sink) {
                crate::json::Scan::Done => go(c, next),
                crate::json::Scan::NeedMore => Flow::More,
                crate::json::Scan::Invalid if open_end != NONE && c.json.can_close() => go(c, open_end),
                crate::json::Scan::Invalid => Flow::Fail,
            },
            State::JsonClose { content, next } => {
                json_close(c, content, sink);
                go(c, next)
            }
            State::JsonString { kind, next } => c.json_string_state(t, last, kind, next, sink),
            State::ArgKey { key, next } => {
                c.open_key(self.literal(key), sink);
                go(c, next)
            }
            State::ByArgType { string, json, auto } => {
                let next = match c.arg_type() {
                    ArgType::String => string,
                    ArgType::Json => json,
                    ArgType::Auto | ArgType::StringOrNull => auto,
                };
                go(c, next)
            }
            State::ByToolName { stops, declared, other } => c.by_tool_name(t, last, self.stop_set(stops), declared, other),
            State::ToolOpen { next } => {
                c.tool_open(sink);
                go(c, next)
            }
            State::ToolClose { next } => {
                c.tool_close(sink);
                go(c, next)
            }
            State::ToolName { name, next } => {
                c.literal_name(t, self.literal(name), sink);
                go(c, next)
            }
            State::Commit { next } => {
                c.mark_commit(t, sink);
                go(c, next)
            }
            State::ArgsOpen { next } => {
                c.args_open(sink);
                go(c, next)
            }
            State::ArgsClose { next } => {
                c.args_close(sink);
                go(c, next)
            }
            State::SoleArg { next } => {
                if c.sole_arg(sink) {
                    go(c, next)
                } else {
                    Flow::Fail
                }
            }
            State::Prefilled { kind, text, next } => {
                c.prefilled(kind, self.literal(text), sink);
                go(c, next)
            }
        }
    }

    /// Reports `chunk` whole when the current state would report it
    /// unchanged (text without a stop in it, the inside of a JSON string);
    /// false when the machine must run. `word` is the chunk as a [`Word`]
    /// when it has at most 8 bytes, else [`Word::NONE`].
    #[inline(always)]
    pub fn fast<S: Sink, const R: usize, const P: usize>(&self, c: &mut Core<'_, R, P>, chunk: &str, word: Word, sink: &mut S) -> bool {
        self.fast_in(self.fast_row(c.st), c, chunk, word, sink)
    }

    /// [`Self::fast`] given the current state's fast path.
    #[inline(always)]
    pub fn fast_in<S: Sink, const R: usize, const P: usize>(
        &self,
        fast: Fast,
        c: &mut Core<'_, R, P>,
        chunk: &str,
        word: Word,
        sink: &mut S,
    ) -> bool {
        // (Output that degraded is content: each kind's path tests it with
        // its own rare cases.)
        match fast {
            Fast::Content { trim, first, second, follow, stops } => self.fast_text(c, Kind::Content, trim, [first, second], follow, stops, chunk, word, sink),
            Fast::Reasoning { trim, first, second, follow, stops } => self.fast_text(c, Kind::Reasoning, trim, [first, second], follow, stops, chunk, word, sink),
            Fast::ArgString { trim, first, second, follow, stops } => self.fast_text(c, Kind::ArgString, trim, [first, second], follow, stops, chunk, word, sink),
            Fast::Json { content, marker } => c.fast_json(content, marker, chunk, word, sink),
            Fast::No => false,
        }
    }

    /// [`Self::fast`] in a text state.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn fast_text<S: Sink, const R: usize, const P: usize>(
        &self,
        c: &mut Core<'_, R, P>,
        kind: Kind,
        trim: bool,
        [first, second]: [u8; 2],
        follow: [u8; 2],
        stops: u16,
        chunk: &str,
        word: Word,
        sink: &mut S,
    ) -> bool {
        // A stop's first byte alone (`<` in `a < b`) does not stop the fast
        // path; a stop, or the start of one at the chunk's end, does.
        // The stop set is read only where the row's bytes do not decide.
        let set = || self.stop_set(stops);
        let may_stop = if first != 0 && word.len <= 8 {
            (has_byte(word, first) || (second != 0 && has_byte(word, second)))
                && (follow[0] == 0 || may_start_stop(word, [first, second], follow))
        } else {
            set().may_stop(chunk.as_bytes(), word)
        };
        (!may_stop || clear_of_stops(chunk.as_bytes(), set().all)) && c.fast_text(kind, trim, chunk, word, sink)
    }

    /// When `chunk` ends with the start of a stop of the current text state
    /// and holds nothing else that needs a decision: reports the text
    /// before it and returns the length of that start, for the caller to
    /// hold back. `None` (and nothing reported) when the machine must run.
    #[inline(never)]
    pub fn fast_partial<S: Sink, const R: usize, const P: usize>(
        &self,
        c: &mut Core<'_, R, P>,
        chunk: &str,
        max: usize,
        sink: &mut S,
    ) -> Option<usize> {
        let (kind, trim, stops) = match self.fast_row(c.st) {
            Fast::Content { trim, stops, .. } => (Kind::Content, trim, stops),
            Fast::Reasoning { trim, stops, .. } => (Kind::Reasoning, trim, stops),
            Fast::ArgString { trim, stops, .. } => (Kind::ArgString, trim, stops),
            _ => return None,
        };
        // (Without stops nothing is held: `fast_partial` finds no start.)
        c.fast_partial(kind, trim, chunk, self.stop_set(stops), max, sink)
    }

    /// Runs the machine over `text` from the current position: steps until
    /// the input runs out (`More`) or the grammar ends (`Stop`), falling back
    /// to the last region when a step fails (or the held markup grows over
    /// the hold limit), and reporting the rest as content once degraded.
    #[inline(never)]
    pub fn run<S: Sink, const R: usize, const P: usize>(&self, c: &mut Core<'_, R, P>, entry: u16, text: &str, last: bool, sink: &mut S) {
        loop {
            if c.degraded() {
                c.degrade(text, sink);
                return;
            }
            let flow = if self.over_hold(c, text, c.pos) { Flow::Fail } else { self.step(c, text, last, sink) };
            match flow {
                Flow::Go => {}
                Flow::More if !last => return,
                Flow::Stop => return,
                Flow::More | Flow::Fail => c.fail(text, sink, |r| self.resume(entry, r)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module's size is mostly its states: no field of a state or guard
    /// may grow them back to a pointer's size (a `&str` made a state 24
    /// bytes and a guard 24; literals are numbers into `Table::literals`).
    #[test]
    fn states_and_guards_stay_small() {
        assert_eq!(core::mem::size_of::<State>(), 10);
        assert_eq!(core::mem::size_of::<Guard>(), 6);
        assert_eq!(core::mem::size_of::<Arm>(), 6);
    }

    /// A literal's number past the table's reads as empty markup, and a
    /// JSON state's marker so too, rather than panicking.
    #[test]
    fn literals_out_of_range_read_empty() {
        static STATES: [State; 1] = [State::Json { content: false, marker: 7, open_end: NONE, next: 0 }];
        const LITERALS: [&str; 1] = ["<|\"|>"];
        assert_eq!(Fast::of(&STATES[0], &[], &LITERALS), Fast::Json { content: false, marker: "" });
        let marked = State::Json { content: true, marker: 0, open_end: NONE, next: 0 };
        assert_eq!(Fast::of(&marked, &[], &LITERALS), Fast::Json { content: true, marker: "<|\"|>" });
        let table = Table {
            states: &STATES,
            arms: &[],
            guards: &[],
            stops: &[],
            literals: &LITERALS,
            resumes: &[],
            entries: [0; 16],
            switches: &[],
            pack: &[],
            hold_limit: 0,
            full: 0,
        };
        assert_eq!((table.literal(0), table.literal(1), table.literal(u16::MAX)), ("<|\"|>", "", ""));
    }
}
