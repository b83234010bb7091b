//! Small chunks read as one machine word.
//!
//! Streaming hands the parser a few bytes at a time (a token is 3–5 bytes),
//! and most chunks need no decision: plain ASCII text with none of the
//! current state's stop bytes in it. Loading such a chunk (up to 8 bytes)
//! into a `u64` once answers "is it ASCII", "does it hold a `<`" and "does
//! it hold a byte a JSON string must escape" with a few arithmetic
//! instructions each, instead of a loop per question.
//!
//! Lanes past the chunk's length are zero. Each test below is exact for the
//! chunk's own bytes: the zero lanes never match a non-zero byte, and the
//! tests that would flag a zero lane mask the padding off.
//!
//! # Example
//! ```
//! use chat_parser_runtime::__private::{has_byte, is_ascii, needs_json_escape, Word};
//! let w = Word::new(b"a < b").unwrap();
//! assert!(is_ascii(w) && has_byte(w, b'<') && !has_byte(w, b'>'));
//! assert!(!needs_json_escape(w));
//! assert!(needs_json_escape(Word::new(b"a\"b").unwrap()));
//! assert!(Word::new(b"more than 8 bytes").is_none());
//! ```

const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Up to 8 bytes as a little-endian word, zero-padded, with their count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word {
    pub bits: u64,
    pub len: usize,
}

impl Word {
    /// No word: the chunk is longer than 8 bytes (tests then read its bytes).
    pub const NONE: Word = Word { bits: 0, len: usize::MAX };

    /// The word of a chunk of at most 8 bytes; `None` for a longer one.
    #[inline(always)]
    pub fn new(bytes: &[u8]) -> Option<Word> {
        let n = bytes.len();
        let bits = match n {
            0 => 0,
            // Two overlapping 4-byte loads: lanes both cover hold the same
            // byte, so OR-ing them changes nothing.
            4..=8 => {
                let (Ok(lo), Ok(hi)) = (<[u8; 4]>::try_from(&bytes[..4]), <[u8; 4]>::try_from(&bytes[n - 4..])) else {
                    return None;
                };
                u32::from_le_bytes(lo) as u64 | (u32::from_le_bytes(hi) as u64) << ((n - 4) * 8)
            }
            1..=3 => bytes[0] as u64 | (bytes[n / 2] as u64) << (n / 2 * 8) | (bytes[n - 1] as u64) << ((n - 1) * 8),
            _ => return None,
        };
        Some(Word { bits, len: n })
    }

    /// The word of the chunk without its last byte.
    #[inline(always)]
    pub fn without_last(self) -> Word {
        match self.len {
            1..=8 => Word { bits: self.bits & ((1u64 << ((self.len - 1) * 8)) - 1), len: self.len - 1 },
            _ => self,
        }
    }

    /// The high bit of each lane that holds a byte of the chunk.
    #[inline(always)]
    pub(crate) fn lanes(self) -> u64 {
        // (No chunk, no lanes: a shift by 64 is none.)
        HIGH.checked_shr(64 - 8 * self.len.min(8) as u32).unwrap_or(0)
    }
}

/// Whether every byte is ASCII.
#[inline(always)]
pub fn is_ascii(w: Word) -> bool {
    w.bits & HIGH == 0
}

/// Whether the chunk holds byte `b` (not zero). Exact for ASCII chunks.
#[inline(always)]
pub fn has_byte(w: Word, b: u8) -> bool {
    zero_lanes(w.bits ^ (LOW * b as u64)) != 0
}

/// The high bit set in each lane of `x` that is zero (and maybe in lanes
/// above one: exact as to whether there is any).
#[inline(always)]
fn zero_lanes(x: u64) -> u64 {
    x.wrapping_sub(LOW) & !x & HIGH
}

/// Whether a chunk holds a byte a JSON string must escape: `"`, `\` or a
/// control character (exact for any bytes: chunks of multi-byte
/// characters take it too). One branch for the three tests.
#[inline(always)]
pub fn needs_json_escape(w: Word) -> bool {
    // Flipping bit 1 maps `"` (0x22) to 0x20 and the control characters
    // onto themselves, so one test, "below 0x21", finds both (exact as to
    // whether there is one: a borrow only runs on from a lane it flags).
    // The padding lanes are zero, below too: masked off.
    let flipped = w.bits ^ (LOW * 0x02);
    let control_or_quote = flipped.wrapping_sub(LOW * 0x21) & !flipped & w.lanes();
    let backslash = zero_lanes(w.bits ^ (LOW * b'\\' as u64));
    control_or_quote | backslash != 0
}

/// The lanes (the high bit of each byte) of the 8 bytes `w` holding a
/// byte a JSON string cannot hold raw: `"`, `\`, a control character.
/// Exact in every lane, unlike the tests above (no borrow crosses lanes:
/// each lane's low seven bits are added to a constant that cannot carry
/// out of it), so a caller may walk them all.
///
/// ```
/// use chat_parser_runtime::__private::json_escape_lanes;
/// let lanes = json_escape_lanes(u64::from_le_bytes(*b"a\"#\\]\n x"));
/// assert_eq!(lanes, 0x0000_8000_8000_8000);
/// ```
#[inline(always)]
pub fn json_escape_lanes(w: u64) -> u64 {
    // Bit 1 flipped, as in `needs_json_escape`: `"` and the control
    // characters are the lanes below 0x21, those whose low seven bits
    // plus 0x5f stay below 0x80 with the high bit clear.
    let flipped = w ^ (LOW * 0x02);
    let control_or_quote = !((flipped & !HIGH) + LOW * 0x5f) & !flipped & HIGH;
    control_or_quote | byte_lanes(w, b'\\')
}

