//! An incremental JSON value scanner with fixed-size state.
//!
//! Tool-call arguments arrive as JSON text, chunk by chunk. [`JsonScanner`]
//! finds where one JSON value ends, checks its syntax as it goes, and passes
//! its text on, converting Python literals (`True`, `False`, `None`,
//! `'single-quoted'` strings) to JSON when asked. It has the semantics of the
//! generator's reference scanner (`chat_parser_generator`'s `interp::json`),
//! but allocates nothing: the container stack is a 64-bit bit stack, and the
//! output is slices of the input plus short static strings.

use crate::escape;
use crate::block::{block_at, json_specials, BLOCK};

/// Whether `text` is exactly one JSON value, with optional whitespace
/// around it (strict JSON, no Python literals).
///
/// # Example
/// ```
/// use chat_parser_runtime::json::is_json_value;
/// assert!(is_json_value(" [1, {\"a\": null}]\n"));
/// assert!(!is_json_value("Paris"));
/// assert!(!is_json_value("1 2"));
/// ```
pub fn is_json_value(text: &str) -> bool {
    let mut scanner = JsonScanner::new(false, false);
    let (n, scan) = scanner.scan(text, true, &mut |_: &str| {});
    scan == Scan::Done && text.as_bytes()[n..].iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Where the scanned value stands after a call to [`JsonScanner::scan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The value is complete; the consumed length ends right after it.
    Done,
    /// The text ended inside the value (all of it was consumed).
    NeedMore,
    /// Not JSON: the byte at the consumed position is the first bad one (or,
    /// when `last` was set, the text ended too early).
    Invalid,
}

/// [`Str::quote`] of a string between string markers (no JSON quote byte
/// is zero).
const MARKED: u8 = 0;

/// [`Str::quote`] of a marked string the model opened without its marker
/// (Gemma 4's `{query:weather in Tokyo<|"|>}`): read as a marked string,
/// except that a `}` ends it too (a bare value, both markers left out:
/// `{city:Paris}`), and so does a `,` before the next bare key and its `:`
/// (`{city:Paris,days:3}`); any other `,` is text (`{city:Paris,
/// France<|"|>}`). (A quote value of its own, so that the streaming fast
/// path's test for a marked string stays one comparison.)
const UNOPENED: u8 = 1;

/// [`Str::quote`] of a value in Python's quotes in the marked dialect
/// (Gemma 4 writes `{path:'a.py'}` or `save_as='report.docx'` at times:
/// ollama #17882, #15315): raw text, as a marked string's, up to a `'`
/// that ends it ([`quote_ends`]) or the string marker.
const QUOTED: u8 = 2;

/// What a `'` inside a value in Python quotes ([`QUOTED`]) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuoteEnd {
    /// The value's closing quote, with the string marker right after it
    /// when there is one (`'…'<|"|>`, a Gemma marker left dangling:
    /// ollama #15315): this many bytes, dropped.
    Close(usize),
    /// The value's own (`'don't'`).
    Text,
    /// The text ends before that shows.
    Wait,
}

/// Whether the `'` right before `bytes[at]` ends a value in Python quotes:
/// it does before `,`, `}` or `]` (what ends a value; whitespace between
/// them is read as the whitespace between tokens), before the string
/// marker `mark` (dropped with it), before other markup (`<`: the call's
/// end where the model left the object's `}` out, `'Paris'<tool_call|>`,
/// which the parsers close), and at the output's end. Whitespace longer
/// than [`BARE_KEY_MAX`] makes it text (what the scanner holds back stays
/// bounded).
fn quote_ends(bytes: &[u8], at: usize, mark: &[u8], last: bool) -> QuoteEnd {
    let rest = bytes.get(at..).unwrap_or(&[]);
    let space = rest.iter().take(BARE_KEY_MAX + 1).take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count();
    if space > BARE_KEY_MAX {
        return QuoteEnd::Text;
    }
    match rest[space..].first() {
        None if last => QuoteEnd::Close(1),
        None => QuoteEnd::Wait,
        Some(b',' | b'}' | b']') => QuoteEnd::Close(1),
        Some(_) if space > 0 => QuoteEnd::Text,
        Some(_) if !mark.is_empty() && rest.starts_with(mark) => QuoteEnd::Close(1 + mark.len()),
        Some(_) if !last && mark.starts_with(rest) => QuoteEnd::Wait,
        Some(b'<') => QuoteEnd::Close(1),
        Some(_) => QuoteEnd::Text,
    }
}

/// The longest bare key [`key_follows`] waits for: what it holds back must
/// stay well under a parser's hold limit.
const BARE_KEY_MAX: usize = 32;

/// Whether a bare key and its `:` start at `bytes[at]` (after a `,` in a
/// string opened without its marker: the bare value before it ended);
/// `None` while the text ends before that shows.
fn key_follows(bytes: &[u8], at: usize) -> Option<bool> {
    let key = bytes.get(at..).unwrap_or(&[]).iter().take(BARE_KEY_MAX + 1).take_while(|&&b| bare_key_byte(b)).count();
    match bytes.get(at + key) {
        Some(&b':') => Some(key > 0),
        Some(_) => Some(false),
        None if key > BARE_KEY_MAX => Some(false),
        None => None,
    }
}

/// What a value that starts like a number or a constant is, in the marked
/// dialect ([`word_is_bare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bare {
    /// A JSON number or constant, as written.
    Value,
    /// A bare string (both markers left out) that starts like one.
    Text,
    /// The text ends before it shows.
    Wait,
}

/// Whether the word at `bytes[at]` (a value that starts like a number or a
/// constant, in the marked dialect) is a JSON number or constant, or a bare
/// string: a number or constant is whole and followed by what ends a value
/// (`,`, `}`, `]`, after spaces). Anything else (`2024-05-01`, `new york`,
/// `3 apples`, `true story`, a value followed by the string marker
/// `mark`) is text; before other markup (`<`) it is read as written. A
/// word still unclear after [`BARE_KEY_MAX`] bytes, or at the output's
/// end, is read as written.
fn word_is_bare(bytes: &[u8], at: usize, mark: &[u8], last: bool) -> Bare {
    let rest = bytes.get(at..).unwrap_or(&[]);
    let word = rest.iter().take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'-')).count();
    let after = rest[word..].iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')).map(|p| word + p);
    let Some(next) = after else {
        return if last || rest.len() > BARE_KEY_MAX { Bare::Value } else { Bare::Wait };
    };
    if next > BARE_KEY_MAX {
        return Bare::Value;
    }
    let whole = matches!(&rest[..word], b"true" | b"false" | b"null") || is_json_number(&rest[..word]);
    let after = &rest[next..];
    if !whole || after.starts_with(mark) {
        Bare::Text
    } else if mark.starts_with(after) && !last {
        // (The string marker may be arriving: `42<|` of `42<|"|>`.)
        Bare::Wait
    } else if matches!(after[0], b',' | b'}' | b']' | b'<') {
        // (Markup after it, as where the object's `}` is missing before
        // the call's closer, reads it as written.)
        Bare::Value
    } else {
        Bare::Text
    }
}

/// Whether `s` is a whole JSON number (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`).
fn is_json_number(s: &[u8]) -> bool {
    let digits = |s: &[u8], from: usize| from + s.get(from..).unwrap_or(&[]).iter().take_while(|b| b.is_ascii_digit()).count();
    let mut i = usize::from(s.first() == Some(&b'-'));
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(s, i),
        _ => return false,
    }
    if s.get(i) == Some(&b'.') {
        let end = digits(s, i + 1);
        if end == i + 1 {
            return false;
        }
        i = end;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(s, i);
        if end == i {
            return false;
        }
        i = end;
    }
    i == s.len()
}

/// Whether `b` may be part of a bare object key in the marked dialect:
/// ASCII letters and digits, `_ - . $`, and any non-ASCII character.
#[inline]
pub(crate) fn bare_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'$') || b >= 0x80
}

/// Whether `b` cannot stand raw in a JSON string (what
/// [`escape::escape_of`] escapes), as one inline test for the copy loop.
#[inline(always)]
fn needs_escape(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// The end of the run of a JSON (double-quoted) string's content from
/// `i` that is copied unchanged: characters a JSON string holds raw, and
/// complete escapes (`\n`, `\"`, `\\`, `\u00e9` …). Stops at the closing
/// quote, a control character, a backslash whose escape the text cuts off
/// or that JSON does not have, or the end of `bytes`; the scanner's byte
/// loop takes it from there. Reads 32 bytes at a time (two blocks of
/// [`crate::block`]), then 16, then one, so a long argument with an
/// escape every few bytes (source code, Windows paths) is one run, not one
/// scanner step per escape.
///
/// ```text
/// "C:\\dev\\a.py", "line": 3}   →  the run ends before the quote after `py`
/// ```
#[inline]
fn plain_run(bytes: &[u8], mut i: usize) -> usize {
    // Two blocks at a time while 32 bytes are left: a window without
    // specials is one test. Then one block, then byte by byte.
    while let Some(window) = bytes.get(i..i + WINDOW).and_then(|w| <&[u8; WINDOW]>::try_from(w).ok()) {
        let (Some(b0), Some(b1)) = (window.first_chunk::<BLOCK>(), window.last_chunk::<BLOCK>()) else { break };
        match past_specials(bytes, i, window, json_specials(b0) | json_specials(b1) << BLOCK) {
            Ok(next) => i = next,
            Err(end) => return end,
        }
    }
    while let Some(b) = block_at(bytes, i) {
        match past_specials(bytes, i, b, json_specials(b)) {
            Ok(next) => i = next,
            Err(end) => return end,
        }
    }
    loop {
        while i < bytes.len() && !needs_escape(bytes[i]) {
            i += 1;
        }
        match escape_len(bytes, i) {
            Some(n) => i += n,
            None => return i,
        }
    }
}

/// Reads the `N` bytes at `i` (`window`, whose special bytes are the bits
/// of `specials`) past their escapes: `Ok` with where reading goes on
/// (after the window, or after an escape that ends beyond it), `Err` with
/// where the run ends. A backslash with a two-byte escape after it (`\n`,
/// `\"`, `\\`: what source code is dense in) is stepped over with one
/// table lookup; anything else goes to [`escape_len`].
#[inline(always)]
fn past_specials<const N: usize>(bytes: &[u8], i: usize, window: &[u8; N], mut specials: u32) -> Result<usize, usize> {
    while specials != 0 {
        let lane = specials.trailing_zeros() as usize & (N - 1);
        // (The masks only spare bounds checks: `lane + 1` is in the
        // window here.)
        if lane + 1 < N && window[lane] == b'\\' && SHORT_ESCAPE[usize::from(window[(lane + 1) & (N - 1)])] {
            // Both bytes of the escape done (shifted twice: the count may
            // reach 32).
            specials &= (u32::MAX << lane) << 2;
            continue;
        }
        // A quote or control character, `\u`, a backslash whose escape
        // is in the next window, or one that is no escape.
        let at = i + lane;
        return match escape_len(bytes, at) {
            Some(n) => Ok(at + n),
            None => Err(at),
        };
    }
    Ok(i + N)
}

/// The bytes that make a two-byte JSON escape after a backslash (`\n`,
/// `\"`...; `\u` takes four hex digits more). One table for
/// [`escape_len`], [`plain_run`] and the streaming fast path's check of a
/// chunk inside a string.
pub(crate) const SHORT_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = matches!(b as u8, b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't');
        b += 1;
    }
    table
};

