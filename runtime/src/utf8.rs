//! Decoding UTF-8 that arrives in chunks, without allocation.
//!
//! A chunk of model output may end inside a multi-byte character. A
//! [`Utf8Carry`] keeps those bytes (at most 3) until the next chunk completes
//! them; the text of each chunk is then handed out as `&str` pieces. Invalid
//! UTF-8 becomes U+FFFD, one per maximal invalid subpart, exactly as
//! [`String::from_utf8_lossy`] would decode the whole stream.
//!
//! [`String::from_utf8_lossy`]: https://doc.rust-lang.org/std/string/struct.String.html#method.from_utf8_lossy

use core::str;

use crate::word::Word;

/// How much of `bytes` is whole characters, when all of it is valid UTF-8
/// except a last character cut off at the end (which the next bytes can
/// still complete); `None` when it holds invalid UTF-8. The streaming fast
/// path uses this on a few bytes at a time: one pass of [`Utf8State`], then
/// a step back to the cut character's first byte.
///
/// # Example
/// ```
/// use chat_parser_runtime::utf8::complete_prefix;
/// assert_eq!(complete_prefix("a€".as_bytes()), Some(4));
/// assert_eq!(complete_prefix(&"a€".as_bytes()[..3]), Some(1));
/// assert_eq!(complete_prefix(b"a\xe0\x80"), None); // can never complete
/// ```
#[inline(always)]
pub fn complete_prefix(bytes: &[u8]) -> Option<usize> {
    whole_prefix(Utf8State::START.read(bytes), bytes)
}

/// [`complete_prefix`] given `state`, the state after `bytes` from the
/// start (the streaming fast path reads them as a word: `Utf8State::read_word`).
#[inline(always)]
pub(crate) fn whole_prefix(state: Utf8State, bytes: &[u8]) -> Option<usize> {
    if state.at_boundary() {
        Some(bytes.len())
    } else if state.failed() {
        None
    } else {
        // Inside a character the next bytes can complete: it starts at the
        // last byte that is not a continuation byte, at most 3 bytes back.
        bytes.iter().rposition(|&b| !is_continuation(b))
    }
}

/// [`whole_prefix`] of the bytes of `word`: where the last character
/// starts when `state` is inside one (the last byte that is not a
/// continuation byte, `10xxxxxx`), found in the word at once.
/// (For the parsers' streaming path and the benchmark's floor:
/// `__private`.)
#[doc(hidden)]
#[inline(always)]
pub fn whole_word(state: Utf8State, word: Word) -> Option<usize> {
    if state.at_boundary() {
        Some(word.len)
    } else if state.failed() {
        None
    } else {
        // Bit 7 of each byte: set where bit 7 is and bit 6 is not.
        let continuation = word.bits & !(word.bits << 1);
        match !continuation & word.lanes() {
            0 => None,
            starts => Some((63 - starts.leading_zeros() as usize) / 8),
        }
    }
}

/// Where a UTF-8 check stands after the bytes read so far: between two
/// characters, inside a character that more bytes can still complete, or
/// past invalid bytes (for good).
///
/// A state machine whose whole transition is one shift. Each state is the
/// position (0, 6, 12, ...) of a 6-bit field; each byte has a 64-bit row
/// whose field at a state's position holds the state that follows it on
/// that byte. Shifting the row right by the state brings the next state to
/// the low 6 bits (the bits above them are the row's leftover, never read).
/// Reading a byte is a load and a shift, with no branch, so a
/// text of multi-byte characters (Chinese: three bytes each) is checked at
/// a few instructions a byte, where a check character by character branches
/// on every lead byte.
///
/// # Example
/// ```
/// use chat_parser_runtime::utf8::Utf8State;
/// let s = Utf8State::START.read("中文".as_bytes());
/// assert!(s.at_boundary());
/// let cut = Utf8State::START.read(&"中".as_bytes()[..2]);
/// assert!(!cut.at_boundary() && !cut.failed());
/// assert!(cut.read(b"x").failed()); // a continuation byte was due
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Utf8State(u64);