/// The lanes of `w` holding byte `b`, exact in every lane (as
/// [`json_escape_lanes`]).
#[inline(always)]
pub fn byte_lanes(w: u64, b: u8) -> u64 {
    // A lane is zero exactly when neither its low seven bits plus 0x7f nor
    // its high bit sets the high bit.
    let x = w ^ (LOW * u64::from(b));
    !(((x & !HIGH) + !HIGH) | x) & HIGH
}

/// Whether a stop may start in chunk `w`, given the bytes stops start
/// with (`firsts`) and the bytes they go on with (`follow`; a zero in
/// either: none): some first byte is followed by a second byte, or ends
/// the chunk (the start of a stop the next chunk may complete). `<` in
/// `a < b` or `Vec<u8>` is not the start of `</think>`.
///
/// Conservative: true when a first and a second byte of two different
/// stops meet (`<t` for `</think>` and `<tool_call>` is not a pair of
/// either stop, but may be), so that the caller checks the stops
/// themselves.
///
/// ```
/// use chat_parser_runtime::__private::{may_start_stop, Word};
/// let w = |s: &str| Word::new(s.as_bytes()).unwrap();
/// assert!(!may_start_stop(w("a < b"), [b'<', 0], [b'/', 0]));
/// assert!(may_start_stop(w("a </"), [b'<', 0], [b'/', 0]));
/// assert!(may_start_stop(w("a <"), [b'<', 0], [b'/', 0]));
/// ```
#[inline(always)]
pub fn may_start_stop(w: Word, firsts: [u8; 2], follow: [u8; 2]) -> bool {
    let lanes_of = |[a, b]: [u8; 2]| {
        let a = if a != 0 { byte_lanes(w.bits, a) } else { 0 };
        a | if b != 0 { byte_lanes(w.bits, b) } else { 0 }
    };
    let starts = lanes_of(firsts);
    // A first byte's lane moved onto the next byte's lane meets a second
    // byte there; the last byte's lane is the chunk's end.
    let last = match w.len {
        1..=8 => HIGH & (0xff << ((w.len - 1) * 8)),
        _ => 0,
    };
    (starts << 8) & lanes_of(follow) != 0 || starts & last != 0
}

/// Whether chunk `s`, with its word `w` (or [`Word::NONE`]), holds any of
/// `bytes`.
#[inline(always)]
pub fn holds_any<const N: usize>(s: &[u8], w: Word, bytes: [u8; N]) -> bool {
    holds_any_of(s, w, &bytes)
}

/// [`holds_any`] for bytes known only at run time (a table's stop set).
#[inline(always)]
pub fn holds_any_of(s: &[u8], w: Word, bytes: &[u8]) -> bool {
    if w.len <= 8 {
        bytes.iter().any(|&b| has_byte(w, b))
    } else {
        s.iter().any(|x| bytes.contains(x))
    }
}

/// Whether chunk `s`, with its word `w` (or [`Word::NONE`]), holds a byte a
/// JSON string must escape.
#[inline(always)]
pub fn holds_json_escape(s: &[u8], w: Word) -> bool {
    if w.len <= 8 {
        needs_json_escape(w)
    } else {
        s.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every test agrees with the byte loop on every chunk of up to 8 bytes
    /// drawn from bytes around the interesting values.
    #[test]
    fn word_tests_match_byte_loops() {
        let alphabet = [0u8, 1, 0x1f, 0x20, 0x21, b'"', 0x23, b'<', b'\\', b'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff];
        let mut chunk = [0u8; 8];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            crate::xorshift(&mut state);
            let len = (state % 9) as usize;
            for (i, c) in chunk.iter_mut().enumerate() {
                *c = alphabet[((state >> (8 + 4 * i)) % alphabet.len() as u64) as usize];
            }
            let bytes = &chunk[..len];
            let w = Word::new(bytes).unwrap();
            assert_eq!(is_ascii(w), bytes.is_ascii(), "{bytes:?}");
            // (Exact for any bytes: chunks of multi-byte characters take it.)
            let escape = bytes.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20);
            assert_eq!(needs_json_escape(w), escape, "{bytes:?}");
            if !bytes.is_ascii() {
                continue;
            }
            for b in [b'<', b'"', b'a', 1] {
                assert_eq!(has_byte(w, b), bytes.contains(&b), "{bytes:?} {b}");
            }
            assert_eq!(holds_json_escape(bytes, w), escape);
            if len > 0 {
                assert_eq!(w.without_last(), Word::new(&bytes[..len - 1]).unwrap());
            }
            assert_eq!(holds_json_escape(bytes, Word::NONE), escape);
            assert_eq!(holds_any(bytes, w, [b'<', b'a']), holds_any(bytes, Word::NONE, [b'<', b'a']));
            assert_eq!(holds_any_of(bytes, w, b"<a"), holds_any(bytes, w, [b'<', b'a']));
        }
        assert!(Word::new(&[b'a'; 9]).is_none());
    }
}