/// Two blocks: what [`plain_run`] reads at once, as 32-bit masks.
const WINDOW: usize = 2 * BLOCK;

/// The length of the complete JSON escape at `at` (`\n`: 2, `\u00e9`: 6);
/// `None` when `at` holds no backslash, or one whose escape is cut off or
/// not JSON.
#[inline(always)]
fn escape_len(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'\\') {
        return None;
    }
    match bytes.get(at + 1)? {
        &b if SHORT_ESCAPE[usize::from(b)] => Some(2),
        b'u' if bytes.get(at + 2..at + 6)?.iter().all(u8::is_ascii_hexdigit) => Some(6),
        _ => None,
    }
}

/// Where the raw text of a marked string from `i` ends: the first
/// `marker` in `bytes[i..]`, or the start of an end of `bytes` that may
/// begin one (held until the next chunk decides), whichever comes first.
///
/// A short text (a streamed chunk) searches the marker's first byte and
/// tests the marker where it stands, paying no searcher setup; a long one
/// searches the marker itself, not stopping at each first byte (the `<`s
/// of source code).
#[inline]
fn marked_run_end(bytes: &[u8], i: usize, marker: &[u8]) -> usize {
    let Some(&first) = marker.first() else { return i };
    if bytes.len() - i >= LONG_MARKED {
        // A long text (one-shot): one substring search.
        let rest = &bytes[i..];
        return match memchr::memmem::find(rest, marker) {
            Some(k) => i + k,
            None => bytes.len() - crate::holdback::partial_suffix_len(rest, &[marker]),
        };
    }
    let mut at = i;
    while let Some(k) = bytes.get(at..).and_then(|rest| memchr::memchr(first, rest)) {
        let start = at + k;
        let here = &bytes[start..];
        // The marker, or its start cut off by the text's end.
        if here.starts_with(marker) || marker.starts_with(here) {
            return start;
        }
        at = start + 1;
    }
    bytes.len()
}

/// From this many bytes on, [`marked_run_end`] runs a substring search.
const LONG_MARKED: usize = 256;

/// How many bytes `a` and `b` share at their start.
#[inline]
fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The deepest nesting of objects and arrays accepted.
pub const MAX_DEPTH: u8 = 48;

/// What may come next between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (the top level, after `:`, after `,` in an array).
    Value,
    /// A value or `]` (right after `[`).
    ValueOrClose,
    /// A key or `}` (right after `{`).
    KeyOrClose,
    /// A key (after `,` in an object).
    Key,
    /// `:` after a key.
    Colon,
    /// `,` or the container's close.
    CommaOrClose,
    /// Nothing: the value is complete.
    Done,
}

/// The token being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// Between tokens.
    None,
    Str(Str),
    /// Inside the opening string marker of the marked dialect, `at` bytes
    /// of it read (it was cut by the end of a chunk).
    Opening {
        at: u8,
        key: bool,
    },
    /// Inside a bare object key (the marked dialect).
    BareKey,
    /// Inside a number, at this point of its syntax.
    Number(Num),
    /// Inside a literal word, `at` letters in.
    Word {
        word: Word,
        at: u8,
    },
}

/// Inside a string.
///
/// (`repr(C)`, `quote` and `hex` first: the streaming fast path's test
/// for a plain JSON string, `quote == b'"' && hex == 0`, reads two
/// adjacent bytes, which the compiler merges into one comparison: about
/// 0.7% of the instructions of streaming JSON arguments.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
struct Str {
    /// `"`, `'` for a Python string, [`MARKED`] for a string between
    /// string markers, or [`UNOPENED`] for one without its opening marker.
    quote: u8,
    /// Hex digits of a `\u` escape still to come.
    hex: u8,
    /// A backslash was read.
    escape: bool,
    /// Bytes of the closing string marker read at the end of the last
    /// chunk, not reported yet (a marked string).
    held: u8,
    /// The string is an object key.
    key: bool,
}

impl Str {
    fn new(quote: u8, key: bool) -> Str {
        Str {
            quote,
            held: 0,
            escape: false,
            hex: 0,
            key,
        }
    }

    /// A string of the marked dialect: between the dialect's markers,
    /// opened without its marker ([`UNOPENED`]) or in Python's quotes
    /// ([`QUOTED`]); each ends at the marker.
    #[inline(always)]
    fn marked(&self) -> bool {
        self.quote <= QUOTED
    }

    /// Bytes that end a run of characters copied unchanged.
    #[inline]
    fn is_special(&self, b: u8) -> bool {
        b == self.quote || b == b'\\' || b < 0x20 || (b == b'"' && self.quote == b'\'')
    }
}

/// Where a number stands: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    #[inline]
    fn next(self, b: u8) -> Option<Num> {
        use Num::*;
        Some(match (self, b) {
            (Minus, b'0') => Zero,
            (Minus, b'1'..=b'9') => Int,
            (Int, b'0'..=b'9') => Int,
            (Zero | Int, b'.') => Dot,
            (Dot | Frac, b'0'..=b'9') => Frac,
            (Zero | Int | Frac, b'e' | b'E') => Exp,
            (Exp, b'+' | b'-') => ExpSign,
            (Exp | ExpSign | ExpDigits, b'0'..=b'9') => ExpDigits,
            _ => return None,
        })
    }

    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

/// A literal word: JSON's, or Python's (reported as JSON's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    True,
    False,
    Null,
    PyTrue,
    PyFalse,
    PyNone,
}

impl Word {
    /// How the word is spelled in the input.
    fn spelling(self) -> &'static [u8] {
        match self {
            Word::True => b"true",
            Word::False => b"false",
            Word::Null => b"null",
            Word::PyTrue => b"True",
            Word::PyFalse => b"False",
            Word::PyNone => b"None",
        }
    }

    /// The JSON word, or `None` when the input spelling is it. A Python word
    /// has the length of its JSON word, so it maps letter by letter.
    fn json(self) -> Option<&'static str> {
        match self {
            Word::PyTrue => Some("true"),
            Word::PyFalse => Some("false"),
            Word::PyNone => Some("null"),
            _ => None,
        }
    }
}

/// Scans one JSON value incrementally, with fixed-size state.
///
/// Syntax is strict JSON (RFC 8259 numbers, escapes, no trailing commas);
/// whitespace is space, tab, newline and carriage return. In Python mode it
/// also accepts `True`, `False`, `None` and single-quoted strings (with `\'`
/// for a quote), and reports them as JSON: `true`, `false`, `null`, and a
/// double-quoted string with `"` and control characters escaped.
///
/// Guarantees: never allocates, never panics; at most [`MAX_DEPTH`] nested
/// containers (deeper input is [`Scan::Invalid`] at the opening bracket
/// that is one too many). The output of each call is the JSON text of what
/// that call consumed: the input itself as borrowed slices (as long as
/// possible), except where Python literals are converted, which is written
/// as short static strings. Output stops at an invalid byte; a number is
/// only known to be complete at the byte after it, which is not consumed.
///
/// # Example
/// ```
/// use chat_parser_runtime::json::{JsonScanner, Scan};
/// let mut scanner = JsonScanner::new(true, true);
/// let mut json = String::new();
/// let mut out = |piece: &str| json.push_str(piece);
/// assert_eq!(scanner.scan("{'ok': Tr", false, &mut out), (9, Scan::NeedMore));
/// assert_eq!(scanner.scan("ue, 'n': 1}</tool>", false, &mut out), (11, Scan::Done));
/// assert_eq!(json, r#"{"ok": true, "n": 1}"#);
/// ```
///
/// Arguments (`object_only`) may also be written as a JSON string that
/// holds the object, as OpenAI's API carries them and as templates that
/// print a message's `function|tojson` show them to the model
/// (`"arguments": "{\"city\": \"Paris\"}"`): the string is decoded as
/// it streams and the object in it is read and reported, so the call's
/// arguments are the object, not a string.
///
/// ```
/// use chat_parser_runtime::json::{JsonScanner, Scan};
/// let mut scanner = JsonScanner::new(false, true);
/// let mut json = String::new();
/// let mut out = |piece: &str| json.push_str(piece);
/// assert_eq!(scanner.scan(r#""{\"a\": \"x\\ny"#, false, &mut out), (16, Scan::NeedMore));
/// assert_eq!(scanner.scan(r#"\"}"}"#, false, &mut out), (4, Scan::Done));
/// assert_eq!(json, r#"{"a": "x\ny"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonScanner {
    /// [`PYTHON`] and [`OBJECT_ONLY`] (bits, to keep the state small:
    /// generated parsers hold a scanner).
    syntax: u8,
    /// Bit `i` is set when the container at depth `i` is an object.
    objects: u64,
    depth: u8,
    expect: Expect,
    token: Token,
}