// The states, as the shifts that select their 6-bit field of a row. Invalid
// is 0: its field is 0 in every row, so it never leaves.
const INVALID: u64 = 0;
const BOUNDARY: u64 = 6;
const NEED_1: u64 = 12;
const NEED_2: u64 = 18;
const NEED_3: u64 = 24;
// After a lead byte whose second byte has a narrower range (no overlong
// forms, no surrogates, nothing past U+10FFFF).
const AFTER_E0: u64 = 30; // A0..=BF
const AFTER_ED: u64 = 36; // 80..=9F
const AFTER_F0: u64 = 42; // 90..=BF
const AFTER_F4: u64 = 48; // 80..=8F

/// The row of byte `b`: the state each state goes to on it.
const fn row(b: u8) -> u64 {
    let from_boundary = match b {
        0x00..=0x7f => BOUNDARY,
        0xc2..=0xdf => NEED_1,
        0xe0 => AFTER_E0,
        0xe1..=0xec | 0xee..=0xef => NEED_2,
        0xed => AFTER_ED,
        0xf0 => AFTER_F0,
        0xf1..=0xf3 => NEED_3,
        0xf4 => AFTER_F4,
        _ => INVALID,
    };
    let mut row = from_boundary << BOUNDARY;
    if b & 0xc0 == 0x80 {
        row |= BOUNDARY << NEED_1 | NEED_1 << NEED_2 | NEED_2 << NEED_3;
        row |= if b >= 0xa0 { NEED_1 << AFTER_E0 } else { NEED_1 << AFTER_ED };
        row |= if b >= 0x90 { NEED_2 << AFTER_F0 } else { NEED_2 << AFTER_F4 };
    }
    row
}

/// Every byte's row (2 KB).
static ROWS: [u64; 256] = {
    let mut rows = [0; 256];
    let mut b = 0;
    while b < 256 {
        rows[b] = row(b as u8);
        b += 1;
    }
    rows
};

impl Utf8State {
    /// Before any byte: between characters.
    pub const START: Utf8State = Utf8State(BOUNDARY);

    /// The state after `b`.
    #[inline(always)]
    pub fn step(self, b: u8) -> Utf8State {
        // A shift takes its count modulo 64: only the low 6 bits of the
        // state are its field's position, the rest is the row's leftover.
        Utf8State(ROWS[b as usize].wrapping_shr(self.0 as u32))
    }

    /// The state after `bytes`.
    #[inline(always)]
    pub fn read(self, bytes: &[u8]) -> Utf8State {
        bytes.iter().fold(self, |s, &b| s.step(b))
    }

    /// The state after the first `len` bytes (at most 8) of `bits`, a
    /// little-endian word, from the start: a chunk joined to a carried
    /// character in a register is read where it is.
    ///
    /// ```
    /// use chat_parser_runtime::utf8::Utf8State;
    /// let bits = u64::from_le_bytes(*b"a\xe4\xb8\xad\xe6\x96\x87\0"); // "a中文"
    /// assert!(Utf8State::read_word(bits, 7).at_boundary());
    /// let cut = Utf8State::read_word(bits, 6); // "a中" and two bytes of "文"
    /// assert!(!cut.at_boundary() && !cut.failed());
    /// ```
    #[inline(always)]
    pub fn read_word(bits: u64, len: usize) -> Utf8State {
        Utf8State::START.then_word(bits, len)
    }

    /// The state after the first `len` bytes (at most 8) of `bits` from
    /// this one: a chunk read on from the state a carried character left.
    #[inline(always)]
    pub fn then_word(self, bits: u64, len: usize) -> Utf8State {
        let mut state = self;
        let mut rest = bits;
        for _ in 0..len.min(8) {
            state = state.step(rest as u8);
            rest >>= 8;
        }
        state
    }

    /// Whether the bytes so far are whole characters.
    #[inline(always)]
    pub fn at_boundary(self) -> bool {
        self.0 & 63 == BOUNDARY
    }

    /// Whether the bytes so far hold invalid UTF-8.
    #[inline(always)]
    pub fn failed(self) -> bool {
        self.0 & 63 == INVALID
    }
}