/// Where reading arguments written as a JSON string stands, in bits 2–4 of
/// [`JsonScanner::syntax`] (see [`JsonScanner::encoded`]): the other fields
/// then read the object the string holds, from its decoded text. (Bits of
/// fields the scanner has, so that it stays 16 bytes.)
const ENCODED_BITS: u8 = 0b111 << 2;
/// The arguments are not a string.
const ENCODED_OFF: u8 = 0;
/// Inside the string that holds the arguments.
const ENCODED_IN: u8 = 1;
/// Right after a backslash in it.
const ENCODED_ESCAPE: u8 = 2;
/// In a `\u` escape, `ENCODED_HEX + n` with `n` hex digits read (0–3).
const ENCODED_HEX: u8 = 3;
/// Where in [`JsonScanner::objects`] the code unit of the arguments'
/// string's `\u` escape is kept, as far as read: above the containers'
/// bits, which [`MAX_DEPTH`] keeps below it.
const CODE_SHIFT: u32 = 48;

/// [`Str::hex`] of a string of the object that arguments written as a
/// string hold, between calls: not a plain string to a fast path (which
/// would read the `\"` that ends it as an escape in it), at no cost to the
/// fast path's test.
const HIDDEN: u8 = 0xff;

/// [`JsonScanner::syntax`]: Python literals are accepted.
const PYTHON: u8 = 1;
/// [`JsonScanner::syntax`]: only an object is acceptable (a call's arguments).
const OBJECT_ONLY: u8 = 2;

/// Writes output: a run of input copied unchanged is reported in one piece
/// when it is interrupted (by a conversion) or when the call ends.
struct Writer<'t, F> {
    text: &'t str,
    /// Start of the run not reported yet.
    start: usize,
    out: &'t mut F,
}

impl<F: FnMut(&str)> Writer<'_, F> {
    /// Reports the run up to `end`, a character boundary.
    #[inline]
    fn flush(&mut self, end: usize) {
        if self.start < end {
            if let Some(run) = self.text.get(self.start..end) {
                (self.out)(run);
            }
        }
        self.start = end;
    }

    /// Reports nothing for the `len` bytes at `at`.
    fn skip(&mut self, at: usize, len: usize) {
        self.flush(at);
        self.start = at + len;
    }

    /// Reports `with` in place of the `len` bytes at `at`.
    fn replace(&mut self, at: usize, len: usize, with: &str) {
        self.flush(at);
        (self.out)(with);
        self.start = at + len;
    }
}

impl JsonScanner {
    /// A scanner at the start of a value. `python` also accepts Python
    /// literals; `object_only` accepts only an object (a call's arguments).
    pub const fn new(python: bool, object_only: bool) -> JsonScanner {
        JsonScanner {
            syntax: if python { PYTHON } else { 0 } | if object_only { OBJECT_ONLY } else { 0 },
            objects: 0,
            depth: 0,
            expect: Expect::Value,
            token: Token::None,
        }
    }

    /// Where reading arguments written as a string stands ([`ENCODED_OFF`]
    /// when they are not).
    #[inline]
    fn encoded(&self) -> u8 {
        (self.syntax & ENCODED_BITS) >> 2
    }

    #[inline]
    fn set_encoded(&mut self, phase: u8) {
        self.syntax = (self.syntax & !ENCODED_BITS) | phase << 2;
    }

    /// The code unit of the arguments' string's `\u` escape, as far as read.
    fn code(&self) -> u16 {
        (self.objects >> CODE_SHIFT) as u16
    }

    fn set_code(&mut self, code: u16) {
        self.objects = (self.objects & ((1 << CODE_SHIFT) - 1)) | u64::from(code) << CODE_SHIFT;
    }

    #[inline]
    fn python(&self) -> bool {
        self.syntax & PYTHON != 0
    }

    #[inline]
    fn object_only(&self) -> bool {
        self.syntax & OBJECT_ONLY != 0
    }

    #[inline]
    fn done(&self) -> bool {
        self.expect == Expect::Done
    }

    /// Whether the scanner is inside a double-quoted string, not in an
    /// escape: text without `"`, `\` and control characters is then copied
    /// unchanged and changes nothing (what streaming parsers' fast path
    /// relies on).
    #[inline]
    pub fn in_plain_string(&self) -> bool {
        matches!(self.token, Token::Str(s) if s.quote == b'"' && !s.escape && s.hex == 0)
    }

    /// Inside a string between markers (the marked dialect of
    /// [`JsonScanner::scan_marked`]): how many bytes of the closing marker
    /// the last chunk ended with, held and not reported yet. `None`
    /// anywhere else. With none held, text without the marker's first byte
    /// is reported JSON-escaped and changes nothing (what streaming
    /// parsers' fast path relies on).
    #[inline]
    pub fn marked_held(&self) -> Option<usize> {
        match self.token {
            // (Not one opened without its marker, `UNOPENED`: a `}` ends
            // that one, and the scanner looks for it.)
            Token::Str(s) if s.quote == MARKED => Some(usize::from(s.held)),
            _ => None,
        }
    }

    /// Inside a string between markers: sets how many bytes of the closing
    /// marker are held, as [`JsonScanner::scan_marked`] would have after
    /// the text a fast path reported (a chunk ending with the marker's
    /// start holds it; one that breaks off a held start makes it text).
    #[inline]
    pub fn set_marked_held(&mut self, held: usize) {
        if let Token::Str(s) = &mut self.token {
            s.held = held as u8;
        }
    }

    /// Inside a double-quoted string and not in a `\u` escape: whether a
    /// backslash was just read (`Some(true)`), or not (`Some(false)`).
    /// `None` anywhere else.
    #[doc(hidden)]
    #[inline]
    pub fn string_escape_state(&self) -> Option<bool> {
        match self.token {
            // (Not in arguments written as a string, whose strings have
            // `hex` set to `HIDDEN`: its `\"` ends a string of the object
            // it holds.)
            Token::Str(s) if s.quote == b'"' && s.hex == 0 => Some(s.escape),
            _ => None,
        }
    }

    /// Sets whether a backslash was just read inside the current string (a
    /// fast path that copied a run of string content ending in one).
    #[doc(hidden)]
    #[inline]
    pub fn set_string_escape(&mut self, escape: bool) {
        if let Token::Str(s) = &mut self.token {
            s.escape = escape;
        }
    }

    /// Inside arguments written as a JSON string: bytes it consumes belong to
    /// the value even where it reports nothing for them (the string's
    /// quotes, whitespace after the object in it), so a parser counts them
    /// as the value's text, whatever the chunking.
    #[inline]
    pub fn is_decoding(&self) -> bool {
        self.encoded() != ENCODED_OFF
    }

    /// Whether the value is complete.
    #[inline]
    pub fn is_done(&self) -> bool {
        self.done() && self.encoded() == ENCODED_OFF
    }

    /// Whether the value can be completed by closing what is open: the
    /// scanner stands after a complete value inside an object or array (a
    /// following `,` or closer was expected). Meaningful after
    /// [`Scan::Invalid`] too: the byte it stopped at then is what a model
    /// wrote in place of the closers (the call's end marker).
    #[inline]
    pub fn can_close(&self) -> bool {
        self.token == Token::None && self.expect == Expect::CommaOrClose && self.depth > 0 && self.encoded() == ENCODED_OFF
    }

    /// Completes the value where [`JsonScanner::can_close`] holds: writes
    /// the closer of every open container, innermost first, to `out`, and
    /// the value is done. Returns false (and writes nothing) elsewhere.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::json::{JsonScanner, Scan};
    /// let mut scanner = JsonScanner::new(false, true);
    /// let mut json = String::new();
    /// let text = "{\"a\": [1, 2<|tool_call_end|>";
    /// let (n, scan) = scanner.scan(text, false, &mut |p: &str| json.push_str(p));
    /// assert_eq!((&text[n..], scan), ("<|tool_call_end|>", Scan::Invalid));
    /// assert!(scanner.close_open(&mut |p: &str| json.push_str(p)));
    /// assert_eq!(json, "{\"a\": [1, 2]}");
    /// assert!(scanner.is_done());
    /// ```
    pub fn close_open(&mut self, out: &mut impl FnMut(&str)) -> bool {
        if !self.can_close() {
            return false;
        }
        while let Some(object) = self.top_is_object() {
            out(if object { "}" } else { "]" });
            self.depth -= 1;
        }
        self.expect = Expect::Done;
        true
    }

    /// Consumes as much of `text` as belongs to the value, writing its JSON
    /// text to `out`. Returns the number of bytes consumed and where the
    /// value stands. `last` says no more text will come (a number at the end
    /// is then complete). After [`Scan::Done`] further calls consume nothing
    /// and return `Done`; after [`Scan::Invalid`] the scanner should not be
    /// used again.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::json::{JsonScanner, Scan};
    /// let mut scanner = JsonScanner::new(false, false);
    /// let mut pieces = Vec::new();
    /// assert_eq!(scanner.scan("[1, 2", false, &mut |p: &str| pieces.push(p.to_string())), (5, Scan::NeedMore));
    /// assert_eq!(scanner.scan("", true, &mut |p: &str| pieces.push(p.to_string())), (0, Scan::Invalid));
    /// assert_eq!(pieces, ["[1, 2"]);
    /// ```
    pub fn scan(&mut self, text: &str, last: bool, out: &mut impl FnMut(&str)) -> (usize, Scan) {
        self.scan_marked(text, last, "", out)
    }

    /// [`JsonScanner::scan`] in the *marked dialect* when `marker` is not
    /// empty: the JSON-like object literals of Gemma 4's calls,
    /// `{city:<|"|>Paris<|"|>,days:3,tags:[<|"|>a<|"|>]}`. Besides JSON:
    /// - a string may be written between two `marker`s; what is between
    ///   them is raw text (no escapes), reported as a JSON string;
    /// - an object key may be bare: ASCII letters, digits, `_ - . $` and
    ///   any non-ASCII character, reported as a JSON string.
    ///
    /// Pass the same `marker` on every call for one value (the scanner
    /// keeps only how much of a cut marker it has read, not the marker).
    /// A marker is found where it first appears in a string; a marker that
    /// overlaps itself (`aab` in `aaab`) is not looked for inside a match
    /// that failed across a chunk's end.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::json::{JsonScanner, Scan};
    /// let mut scanner = JsonScanner::new(false, true);
    /// let mut json = String::new();
    /// let mut out = |piece: &str| json.push_str(piece);
    /// let q = "<|\"|>";
    /// assert_eq!(scanner.scan_marked("{say:<|\"|>a \"b\"<|", false, q, &mut out), (17, Scan::NeedMore));
    /// assert_eq!(scanner.scan_marked("\"|>,n:[1]}<tool_call|>", false, q, &mut out), (10, Scan::Done));
    /// assert_eq!(json, r#"{"say":"a \"b\"","n":[1]}"#);
    /// ```
    pub fn scan_marked(&mut self, text: &str, last: bool, marker: &str, out: &mut impl FnMut(&str)) -> (usize, Scan) {
        if self.encoded() != ENCODED_OFF {
            return self.scan_encoded(text, last, out);
        }
        if self.done() {
            return (0, Scan::Done);
        }
        let mut w = Writer {
            text,
            start: 0,
            out,
        };
        let (consumed, scan) = self.run(&mut w, last, marker);
        w.flush(consumed);
        if self.encoded() != ENCODED_OFF {
            // The arguments opened as a string (`run` stops after its quote).
            let (n, scan) = self.scan_encoded(text.get(consumed..).unwrap_or(""), last, w.out);
            return (consumed + n, scan);
        }
        (consumed, scan)
    }