/// The replacement character that stands for invalid UTF-8.
pub const REPLACEMENT: &str = "\u{FFFD}";

/// The incomplete UTF-8 sequence at the end of the last chunk.
///
/// The bytes past the carried ones are always zero, so the carry reads as a
/// little-endian word with no masking (the streaming fast path joins it to
/// the next chunk in a register).
///
/// Guarantees: fixed size (a few bytes), never allocates, never panics. Feeding
/// a stream in chunks of any size, then calling [`finish`](Self::finish),
/// yields the same text as decoding the whole stream with
/// `String::from_utf8_lossy`.
///
/// # Example
/// ```
/// use chat_parser_runtime::utf8::Utf8Carry;
/// let mut carry = Utf8Carry::new();
/// let mut text = String::new();
/// // "é" is two bytes; the first chunk ends between them.
/// for chunk in [&b"caf\xc3"[..], b"\xa9!", b"\xff"] {
///     let split = carry.split(chunk);
///     text.push_str(split.head());
///     split.rest().for_each(|piece| text.push_str(piece));
/// }
/// text.push_str(carry.finish());
/// assert_eq!(text, "café!\u{FFFD}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf8Carry {
    bytes: [u8; 4],
    /// How many bytes are carried (the top 2 bits) and the UTF-8 check's
    /// state after them (the low 6, a [`Utf8State`]'s field: the check reads
    /// only its low 6 bits): the streaming fast path goes on checking from
    /// there instead of reading the carried bytes again, and the carry
    /// stays 5 bytes.
    meta: u8,
}

impl Default for Utf8Carry {
    fn default() -> Self {
        Utf8Carry::new()
    }
}

impl Utf8Carry {
    /// Nothing carried.
    #[inline]
    pub const fn new() -> Utf8Carry {
        Utf8Carry {
            bytes: [0; 4],
            meta: BOUNDARY as u8,
        }
    }

    /// How many bytes are carried.
    #[inline(always)]
    fn len(&self) -> usize {
        usize::from(self.meta >> 6)
    }

    /// Carries the first `len` bytes of `bytes` (zero past them), after
    /// which the check is in `state`.
    #[inline(always)]
    fn keep(&mut self, bytes: [u8; 4], len: usize, state: Utf8State) {
        self.bytes = bytes;
        self.meta = (len.min(3) as u8) << 6 | (state.0 & 63) as u8;
    }

    /// The carried bytes: empty, or the start (1 to 3 bytes) of a character
    /// that can still be completed.
    #[inline]
    pub fn pending(&self) -> &[u8] {
        &self.bytes[..self.len()]
    }

    /// Whether no bytes are carried.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The carried bytes as a little-endian word (zero past them), how
    /// many there are, and the check's state after them.
    #[inline(always)]
    pub(crate) fn word(&self) -> (u32, usize, Utf8State) {
        // (Zero past the carried bytes: see the type's docs.)
        (u32::from_le_bytes(self.bytes), self.len(), Utf8State(u64::from(self.meta)))
    }