    /// Reads arguments written as a JSON string, after its opening quote:
    /// decodes it, reading the decoded text as the object it holds, up to
    /// the closing quote. Runs between escapes are read where they are;
    /// each escape is read as the one character it stands for.
    fn scan_encoded(&mut self, text: &str, last: bool, out: &mut impl FnMut(&str)) -> (usize, Scan) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            match self.encoded() {
                ENCODED_IN => {
                    let end = memchr::memchr2(b'"', b'\\', &bytes[i..]).map_or(bytes.len(), |p| i + p);
                    if end > i {
                        // (Quotes and backslashes are ASCII: `i..end` is
                        // whole characters.)
                        if let Err(at) = self.read_decoded(text.get(i..end).unwrap_or(""), out) {
                            return (i + at, Scan::Invalid);
                        }
                    }
                    let Some(&b) = bytes.get(end) else { return (end, if last { Scan::Invalid } else { Scan::NeedMore }) };
                    if b == b'"' {
                        // The string ends: it must have held one whole object.
                        if !self.done() {
                            return (end, Scan::Invalid);
                        }
                        self.set_encoded(ENCODED_OFF);
                        return (end + 1, Scan::Done);
                    }
                    self.set_encoded(ENCODED_ESCAPE);
                    i = end + 1;
                }
                ENCODED_ESCAPE => {
                    let decoded = match escape::unescaped(bytes[i]) {
                        Some(decoded) => decoded,
                        None if bytes[i] == b'u' => {
                            self.set_encoded(ENCODED_HEX);
                            self.set_code(0);
                            i += 1;
                            continue;
                        }
                        None => return (i, Scan::Invalid),
                    };
                    self.set_encoded(ENCODED_IN);
                    if self.read_decoded(decoded, out).is_err() {
                        return (i, Scan::Invalid);
                    }
                    i += 1;
                }
                hex => {
                    let Some(digit) = (bytes[i] as char).to_digit(16) else { return (i, Scan::Invalid) };
                    self.set_code(self.code() << 4 | digit as u16);
                    i += 1;
                    if hex < ENCODED_HEX + 3 {
                        self.set_encoded(hex + 1);
                        continue;
                    }
                    // A character of the basic plane (a surrogate pair,
                    // which the object's text would rarely need escaped
                    // twice, is not read: the call breaks there).
                    let Some(c) = char::from_u32(u32::from(self.code())) else { return (i - 1, Scan::Invalid) };
                    let mut buf = [0u8; 4];
                    self.set_encoded(ENCODED_IN);
                    if self.read_decoded(c.encode_utf8(&mut buf), out).is_err() {
                        return (i - 1, Scan::Invalid);
                    }
                }
            }
        }
        (i, if last { Scan::Invalid } else { Scan::NeedMore })
    }

    /// Marks a string of the object in arguments written as a string as not
    /// plain ([`HIDDEN`]) between calls, or unmarks it for reading.
    fn hide_string(&mut self, hide: bool) {
        if let Token::Str(s) = &mut self.token {
            match (hide, s.hex) {
                (true, 0) => s.hex = HIDDEN,
                (false, HIDDEN) => s.hex = 0,
                _ => {}
            }
        }
    }

    /// Reads `piece` of the decoded text of arguments written as a string:
    /// the object's text, then only whitespace up to the string's end.
    /// `Err` with the offset in `piece` of the first byte that does not fit.
    fn read_decoded(&mut self, piece: &str, out: &mut impl FnMut(&str)) -> Result<(), usize> {
        let mut at = 0;
        if !self.done() {
            let mut w = Writer { text: piece, start: 0, out };
            self.hide_string(false);
            let (n, scan) = self.run(&mut w, false, "");
            self.hide_string(true);
            w.flush(n);
            if scan == Scan::Invalid {
                return Err(n);
            }
            at = n;
        }
        match piece.as_bytes()[at..].iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            Some(p) => Err(at + p),
            None => Ok(()),
        }
    }

    /// Reads a string's opening `marker`, from its byte `from` on, at
    /// `at`: the position to go on from when it is complete (the string
    /// starts) or cut by the chunk's end (its bytes are held), or `Err` with
    /// where the broken marker ends (the bytes read in this text are
    /// reported as written, and count as consumed).
    fn open_marked<F: FnMut(&str)>(&mut self, w: &mut Writer<'_, F>, at: usize, marker: &[u8], from: usize, key: bool) -> Result<usize, usize> {
        let bytes = w.text.as_bytes();
        let want = marker.get(from..).unwrap_or(&[]);
        let m = shared_prefix(want, &bytes[at..]);
        if m == want.len() {
            w.replace(at, m, "\"");
            self.token = Token::Str(Str::new(MARKED, key));
        } else if at + m == bytes.len() {
            w.skip(at, m);
            self.token = Token::Opening { at: (from + m) as u8, key };
        } else {
            return Err(at + m);
        }
        Ok(at + m)
    }

    /// Reads a marked string's closing marker, from its byte `from` on, at
    /// `at`: where to go on when it is complete (the string ends) or cut by
    /// the chunk's end (its bytes are held); `None` when it breaks off (its
    /// bytes are text).
    fn close_marked<F: FnMut(&str)>(&mut self, w: &mut Writer<'_, F>, at: usize, marker: &[u8], from: usize, mut s: Str) -> Option<usize> {
        let bytes = w.text.as_bytes();
        let want = marker.get(from..).unwrap_or(&[]);
        let m = shared_prefix(want, &bytes[at..]);
        if m == want.len() {
            w.replace(at, m, "\"");
            self.token = Token::None;
            self.after_value(s.key);
        } else if at + m == bytes.len() {
            w.skip(at, m);
            s.held = (from + m) as u8;
            self.token = Token::Str(s);
        } else {
            return None;
        }
        Some(at + m)
    }

    fn run<F: FnMut(&str)>(&mut self, w: &mut Writer<'_, F>, last: bool, marker: &str) -> (usize, Scan) {
        let bytes = w.text.as_bytes();
        let mark = marker.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.token {
                Token::Str(mut s) if s.marked() => {
                    if s.held > 0 {
                        // The closing marker was cut by the last chunk's end.
                        let k = usize::from(s.held);
                        if let Some(next) = self.close_marked(w, i, mark, k, s) {
                            i = next;
                            if self.done() {
                                return (i, Scan::Done);
                            }
                            continue;
                        }
                        // Not the marker after all: what was held is text.
                        // (It ended a chunk, so it ends on a character.)
                        w.flush(i);
                        escape::json_escape(marker.get(..k).unwrap_or(""), w.out);
                        s.held = 0;
                        // Stored at once: a bare value's `,` goes on with
                        // `continue` from the token, which must not hold the
                        // bytes just reported (they came out twice).
                        self.token = Token::Str(s);
                    }
                    // Raw text up to the closing marker (or what may start
                    // it at the text's end) is escaped at once, so neither
                    // the escapes in source code nor its `<`s break it into
                    // pieces; the byte loop takes the marker from there.
                    let first = mark.first().copied().unwrap_or(b'"');
                    let mut end = if first.is_ascii() { marked_run_end(bytes, i, mark) } else { i };
                    let unopened = s.quote == UNOPENED;
                    let quoted = s.quote == QUOTED;
                    if unopened {
                        end = memchr::memchr2(b'}', b',', &bytes[i..end]).map_or(end, |p| i + p);
                    } else if quoted {
                        end = memchr::memchr(b'\'', &bytes[i..end]).map_or(end, |p| i + p);
                    }
                    if end > i {
                        if let Some(run) = w.text.get(i..end) {
                            w.flush(i);
                            escape::json_escape(run, w.out);
                            w.start = end;
                            i = end;
                        }
                    }
                    while i < bytes.len()
                        && bytes[i] != first
                        && !needs_escape(bytes[i])
                        && !(unopened && matches!(bytes[i], b'}' | b','))
                        && !(quoted && bytes[i] == b'\'')
                    {
                        i += 1;
                    }
                    let Some(&b) = bytes.get(i) else {
                        self.token = Token::Str(s);
                        break;
                    };
                    // A bare value: the model left out both markers
                    // (`{city:Paris}`, ollama #15315; vLLM's Gemma 4 parser
                    // reads it to the `}` as a string). The object's end
                    // ends it, or the next key (`{city:Paris,days:3}`); the
                    // `}` or `,` is read again. Any other `,` is text
                    // (`{city:Paris, France<|"|>}`).
                    if unopened && matches!(b, b'}' | b',') {
                        let ends = if b == b'}' { Some(true) } else { key_follows(bytes, i + 1) };
                        match ends {
                            Some(true) => {
                                w.replace(i, 0, "\"");
                                self.token = Token::None;
                                self.after_value(s.key);
                            }
                            // Not known yet: the comma waits for more text.
                            None if !last => {
                                self.token = Token::Str(s);
                                return (i, Scan::NeedMore);
                            }
                            _ => i += 1,
                        }
                        continue;
                    }
                    if quoted && b == b'\'' {
                        match quote_ends(bytes, i + 1, mark, last) {
                            QuoteEnd::Close(len) => {
                                w.replace(i, len, "\"");
                                self.token = Token::None;
                                self.after_value(s.key);
                                i += len;
                                if self.done() {
                                    return (i, Scan::Done);
                                }
                            }
                            QuoteEnd::Wait => {
                                self.token = Token::Str(s);
                                return (i, Scan::NeedMore);
                            }
                            // (A `'` needs no escape in JSON.)
                            QuoteEnd::Text => {
                                self.token = Token::Str(s);
                                i += 1;
                            }
                        }
                        continue;
                    }
                    if b == first {
                        if let Some(next) = self.close_marked(w, i, mark, 0, s) {
                            i = next;
                            if self.done() {
                                return (i, Scan::Done);
                            }
                            continue;
                        }
                    }
                    if let Some(e) = escape::escape_of(b) {
                        w.replace(i, 1, e);
                    }
                    self.token = Token::Str(s);
                    i += 1;
                    continue;
                }
                Token::Opening { at, key } => {
                    // The opening marker was cut by the last chunk's end.
                    let at = usize::from(at);
                    match self.open_marked(w, i, mark, at, key) {
                        Ok(next) => i = next,
                        Err(end) => {
                            // A broken marker: the held bytes are reported
                            // as written, then the rest of it.
                            w.flush(i);
                            (w.out)(marker.get(..at).unwrap_or(""));
                            return (end, Scan::Invalid);
                        }
                    }
                    continue;
                }
                Token::BareKey => {
                    while i < bytes.len() && bare_key_byte(bytes[i]) {
                        i += 1;
                    }
                    if i == bytes.len() {
                        break;
                    }
                    // The key ends before this byte, which is read again.
                    w.replace(i, 0, "\"");
                    self.token = Token::None;
                    self.after_value(true);
                    continue;
                }
                Token::Str(mut s) => {
                    if s.hex > 0 {
                        if !b.is_ascii_hexdigit() {
                            return (i, Scan::Invalid);
                        }
                        s.hex -= 1;
                    } else if s.escape {
                        // A Python string's backslash was held back: `\'`
                        // becomes `'`, other escapes are the same in JSON.
                        let python = s.quote == b'\'';
                        match b {
                            b'\'' if python => {}
                            b'u' | b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                                if python {
                                    w.replace(i, 0, "\\");
                                }
                                if b == b'u' {
                                    s.hex = 4;
                                }
                            }
                            _ => {
                                // The held backslash is reported after all,
                                // as a JSON string's is: the text after a
                                // break starts where the scanner stopped, so
                                // the same bytes are reported whether or not
                                // a chunk ended after the backslash.
                                if python {
                                    w.replace(i, 0, "\\");
                                }
                                return (i, Scan::Invalid);
                            }
                        }
                        s.escape = false;
                    } else {
                        // Copy the run of ordinary characters (non-ASCII
                        // bytes included) at once; in a JSON string, with
                        // its complete escapes (copied unchanged too).
                        if s.quote == b'"' {
                            i = plain_run(bytes, i);
                        }
                        while i < bytes.len() && !s.is_special(bytes[i]) {
                            i += 1;
                        }
                        let Some(&b) = bytes.get(i) else { break };
                        if b == b'\\' {
                            // Reported at once (never lost if what follows is
                            // bad), except in Python strings where `\'`
                            // becomes `'`.
                            if s.quote == b'\'' {
                                w.skip(i, 1);
                            }
                            s.escape = true;
                        } else if b == s.quote {
                            if s.quote == b'\'' {
                                w.replace(i, 1, "\"");
                            }
                            self.token = Token::None;
                            self.after_value(s.key);
                            i += 1;
                            if self.done() {
                                return (i, Scan::Done);
                            }
                            continue;
                        } else if b == b'"' {
                            // A double quote inside a single-quoted string.
                            w.replace(i, 1, "\\\"");
                        } else if s.quote == b'\'' {
                            // A raw control character: Python allows it.
                            w.replace(i, 1, escape::escape_of(b).unwrap_or(""));
                        } else {
                            return (i, Scan::Invalid);
                        }
                    }
                    self.token = Token::Str(s);
                    i += 1;
                    continue;
                }
                Token::Number(state) => {
                    if let Some(next) = state.next(b) {
                        self.token = Token::Number(next);
                        i += 1;
                        continue;
                    }
                    if !state.complete()
                        || b.is_ascii_digit()
                        || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')
                    {
                        return (i, Scan::Invalid);
                    }
                    self.token = Token::None;
                    self.after_value(false);
                    if self.done() {
                        return (i, Scan::Done);
                    }
                    continue;
                }
                Token::Word { word, at } => {
                    let spelling = word.spelling();
                    if spelling.get(at as usize) != Some(&b) {
                        return (i, Scan::Invalid);
                    }
                    if let Some(json) = word.json() {
                        let at = at as usize;
                        w.replace(i, 1, json.get(at..at + 1).unwrap_or(""));
                    }
                    i += 1;
                    if at as usize + 1 == spelling.len() {
                        self.token = Token::None;
                        self.after_value(false);
                        if self.done() {
                            return (i, Scan::Done);
                        }
                    } else {
                        self.token = Token::Word { word, at: at + 1 };
                    }
                    continue;
                }
                Token::None => {}
            }
            // Between tokens.
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
                continue;
            }
            match self.expect {
                Expect::Value | Expect::ValueOrClose => {
                    if b == b']' && self.expect == Expect::ValueOrClose {
                        self.close();
                    } else if mark.first() == Some(&b) && !(self.object_only() && self.depth == 0) {
                        match self.open_marked(w, i, mark, 0, false) {
                            Ok(next) => i = next,
                            Err(end) => return (end, Scan::Invalid),
                        }
                        continue;
                    } else if b == b'\'' && !mark.is_empty() && !self.top_of_object_only() {
                        // A value in Python's quotes (`QUOTED`).
                        w.replace(i, 1, "\"");
                        self.token = Token::Str(Str::new(QUOTED, false));
                        i += 1;
                        continue;
                    } else if let Some(bare) = (!mark.is_empty() && !self.top_of_object_only() && matches!(b, b'-' | b'0'..=b'9' | b't' | b'f' | b'n'))
                        .then(|| word_is_bare(bytes, i, mark, last))
                        .filter(|&bare| bare != Bare::Value)
                    {
                        // A bare value that starts like a number or a
                        // constant (`{date:2024-05-01}`, `{city:new
                        // york}`): a string, as other bare values are.
                        // Waits while the text ends before that shows.
                        if bare == Bare::Wait {
                            return (i, Scan::NeedMore);
                        }
                        w.replace(i, 0, "\"");
                        self.token = Token::Str(Str::new(UNOPENED, false));
                        continue;
                    } else if !self.start_value(b, i, w) {
                        // A marked string whose opening marker the model
                        // left out (Gemma 4: `{query:weather in Tokyo<|"|>}`):
                        // text where no value starts runs to the closing
                        // marker. Punctuation that ends or separates values
                        // is still broken markup.
                        let top_of_object_only = self.top_of_object_only();
                        if top_of_object_only && b == b'"' && mark.is_empty() && self.encoded() == ENCODED_OFF {
                            // Arguments written as a JSON string: read by
                            // `scan_encoded` from the byte after the quote.
                            w.skip(i, 1);
                            self.set_encoded(ENCODED_IN);
                            return (i + 1, Scan::NeedMore);
                        }
                        if mark.is_empty() || top_of_object_only || matches!(b, b',' | b'}' | b']' | b':' | b'{' | b'[' | b'"' | b'\'') {
                            return (i, Scan::Invalid);
                        }
                        w.replace(i, 0, "\"");
                        self.token = Token::Str(Str::new(UNOPENED, false));
                        continue;
                    }
                }
                Expect::KeyOrClose | Expect::Key => {
                    if b == b'}' && self.expect == Expect::KeyOrClose {
                        self.close();
                    } else if mark.first() == Some(&b) {
                        match self.open_marked(w, i, mark, 0, true) {
                            Ok(next) => i = next,
                            Err(end) => return (end, Scan::Invalid),
                        }
                        continue;
                    } else if !mark.is_empty() && bare_key_byte(b) {
                        w.replace(i, 0, "\"");
                        self.token = Token::BareKey;
                        i += 1;
                        continue;
                    } else if b == b'"' || (self.python() && b == b'\'') {
                        if b == b'\'' {
                            w.replace(i, 1, "\"");
                        }
                        self.token = Token::Str(Str::new(b, true));
                    } else {
                        return (i, Scan::Invalid);
                    }
                }
                Expect::Colon => {
                    if b == b'=' && !mark.is_empty() {
                        // A key written as a Python keyword argument
                        // (Gemma 4's `save_as='report.docx'`, ollama
                        // #17882): `=` for `:`.
                        w.replace(i, 1, ":");
                    } else if b != b':' {
                        return (i, Scan::Invalid);
                    }
                    self.expect = Expect::Value;
                }
                Expect::CommaOrClose => match (b, self.top_is_object()) {
                    (b',', Some(true)) => self.expect = Expect::Key,
                    (b',', Some(false)) => self.expect = Expect::Value,
                    (b'}', Some(true)) | (b']', Some(false)) => self.close(),
                    _ => return (i, Scan::Invalid),
                },
                // Not reached: a complete value returns at once.
                Expect::Done => return (i, Scan::Done),
            }
            i += 1;
            if self.done() {
                return (i, Scan::Done);
            }
        }
        // The text ran out.
        if last && matches!(self.token, Token::Number(n) if n.complete()) && self.depth == 0 {
            self.token = Token::None;
            self.expect = Expect::Done;
            return (i, Scan::Done);
        }
        if last {
            match self.token {
                Token::Str(s) if s.escape && s.quote == b'\'' => w.replace(i, 0, "\\"),
                // Held marker bytes are reported: the text is over.
                Token::Str(s) if s.marked() && s.held > 0 => {
                    w.flush(i);
                    escape::json_escape(marker.get(..usize::from(s.held)).unwrap_or(""), w.out);
                }
                Token::Opening { at, .. } => {
                    w.flush(i);
                    (w.out)(marker.get(..usize::from(at)).unwrap_or(""));
                }
                _ => {}
            }
            return (i, Scan::Invalid);
        }
        (i, Scan::NeedMore)
    }

    /// Starts the value whose first byte `b` is at `at`; false if no value
    /// starts so (or it would nest too deep).
    /// At the top of arguments that must be one object (where only `{`
    /// starts a value).
    fn top_of_object_only(&self) -> bool {
        self.object_only() && self.depth == 0
    }

    fn start_value<F: FnMut(&str)>(&mut self, b: u8, at: usize, w: &mut Writer<'_, F>) -> bool {
        if self.object_only() && self.depth == 0 && b != b'{' {
            return false;
        }
        let word = match b {
            b'{' | b'[' => {
                if self.depth == MAX_DEPTH {
                    return false;
                }
                let object = b == b'{';
                self.objects =
                    (self.objects & !(1 << self.depth)) | ((object as u64) << self.depth);
                self.depth += 1;
                self.expect = if object {
                    Expect::KeyOrClose
                } else {
                    Expect::ValueOrClose
                };
                return true;
            }
            b'"' => {
                self.token = Token::Str(Str::new(b'"', false));
                return true;
            }
            b'\'' if self.python() => {
                w.replace(at, 1, "\"");
                self.token = Token::Str(Str::new(b'\'', false));
                return true;
            }
            b'-' => {
                self.token = Token::Number(Num::Minus);
                return true;
            }
            b'0' => {
                self.token = Token::Number(Num::Zero);
                return true;
            }
            b'1'..=b'9' => {
                self.token = Token::Number(Num::Int);
                return true;
            }
            b't' => Word::True,
            b'f' => Word::False,
            b'n' => Word::Null,
            b'T' if self.python() => Word::PyTrue,
            b'F' if self.python() => Word::PyFalse,
            b'N' if self.python() => Word::PyNone,
            _ => return false,
        };
        if let Some(json) = word.json() {
            w.replace(at, 1, json.get(..1).unwrap_or(""));
        }
        self.token = Token::Word { word, at: 1 };
        true
    }

    /// Whether the innermost container is an object (`None` at the top).
    fn top_is_object(&self) -> Option<bool> {
        let top = self.depth.checked_sub(1)?;
        Some(self.objects >> top & 1 == 1)
    }

    fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        self.after_value(false);
    }

    fn after_value(&mut self, was_key: bool) {
        if was_key {
            self.expect = Expect::Colon;
        } else if self.depth == 0 {
            self.expect = Expect::Done;
        } else {
            self.expect = Expect::CommaOrClose;
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;
    use std::vec::Vec;
    use std::{format, vec};

    /// `plain_run` one byte and one escape at a time: what the block
    /// reader must agree with.
    fn plain_run_bytewise(bytes: &[u8], mut i: usize) -> usize {
        loop {
            while i < bytes.len() && !needs_escape(bytes[i]) {
                i += 1;
            }
            match escape_len(bytes, i) {
                Some(n) => i += n,
                None => return i,
            }
        }
    }

    /// The run's end found a window at a time is the one found a byte at a
    /// time, on texts dense in backslashes (runs of every length, across
    /// window edges), quotes, `\u` escapes whole and cut, and bytes no
    /// escape allows.
    #[test]
    fn plain_run_agrees_with_the_bytewise_reader() {
        let alphabet: [&[u8]; 14] = [b"\\", b"\\\\", b"\"", b"\\n", b"\\u00e9", b"\\u00", b"\\x", b"ab", b"/", b"n", b"\n", b"\x01", "é".as_bytes(), b"0123456789abcdef"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..200_000 {
            crate::xorshift(&mut state);
            let mut text = Vec::new();
            let mut s = state;
            // Mostly backslashes and plain bytes, a quote or a bad byte now
            // and then, so that runs often go on past a window.
            for _ in 0..(state % 40) {
                let k = (s % 64) as usize;
                s = s.rotate_right(6) ^ 0x9e37_79b9;
                let piece = if k < 56 { alphabet[[0, 1, 3, 4, 7, 8, 9, 13][k % 8]] } else { alphabet[k % alphabet.len()] };
                text.extend_from_slice(piece);
            }
            let from = (state >> 40) as usize % (text.len() + 1);
            assert_eq!(plain_run(&text, from), plain_run_bytewise(&text, from), "{:?} from {from}", String::from_utf8_lossy(&text));
        }
    }

    /// Scans `text` in chunks of `chunk` bytes (moved to character
    /// boundaries): output, result, consumed length.
    fn scan_all(text: &str, chunk: usize, python: bool) -> (String, Scan, usize) {
        scan_all_with(JsonScanner::new(python, false), text, chunk)
    }

    fn scan_all_with(mut s: JsonScanner, text: &str, chunk: usize) -> (String, Scan, usize) {
        let mut out = String::new();
        let mut pos = 0;
        let mut fed = 0;
        loop {
            fed = (fed + chunk).min(text.len());
            while !text.is_char_boundary(fed) {
                fed += 1;
            }
            let last = fed == text.len();
            let (n, r) = s.scan(&text[pos..fed], last, &mut |p: &str| {
                assert!(!p.is_empty());
                out.push_str(p);
            });
            pos += n;
            if r != Scan::NeedMore || last {
                return (out, r, pos);
            }
            assert_eq!(pos, fed, "NeedMore consumes everything");
        }
    }

    fn for_chunkings(text: &str, python: bool, check: impl Fn(&str, Scan, usize)) {
        for chunk in [1, 2, 3, 4, 7, 1000] {
            let (out, r, n) = scan_all(text, chunk, python);
            check(&out, r, n);
        }
    }

    #[test]
    fn finds_the_end_of_values_in_any_chunking() {
        let text = "{\"a\": [1, 2.5e3, \"x\\\"y\"], \"b\": {\"c\": null}} trailing";
        for_chunkings(text, false, |out, r, n| {
            assert_eq!(r, Scan::Done);
            assert_eq!(out, "{\"a\": [1, 2.5e3, \"x\\\"y\"], \"b\": {\"c\": null}}");
            assert_eq!(n, out.len());
        });
    }

    #[test]
    fn passes_valid_json_through_unchanged() {
        for text in [
            "0",
            "-0.5e-10",
            "1E+2",
            "true",
            "false",
            "null",
            "\"\"",
            "\"\\u00e9\\/\\b\\f\\n\\r\\t é😀\"",
            "[]",
            "{}",
            " [ { } , [ ] , \"x\" ] ",
            "{\"k\":{\"k\":[1,{\"z\":false}]}}",
        ] {
            for_chunkings(text, false, |out, r, n| {
                assert_eq!((out, r), (text.trim_end(), Scan::Done), "{text}");
                assert!(n == text.trim_end().len() || n == text.len());
            });
        }
    }

    #[test]
    fn numbers_end_at_the_first_other_byte() {
        let (out, r, n) = scan_all("42\n</p>", 1, false);
        assert_eq!((out.as_str(), r, n), ("42", Scan::Done, 2));
        let (out, r, _) = scan_all("-3.14", 2, false);
        assert_eq!((out.as_str(), r), ("-3.14", Scan::Done));
        let mut s = JsonScanner::new(false, false);
        assert_eq!(s.scan("12", false, &mut |_: &str| {}), (2, Scan::NeedMore));
        assert_eq!(s.scan("", true, &mut |_: &str| {}), (0, Scan::Done));
        assert_eq!(s.scan("more", true, &mut |_: &str| {}), (0, Scan::Done));
    }

    /// A Python string's backslash is held back until its escape is known;
    /// when what follows is no escape (or nothing follows), the backslash
    /// is still reported, so no byte goes missing before the break.
    #[test]
    fn a_bad_python_escape_reports_its_backslash() {
        for_chunkings("{'k': 'tab\\\nthere'}", true, |out, r, n| {
            assert_eq!((out, r, n), ("{\"k\": \"tab\\", Scan::Invalid, 11));
        });
        for_chunkings("['a\\", true, |out, r, n| {
            assert_eq!((out, r, n), ("[\"a\\", Scan::Invalid, 4));
        });
    }

    /// Generated parsers hold a scanner in their state (≤ 256 bytes in
    /// all): the decoding mode's state lives in bits of its fields.
    #[test]
    fn the_scanner_stays_16_bytes() {
        assert_eq!(core::mem::size_of::<JsonScanner>(), 16);
        assert!(u32::from(MAX_DEPTH) <= CODE_SHIFT);
    }

    /// Arguments as a JSON string holding the object, in every chunking:
    /// `(input, reported, result, consumed)`.
    #[test]
    fn arguments_written_as_a_string_are_the_object_it_holds() {
        let cases: &[(&str, &str, Scan, usize)] = &[
            (r#""{\"city\": \"Paris\"}"}"#, r#"{"city": "Paris"}"#, Scan::Done, 23),
            // Escapes of the object's own strings, escaped once more.
            (r#""{\"code\": \"a\\n\\\"b\\\"\"}""#, r#"{"code": "a\n\"b\""}"#, Scan::Done, 31),
            // Whitespace around the object inside the string; `\u` and `\/`.
            (r#"" {\"s\": \"\u00e9\/\"}\n""#, " {\"s\": \"\u{e9}/\"}", Scan::Done, 26),
            (r#""{}""#, "{}", Scan::Done, 4),
            // Not an object, or more than one value: broken where it stops.
            (r#""Paris""#, "", Scan::Invalid, 1),
            (r#""{} x""#, "{}", Scan::Invalid, 4),
            (r#""{\"a\": 1""#, r#"{"a": 1"#, Scan::Invalid, 10),
            // The string ends where the object is not complete, or not at all.
            (r#""{\"a\": 1}"#, r#"{"a": 1}"#, Scan::Invalid, 11),
            // A surrogate escape is not read.
            (r#""{\"a\": \"\ud83d\ude00\"}""#, r#"{"a": ""#, Scan::Invalid, 16),
        ];
        for &(text, want, result, consumed) in cases {
            for chunk in 1..=text.len() {
                let got = scan_all_with(JsonScanner::new(false, true), text, chunk);
                assert_eq!(got, (String::from(want), result, consumed), "{text} in chunks of {chunk}");
            }
        }
        // The states a fast path reads see no plain string inside it, and
        // nothing can be closed early.
        let mut s = JsonScanner::new(false, true);
        s.scan(r#""{\"a\": \"x"#, false, &mut |_: &str| {});
        assert!(!s.in_plain_string() && s.string_escape_state().is_none() && !s.can_close() && !s.is_done());
        // Only arguments: a value elsewhere that is a string is a string.
        let mut out = String::new();
        assert_eq!(JsonScanner::new(false, false).scan(r#""{}""#, true, &mut |p: &str| out.push_str(p)), (4, Scan::Done));
        assert_eq!(out, r#""{}""#);
    }

    #[test]
    fn python_literals_become_json() {
        let text = "{'a': True, 'b': None, 'c': 'it\\'s \"q\"', 'd': False, 'e': '\\u00e9\\n\t'}";
        for_chunkings(text, true, |out, r, _| {
            assert_eq!(r, Scan::Done);
            assert_eq!(
                out,
                "{\"a\": true, \"b\": null, \"c\": \"it's \\\"q\\\"\", \"d\": false, \"e\": \"\\u00e9\\n\\t\"}"
            );
            let value: serde_json::Value = serde_json::from_str(out).unwrap();
            assert_eq!(value["c"], "it's \"q\"");
            assert_eq!(value["e"], "é\n\t");
        });
        // JSON spellings are still accepted in Python mode.
        let (out, r, _) = scan_all("[true, \"x\", 'y']", 1, true);
        assert_eq!((out.as_str(), r), ("[true, \"x\", \"y\"]", Scan::Done));
    }

    #[test]
    fn rejects_broken_json() {
        for bad in [
            "{\"a\" 1}",
            "{\"a\": tru}",
            "[1,,2]",
            "{'a': 1}",
            "}",
            "{\"a\": 1-2}",
            "{\"a\": 01}",
            "{\"a\": 1e}",
            "{\"a\": -}",
            "[1.]",
            "[.5]",
            "[\"\\x\"]",
            "[\"\\u12g4\"]",
            "[\"a\nb\"]",
            "[\"\\'\"]",
            "True",
            "[1,]",
            "{\"a\":1,}",
            "{1: 2}",
            "[1 2]",
            "{\"a\": 1]",
            "[1}",
            "nul",
            "é",
        ] {
            for_chunkings(bad, false, |_, r, _| assert_eq!(r, Scan::Invalid, "{bad}"));
        }
        for_chunkings("{\"a\": 1", false, |_, r, n| {
            assert_eq!((r, n), (Scan::Invalid, 7), "cut off")
        });
    }

    #[test]
    fn invalid_stops_output_at_the_bad_byte() {
        let (out, r, n) = scan_all("{\"a\": [1, x]}", 1000, false);
        assert_eq!((out.as_str(), r, n), ("{\"a\": [1, ", Scan::Invalid, 10));
        // A Python string's backslash waits for what follows it, and is
        // reported when that is no escape, as a JSON string's is.
        let (out, r, n) = scan_all("['a\\x']", 1000, true);
        assert_eq!((out.as_str(), r, n), ("[\"a\\", Scan::Invalid, 4));
        let (out, r, n) = scan_all("[\"a\\x\"]", 1000, false);
        assert_eq!((out.as_str(), r, n), ("[\"a\\", Scan::Invalid, 4));
    }

    #[test]
    fn escape_dense_strings_are_one_run_in_any_chunking() {
        // Escapes every few bytes, \u escapes, multi-byte characters; then
        // the same with a bad escape or a raw control character placed at
        // every offset, which must stop the scan at the same byte whatever
        // the chunking (the word-at-a-time run and the byte loop agree).
        let body = r#"C:\\Users\\dev \"q\" \u00e9\t\n é 🙂 \/ x"#;
        let text = std::format!("{{\"code\": \"{}\", \"n\": 1}}", body.repeat(9));
        for_chunkings(&text, false, |out, r, n| assert_eq!((out, r, n), (text.as_str(), Scan::Done, text.len())));
        let (out, _, _) = scan_all(&text, 1000, false);
        assert_eq!(out, text);
        let (mut pieces, mut s) = (0, JsonScanner::new(false, false));
        s.scan(&text, true, &mut |_: &str| pieces += 1);
        assert_eq!(pieces, 1, "one run, one piece");
        for at in (10..text.len() - 12).filter(|&i| text.is_char_boundary(i)) {
            for bad in ["\\q", "\u{1}", "\\u12g4"] {
                let broken = std::format!("{}{bad}{}", &text[..at], &text[at..]);
                let whole = scan_all(&broken, 1000, false);
                for chunk in [1, 3, 8] {
                    assert_eq!(scan_all(&broken, chunk, false), whole, "{at} {bad:?} in {chunk}-byte chunks");
                }
            }
        }
    }

    #[test]
    fn special_lanes_are_exact_in_every_lane() {
        let alphabet = [0u8, 1, 0x1f, 0x20, 0x21, b'"', b'#', b'\\', b']', b'[', b'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            crate::xorshift(&mut state);
            let bytes: [u8; 8] = core::array::from_fn(|k| alphabet[(state >> (4 * k)) as usize % alphabet.len()]);
            let lanes = crate::word::json_escape_lanes(u64::from_le_bytes(bytes));
            for (k, &b) in bytes.iter().enumerate() {
                assert_eq!(lanes >> (8 * k + 7) & 1 == 1, needs_escape(b), "{bytes:?} lane {k}");
            }
        }
    }

    #[test]
    fn open_containers_close_after_a_complete_value_only() {
        for (text, closed) in [("{\"a\": [1, {\"b\": true", Some("{\"a\": [1, {\"b\": true}]}")), ("{\"a\": 1", Some("{\"a\": 1}")), ("{\"a\": ", None), ("{\"a\"", None), ("{\"a\": \"x", None), ("{\"a\": 1,", None), ("{", None)] {
            let mut s = JsonScanner::new(false, true);
            let mut out = String::new();
            let input = std::format!("{text}<end>");
            let (n, r) = s.scan(&input, false, &mut |p: &str| out.push_str(p));
            if closed.is_none() && r != Scan::Invalid {
                // Still inside a string or waiting for a value: nothing to close.
                assert!(!s.can_close(), "{text}");
                continue;
            }
            assert_eq!((r, &input[n..]), (Scan::Invalid, "<end>"), "{text}");
            assert_eq!(s.close_open(&mut |p: &str| out.push_str(p)), closed.is_some(), "{text}");
            if let Some(c) = closed {
                assert_eq!((out.as_str(), s.is_done()), (c, true));
            }
        }
    }

    /// Scans `text` in the marked dialect in chunks of `chunk` bytes.
    fn scan_marked_all(text: &str, chunk: usize, marker: &str) -> (String, Scan, usize) {
        let mut s = JsonScanner::new(false, true);
        let mut out = String::new();
        let (mut pos, mut fed) = (0, 0);
        loop {
            fed = (fed + chunk).min(text.len());
            while !text.is_char_boundary(fed) {
                fed += 1;
            }
            let last = fed == text.len();
            let (n, r) = s.scan_marked(&text[pos..fed], last, marker, &mut |p: &str| out.push_str(p));
            pos += n;
            if r != Scan::NeedMore || last {
                return (out, r, pos);
            }
        }
    }

    #[test]
    fn the_marked_dialect_reads_gemma_object_literals() {
        let q = "<|\"|>";
        for (text, json) in [
            ("{}", "{}"),
            ("{city:<|\"|>Paris<|\"|>,days:3}", r#"{"city":"Paris","days":3}"#),
            // Raw text between markers: quotes, backslashes, newlines, a
            // `<` and a cut marker that are text, non-ASCII.
            ("{s:<|\"|>a\"b\\c\n<x <|\" é<|\"|>}", r#"{"s":"a\"b\\c\n<x <|\" é"}"#),
            ("{config:{theme:<|\"|>dark<|\"|>,count:3}}", r#"{"config":{"theme":"dark","count":3}}"#),
            ("{tags:[<|\"|>a<|\"|>, <|\"|>b<|\"|>],ok:true,n:null}", r#"{"tags":["a", "b"],"ok":true,"n":null}"#),
            // Keys between markers and JSON strings are read too.
            ("{<|\"|>my key<|\"|>:\"v\",\"k\":{x_1:-1.5}}", r#"{"my key":"v","k":{"x_1":-1.5}}"#),
            // Python's quotes and `=` (ollama #17882, #15315): raw text to
            // a `'` before what ends a value, or to the marker (a marker
            // right after the quote is dropped with it); any other `'` is
            // the value's.
            ("{a:'x = 2',b=\"y\",c='it's'}", r#"{"a":"x = 2","b":"y","c":"it's"}"#),
            ("{p:':\\s*\\w+'<|\"|>,q:'r<|\"|>}", r#"{"p":":\\s*\\w+","q":"r"}"#),
            ("{l:['a' , 'b'],s:'<|x' }", r#"{"l":["a" , "b"],"s":"<|x" }"#),
            ("{s:'a<b',t:'c'}", r#"{"s":"a<b","t":"c"}"#),
        ] {
            for chunk in [1, 2, 3, 5, 1000] {
                let (out, r, n) = scan_marked_all(&format!("{text}<tool_call|>"), chunk, q);
                assert_eq!((out.as_str(), r, n), (json, Scan::Done, text.len()), "{text} in {chunk}");
                let value: serde_json::Value = serde_json::from_str(&out).unwrap();
                assert!(value.is_object());
            }
        }
    }

    #[test]
    fn the_marked_dialect_reports_broken_markers_as_written() {
        let q = "<|\"|>";
        for chunk in [1, 2, 1000] {
            // A string never closed: the held bytes of a cut marker are text.
            let (out, r, n) = scan_marked_all("{s:<|\"|>abc<|", chunk, q);
            assert_eq!((out.as_str(), r, n), (r#"{"s":"abc<|"#, Scan::Invalid, 13), "{chunk}");
            // An opening marker that breaks off: its bytes are reported.
            let (out, r, n) = scan_marked_all("{s:<|x}", chunk, q);
            assert_eq!((out.as_str(), r, n), (r#"{"s":<|"#, Scan::Invalid, 5), "{chunk}");
            // Bare keys need the dialect.
            let (_, r, _) = scan_marked_all("{s:1}", chunk, "");
            assert_eq!(r, Scan::Invalid);
            // A value missing where punctuation stands is broken.
            for text in ["{s:}", "{s:,t:1}", "{s::}"] {
                let (_, r, n) = scan_marked_all(text, chunk, q);
                assert_eq!((r, n), (Scan::Invalid, 3), "{text} in {chunk}");
            }
            // Text with no marker at either end is a bare value: the
            // object's `}` ends it, and the scan stops after the object
            // (a later call is read again).
            let (out, r, n) = scan_marked_all("{s:abc}<tool_call|><|tool_call>", chunk, q);
            assert_eq!((out.as_str(), r, n), (r#"{"s":"abc"}"#, Scan::Done, 7), "{chunk}");
        }
    }

    #[test]
    fn a_marked_string_without_its_opening_marker_runs_to_the_closing_one() {
        let q = "<|\"|>";
        for (text, json) in [
            // Gemma 4 leaves the opening marker out on many calls.
            ("{query:weather in Tokyo<|\"|>}", r#"{"query":"weather in Tokyo"}"#),
            // Commas and brackets are text until the marker (a `}` is not:
            // it ends a string opened without its marker, as does a `,`
            // before a bare key and its `:`).
            ("{query:Paris, France [FR]<|\"|>,limit:5}", r#"{"query":"Paris, France [FR]","limit":5}"#),
            ("{tags:[a b<|\"|>, <|\"|>c<|\"|>]}", r#"{"tags":["a b", "c"]}"#),
            ("{q:été \"x\"<|\"|>}", r#"{"q":"été \"x\""}"#),
        ] {
            for chunk in [1, 2, 3, 5, 1000] {
                let (out, r, n) = scan_marked_all(&format!("{text}<tool_call|>"), chunk, q);
                assert_eq!((out.as_str(), r, n), (json, Scan::Done, text.len()), "{text} in {chunk}");
            }
        }
    }

    #[test]
    fn a_bare_value_ends_at_the_object_or_before_the_next_key() {
        let q = "<|\"|>";
        for (text, json) in [
            // Both markers left out (Gemma 4, ollama #15315).
            ("{city:Paris}", r#"{"city":"Paris"}"#),
            ("{city:Paris,days:3}", r#"{"city":"Paris","days":3}"#),
            ("{days:3,city:Paris}", r#"{"days":3,"city":"Paris"}"#),
            ("{city:New York,country:USA}", r#"{"city":"New York","country":"USA"}"#),
            // A comma no bare key and `:` follow is text.
            ("{city:Paris,France}", r#"{"city":"Paris,France"}"#),
            ("{city:Paris, France}", r#"{"city":"Paris, France"}"#),
            // A `<` that may start the closing marker, cut off by a
            // chunk's end, then a comma: the `<` is text, once (it came
            // out twice in 2-byte chunks; found by fuzzing a real output).
            ("{city:Franc<,}", r#"{"city":"Franc<,"}"#),
            ("{city:Paris,Franc<,days:3}", r#"{"city":"Paris,Franc<","days":3}"#),
        ] {
            for chunk in [1, 2, 3, 5, 1000] {
                let (out, r, n) = scan_marked_all(&format!("{text}<tool_call|>"), chunk, q);
                assert_eq!((out.as_str(), r, n), (json, Scan::Done, text.len()), "{text} in {chunk}");
            }
        }
        // A key longer than the scanner waits for: the comma is text.
        let long = format!("{{s:a,{}:1}}", "k".repeat(BARE_KEY_MAX + 1));
        let (out, _, _) = scan_marked_all(&long, 1, q);
        assert!(out.starts_with(r#"{"s":"a,kkk"#), "{out}");
    }

    #[test]
    fn a_bare_value_that_starts_like_a_number_or_constant_is_text() {
        let q = "<|\"|>";
        for (text, json) in [
            // Not a whole number or constant: a bare string.
            ("{date:2024-05-01}", r#"{"date":"2024-05-01"}"#),
            ("{city:new york,days:3}", r#"{"city":"new york","days":3}"#),
            ("{q:3 apples}", r#"{"q":"3 apples"}"#),
            ("{q:true story}", r#"{"q":"true story"}"#),
            ("{flag:-v}", r#"{"flag":"-v"}"#),
            ("{v:1.}", r#"{"v":"1."}"#),
            ("{q:nullish,n:1}", r#"{"q":"nullish","n":1}"#),
            // A number or constant followed by the marker that ends a
            // string: a string the model opened without its marker.
            ("{n:42<|\"|>}", r#"{"n":"42"}"#),
            // Whole numbers and constants, before what ends a value, stay
            // as written.
            ("{days:3}", r#"{"days":3}"#),
            ("{x:-1.5e3 , ok:true}", r#"{"x":-1.5e3 , "ok":true}"#),
            ("{ids:[1, 2],v:null}", r#"{"ids":[1, 2],"v":null}"#),
        ] {
            for chunk in [1, 2, 3, 5, 1000] {
                let (out, r, n) = scan_marked_all(&format!("{text}<tool_call|>"), chunk, q);
                assert_eq!((out.as_str(), r, n), (json, Scan::Done, text.len()), "{text} in {chunk}");
            }
        }
        // Before other markup: as written (the object's `}` may be missing
        // before the call's closer, which the parser reads).
        for chunk in [1, 1000] {
            let (out, _, _) = scan_marked_all("{n:42<tool_call|>", chunk, q);
            assert!(out.starts_with(r#"{"n":42"#), "{out} in {chunk}");
        }
        // Plain JSON (no marker) is not read this way.
        let (_, r, _) = scan_marked_all("{\"d\":2024-05-01}", 1000, "");
        assert_eq!(r, Scan::Invalid);
        // A word still unclear after the scanner's wait is read as written.
        let long = format!("{{n:1{}x}}", " ".repeat(BARE_KEY_MAX + 2));
        let (out, r, _) = scan_marked_all(&long, 1, q);
        assert!(out.starts_with(r#"{"n":1"#) && r == Scan::Invalid, "{out}");
    }

    #[test]
    fn object_only_accepts_only_an_object() {
        for (text, ok) in [
            ("{}", true),
            ("[]", false),
            ("1", false),
            ("\"s\"", false),
            (" {\"a\": [1]}", true),
        ] {
            let mut s = JsonScanner::new(false, true);
            let (_, r) = s.scan(text, true, &mut |_: &str| {});
            assert_eq!(r == Scan::Done, ok, "{text}");
        }
    }

    #[test]
    fn nesting_is_limited_to_max_depth() {
        let depth = MAX_DEPTH as usize;
        let deepest = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        for_chunkings(&deepest, false, |out, r, _| {
            assert_eq!((out, r), (deepest.as_str(), Scan::Done))
        });
        let mixed: String = (0..depth)
            .map(|i| if i % 2 == 0 { "{\"k\":" } else { "[" })
            .collect();
        let closed: String = (0..depth)
            .rev()
            .map(|i| if i % 2 == 0 { "}" } else { "]" })
            .collect();
        let text = format!("{mixed}1{closed}");
        for_chunkings(&text, false, |_, r, _| assert_eq!(r, Scan::Done));
        let too_deep = format!("{}{}", "[".repeat(depth + 1), "]".repeat(depth + 1));
        for_chunkings(&too_deep, false, |out, r, n| {
            assert_eq!((out.len(), r, n), (depth, Scan::Invalid, depth))
        });
    }

    #[test]
    fn output_is_slices_of_the_input() {
        let text = "{\"long string é\": [1234, true, null]}";
        let mut pieces = Vec::new();
        let mut s = JsonScanner::new(false, true);
        assert_eq!(
            s.scan(text, false, &mut |p: &str| pieces.push(String::from(p))),
            (text.len(), Scan::Done)
        );
        assert_eq!(pieces, vec![text]);
    }
}