    /// Splits the next chunk into text: the character completed from the
    /// carried bytes (the split's [`head`](Utf8Split::head)), then the rest
    /// of the chunk as pieces of `chunk` (its [`rest`](Utf8Split::rest)),
    /// keeping an incomplete character at the end of the chunk for the next
    /// call.
    ///
    /// The split borrows only `chunk`, so the caller may use `self` again
    /// (and mutate whatever holds it) while it hands the pieces on.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::utf8::Utf8Carry;
    /// let mut carry = Utf8Carry::new();
    /// let split = carry.split("ab€".as_bytes().split_at(4).0);
    /// assert_eq!((split.head(), split.rest().collect::<Vec<_>>()), ("", vec!["ab"]));
    /// assert_eq!(carry.pending(), b"\xe2\x82");
    /// let split = carry.split(b"\xacc");
    /// assert_eq!((split.head(), split.rest().collect::<Vec<_>>()), ("€", vec!["c"]));
    /// ```
    pub fn split<'c>(&mut self, chunk: &'c [u8]) -> Utf8Split<'c> {
        let mut head = Head::EMPTY;
        let mut rest = chunk;
        if !self.is_empty() {
            let carried = self.len();
            let need = sequence_len(self.bytes[0]).saturating_sub(carried);
            let take = need.min(chunk.len());
            let mut buf = self.bytes;
            buf[carried..carried + take].copy_from_slice(&chunk[..take]);
            match str::from_utf8(&buf[..carried + take]) {
                Ok(c) => {
                    head = Head::of(c);
                    rest = &chunk[take..];
                    *self = Utf8Carry::new();
                }
                // Still incomplete: the whole (short) chunk is carried.
                Err(e) if e.error_len().is_none() => {
                    self.keep(buf, carried + take, Utf8State::START.read(&buf[..carried + take]));
                    return Utf8Split { head, rest: &[] };
                }
                // The carried bytes and the first bytes of the chunk are a
                // maximal invalid subpart; the bad byte after it starts the
                // rest.
                Err(e) => {
                    head = Head::of(REPLACEMENT);
                    let bad = e.error_len().unwrap_or(carried);
                    rest = &chunk[bad.saturating_sub(carried).min(take)..];
                    *self = Utf8Carry::new();
                }
            }
        }
        let tail = incomplete_tail(rest);
        let (body, tail) = rest.split_at(rest.len() - tail);
        self.set(tail);
        Utf8Split { head, rest: body }
    }

    /// Carries the first `len` bytes of `tail` (little-endian, zero past
    /// them), the start of a character (at most 3 bytes) that the state
    /// machine found completable, after which it is in `state`:
    /// [`Self::set`] for a word.
    #[inline(always)]
    pub(crate) fn set_word(&mut self, tail: u32, len: usize, state: Utf8State) {
        self.keep(tail.to_le_bytes(), len, state);
    }

    /// Carries `tail`, the start of a character (at most 3 bytes) that
    /// [`complete_prefix`] found completable.
    #[inline]
    pub(crate) fn set(&mut self, tail: &[u8]) {
        // Three fixed stores, not a `memcpy` call for a byte or two.
        let mut bytes = [0; 4];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = tail.get(i).copied().unwrap_or(0);
        }
        self.keep(bytes, tail.len(), Utf8State::START.read(tail));
    }

    /// Ends the stream: a carried incomplete character becomes U+FFFD.
    /// Returns `""` when nothing was carried. The carry is empty afterwards.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::utf8::Utf8Carry;
    /// let mut carry = Utf8Carry::new();
    /// assert_eq!(carry.split(b"ok\xe2\x82").head(), "");
    /// assert_eq!(carry.finish(), "\u{FFFD}");
    /// assert_eq!(carry.finish(), "");
    /// ```
    pub fn finish(&mut self) -> &'static str {
        let carried = !self.is_empty();
        *self = Utf8Carry::new();
        if carried {
            REPLACEMENT
        } else {
            ""
        }
    }
}

/// The text of one chunk, from [`Utf8Carry::split`].
#[derive(Debug, Clone, Copy)]
#[must_use = "the split holds the chunk's text"]
pub struct Utf8Split<'c> {
    head: Head,
    rest: &'c [u8],
}

impl<'c> Utf8Split<'c> {
    /// The character completed from the carried bytes, `"\u{FFFD}"` when
    /// they could not be completed, or `""`. At most 4 bytes; it comes
    /// before [`rest`](Self::rest).
    pub fn head(&self) -> &str {
        self.head.as_str()
    }

    /// The rest of the chunk, up to the carried incomplete tail, as pieces:
    /// valid runs borrowed from the chunk and `"\u{FFFD}"` for invalid bytes.
    pub fn rest(&self) -> Lossy<'c> {
        Lossy::new(self.rest)
    }

    /// Calls `out` with each non-empty piece of text in order: the head,
    /// then the pieces of the rest.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::utf8::Utf8Carry;
    /// let mut carry = Utf8Carry::new();
    /// let mut text = String::new();
    /// carry.split(b"\xf0\x9f").for_each(|p| text.push_str(p));
    /// carry.split(b"\x98\x80 hi").for_each(|p| text.push_str(p));
    /// assert_eq!(text, "😀 hi");
    /// ```
    pub fn for_each(&self, mut out: impl FnMut(&str)) {
        if self.head.len > 0 {
            out(self.head());
        }
        self.rest().for_each(out);
    }
}

/// One decoded character, stored by value so that a split borrows nothing
/// but the chunk.
#[derive(Debug, Clone, Copy)]
struct Head {
    bytes: [u8; 4],
    len: u8,
}

impl Head {
    const EMPTY: Head = Head {
        bytes: [0; 4],
        len: 0,
    };

    /// `c` is one character (at most 4 bytes).
    fn of(c: &str) -> Head {
        let mut head = Head::EMPTY;
        let n = c.len().min(4);
        head.bytes[..n].copy_from_slice(&c.as_bytes()[..n]);
        head.len = n as u8;
        head
    }

    fn as_str(&self) -> &str {
        // Always valid: filled from a `&str`.
        str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or(REPLACEMENT)
    }
}

/// Iterator over the text of bytes decoded lossily: valid runs as borrowed
/// `&str` (as long as possible), and `"\u{FFFD}"` for each maximal invalid
/// subpart, including an incomplete character at the end.
///
/// Guarantees: never allocates, never panics; only non-empty pieces are
/// yielded; the concatenation equals `String::from_utf8_lossy(bytes)`.
///
/// # Example
/// ```
/// use chat_parser_runtime::utf8::Lossy;
/// let pieces: Vec<&str> = Lossy::new(b"ab\xffcd\xe2\x82").collect();
/// assert_eq!(pieces, ["ab", "\u{FFFD}", "cd", "\u{FFFD}"]);
/// ```
#[derive(Debug, Clone)]
pub struct Lossy<'a> {
    bytes: &'a [u8],
    /// Bytes of an invalid sequence at the front, still to be reported.
    invalid: usize,
}

impl<'a> Lossy<'a> {
    /// Decodes `bytes`.
    pub fn new(bytes: &'a [u8]) -> Lossy<'a> {
        Lossy { bytes, invalid: 0 }
    }
}

impl<'a> Iterator for Lossy<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.invalid > 0 {
            self.bytes = &self.bytes[self.invalid..];
            self.invalid = 0;
            return Some(REPLACEMENT);
        }
        if self.bytes.is_empty() {
            return None;
        }
        match str::from_utf8(self.bytes) {
            Ok(text) => {
                self.bytes = &[];
                Some(text)
            }
            Err(e) => {
                let (valid, after) = self.bytes.split_at(e.valid_up_to());
                self.invalid = e.error_len().unwrap_or(after.len());
                self.bytes = after;
                match str::from_utf8(valid) {
                    Ok(text) if !text.is_empty() => Some(text),
                    _ => self.next(),
                }
            }
        }
    }
}

/// The length a UTF-8 sequence starting with `lead` has (1 for bytes that
/// cannot start one).
#[inline]
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// Length of the incomplete character at the end of `bytes`: the last 1 to
/// 3 bytes when they are a proper prefix of a valid encoding, else 0.
fn incomplete_tail(bytes: &[u8]) -> usize {
    let from = bytes.len().saturating_sub(3);
    let Some(lead) = bytes[from..].iter().rposition(|&b| !is_continuation(b)) else {
        return 0;
    };
    let tail = &bytes[from + lead..];
    match str::from_utf8(tail) {
        Err(e) if e.valid_up_to() == 0 && e.error_len().is_none() => tail.len(),
        _ => 0,
    }
}

#[inline]
fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

/// `bytes` as text when they are all ASCII (the common case of a streamed
/// chunk), without a general UTF-8 validation.
///
/// # Example
/// ```
/// use chat_parser_runtime::utf8::ascii_str;
/// assert_eq!(ascii_str(b"abc"), Some("abc"));
/// assert_eq!(ascii_str("é".as_bytes()), None);
/// ```
#[inline]
pub fn ascii_str(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: every ASCII byte sequence is valid UTF-8.
        Some(unsafe { str::from_utf8_unchecked(bytes) })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    /// What `complete_prefix` must say, from the standard library's decoder.
    fn complete_prefix_by_std(b: &[u8]) -> Option<usize> {
        match core::str::from_utf8(b) {
            Ok(_) => Some(b.len()),
            Err(e) if e.error_len().is_none() => Some(e.valid_up_to()),
            Err(_) => None,
        }
    }

    /// The carry reads as a word without masking only while the bytes past
    /// the carried ones are zero: after every split of chunks cut from
    /// text with characters of every length and invalid bytes, and after
    /// `finish`.
    #[test]
    fn carried_bytes_are_zero_past_the_carry() {
        let text = "a\u{e9}\u{4e2d}\u{1f600}b\u{6587}".as_bytes().iter().chain(b"\xe4\xb8\xff\xf0\x9f\x98".iter()).copied().collect::<Vec<u8>>();
        // (And the check's state kept with them is the state after them.)
        let zero_past = |c: &Utf8Carry| {
            c.bytes[c.len()..].iter().all(|&b| b == 0) && c.word().2 .0 & 63 == Utf8State::START.read(c.pending()).0 & 63
        };
        for size in 1..=5 {
            for start in 0..size {
                let mut carry = Utf8Carry::new();
                let mut cut = &text[start..];
                while !cut.is_empty() {
                    let (chunk, rest) = cut.split_at(size.min(cut.len()));
                    let _ = carry.split(chunk);
                    assert!(zero_past(&carry), "{carry:?} after {chunk:x?}");
                    cut = rest;
                }
                let _ = carry.finish();
                assert!(zero_past(&carry) && carry.is_empty() && carry.word().0 == 0);
            }
        }
    }

    /// Generated parsers trust `complete_prefix` to build `&str`s without
    /// checking again: every 1- and 2-byte sequence, every 3-byte one whose
    /// last byte is from a set around the boundaries, and 4-byte ones.
    #[test]
    fn complete_prefix_agrees_with_the_standard_decoder() {
        let edges = [0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff];
        for a in 0..=255u8 {
            assert_eq!(complete_prefix(&[a]), complete_prefix_by_std(&[a]), "{a:x}");
            for b in 0..=255u8 {
                assert_eq!(complete_prefix(&[a, b]), complete_prefix_by_std(&[a, b]), "{a:x} {b:x}");
                for &c in &edges {
                    let t = [a, b, c];
                    assert_eq!(complete_prefix(&t), complete_prefix_by_std(&t), "{t:x?}");
                    for &d in &edges {
                        let t = [c, a, b, d];
                        assert_eq!(complete_prefix(&t), complete_prefix_by_std(&t), "{t:x?}");
                    }
                }
            }
        }
    }

    /// The word forms the streaming fast path uses agree with the slice
    /// forms: `read_word` with `read` on every length, and `set_word` (the
    /// word shifted past the whole characters) with `set` on the rest.
    #[test]
    fn word_forms_agree_with_slice_forms() {
        let alphabet = [0x00, 0x41, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc2, 0xdf, 0xe0, 0xe4, 0xed, 0xef, 0xf0, 0xf4, 0xff];
        let mut state = 0x6a09_e667_f3bc_c909u64;
        for _ in 0..300_000 {
            crate::xorshift(&mut state);
            let len = (state % 9) as usize;
            let mut bytes = [0u8; 8];
            for (i, b) in bytes.iter_mut().enumerate().take(len) {
                *b = alphabet[(state >> (4 * i + 8)) as usize % alphabet.len()];
            }
            let bits = u64::from_le_bytes(bytes);
            let by_word = Utf8State::read_word(bits, len);
            let by_slice = Utf8State::START.read(&bytes[..len]);
            assert_eq!(by_word.0 & 63, by_slice.0 & 63, "{:x?}", &bytes[..len]);
            // Read on from any cut, as the fast path reads a chunk after a
            // carried character; the last character found in the word.
            let cut = (state >> 40) as usize % (len + 1);
            let on = Utf8State::read_word(bits, cut).then_word(bits.checked_shr(8 * cut as u32).unwrap_or(0), len - cut);
            assert_eq!(on.0 & 63, by_slice.0 & 63, "{:x?} cut at {cut}", &bytes[..len]);
            assert_eq!(whole_word(by_word, Word { bits, len }), complete_prefix(&bytes[..len]), "{:x?}", &bytes[..len]);
            if let Some(end) = complete_prefix(&bytes[..len]) {
                let (mut a, mut b) = (Utf8Carry::new(), Utf8Carry::new());
                a.set_word(bits.checked_shr(8 * end as u32).unwrap_or(0) as u32, len - end, by_word);
                b.set(&bytes[end..len]);
                assert_eq!(a, b, "{:x?} cut at {end}", &bytes[..len]);
            }
        }
    }

    /// Decodes `chunks` in order, as one stream.
    fn decode(chunks: &[&[u8]]) -> String {
        let mut carry = Utf8Carry::new();
        let mut text = String::new();
        for chunk in chunks {
            let split = carry.split(chunk);
            assert!(split.head().len() <= 4);
            split.for_each(|piece| {
                assert!(!piece.is_empty());
                text.push_str(piece);
            });
            assert!(carry.pending().len() <= 3);
        }
        text.push_str(carry.finish());
        text
    }

    /// Every way of cutting `bytes` into two and three chunks decodes like
    /// the whole.
    fn check_all_splits(bytes: &[u8]) {
        let expected = String::from_utf8_lossy(bytes);
        assert_eq!(decode(&[bytes]), expected, "{bytes:x?}");
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                let chunks = [&bytes[..i], &bytes[i..j], &bytes[j..]];
                assert_eq!(decode(&chunks), expected, "{bytes:x?} cut at {i}, {j}");
            }
        }
        let ones: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode(&ones), expected, "{bytes:x?} byte by byte");
    }

    #[test]
    fn every_split_of_multibyte_characters() {
        check_all_splits("aé€😀z".as_bytes());
        check_all_splits("😀😀".as_bytes());
        check_all_splits("\u{10FFFF}\u{800}\u{80}\u{7f}".as_bytes());
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let cases: &[&[u8]] = &[
            b"\xff",
            b"a\xffb",
            b"\xc3",
            b"\xc3(",
            b"\xe2\x82(",
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            b"\xf0\x9f\x98(",
            b"\x80\x80",
            b"\xe0\x80\x80",     // overlong
            b"\xed\xa0\x80",     // surrogate
            b"\xf4\x90\x80\x80", // above U+10FFFF
            b"\xf8\x88\x80\x80\x80",
            b"\xc0\xaf",
            b"\xe2\x82\xe2\x82\xac",
            b"\xf0\x9f\xe2\x82\xac\x98",
        ];
        for bytes in cases {
            check_all_splits(bytes);
        }
    }

    #[test]
    fn the_carried_prefix_that_cannot_complete_is_one_replacement() {
        let mut carry = Utf8Carry::new();
        assert_eq!(carry.split(b"\xf0\x9f").rest().count(), 0);
        let split = carry.split(b"x");
        assert_eq!(split.head(), REPLACEMENT);
        assert_eq!(split.rest().collect::<Vec<_>>(), ["x"]);
        assert!(carry.is_empty());
    }

    #[test]
    fn short_chunks_keep_accumulating() {
        let mut carry = Utf8Carry::new();
        for b in [0xf0u8, 0x9f, 0x98] {
            let byte = [b];
            let split = carry.split(&byte);
            assert_eq!((split.head(), split.rest().count()), ("", 0));
        }
        assert_eq!(carry.pending(), b"\xf0\x9f\x98");
        assert_eq!(carry.split(b"\x80").head(), "😀");
        assert!(carry.is_empty());
        assert_eq!(carry.split(b"").head(), "");
    }

    #[test]
    fn lossy_pieces_are_maximal() {
        let pieces: Vec<&str> = Lossy::new(b"\xff\xfeab").collect();
        assert_eq!(pieces, [REPLACEMENT, REPLACEMENT, "ab"]);
        assert_eq!(Lossy::new(b"").count(), 0);
        assert_eq!(
            Lossy::new("plain €".as_bytes()).collect::<Vec<_>>(),
            ["plain €"]
        );
    }
}
