//! A long text checked for UTF-8 sixteen bytes at a time, by table lookups
//! on the bytes' halves (x86-64 with SSSE3, found at run time).
//!
//! Text of many multi-byte characters (Chinese: three bytes each) is most of
//! what a one-shot parse of it costs: [`Utf8State`](crate::utf8::Utf8State)
//! reads it at about four instructions a byte. Here a block of 16 bytes is
//! checked at once, at about two a byte.
//!
//! # How a block is checked
//! Every error UTF-8 can hold shows in a byte and the one to three bytes
//! before it. For each byte, three 16-entry tables, looked up by the high
//! and low half of the byte before it and the high half of the byte itself
//! (one byte shuffle each), give a set of error bits; the bits all three
//! agree on are the errors of that pair:
//!
//! | bit | error | byte before | byte |
//! |---|---|---|---|
//! | `TOO_SHORT` | a lead byte not followed by a continuation byte | `11xxxxxx` | `0xxxxxxx`, `11xxxxxx` |
//! | `TOO_LONG` | a continuation byte after ASCII | `0xxxxxxx` | `10xxxxxx` |
//! | `OVERLONG_2` | a 2-byte form of ASCII | `C0`, `C1` | `10xxxxxx` |
//! | `OVERLONG_3` | a 3-byte form of a shorter character | `E0` | `80..=9F` |
//! | `SURROGATE` | U+D800..U+DFFF | `ED` | `A0..=BF` |
//! | `OVERLONG_4` | a 4-byte form of a shorter character | `F0` | `80..=8F` |
//! | `TOO_LARGE` | over U+10FFFF | `F4` / `F5..=FF` | `90..=BF` / `10xxxxxx` |
//! | `TWO_CONTS` | two continuation bytes | `10xxxxxx` | `10xxxxxx` |
//!
//! Two continuation bytes in a row are an error except as the third or
//! fourth byte of a character: there, and only there, `TWO_CONTS` must be
//! set. That is what the bytes two and three back decide (`E0` or more two
//! back, `F0` or more three back), compared with the table's bit by one
//! exclusive or. A text must also not end inside a character.
//!
//! The shuffle (`pshufb`) is SSSE3, which not every x86-64 CPU has
//! ([`crate::block::has_ssse3`]). Without it, and on other architectures,
//! [`check`] declines and the state machine reads the text.

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{
    __m128i, _mm_alignr_epi8, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setr_epi8,
    _mm_setzero_si128, _mm_shuffle_epi8, _mm_srli_epi16, _mm_subs_epu8, _mm_xor_si128,
};

/// The shortest text [`check`] takes: its last block is read overlapping the
/// one before it, both whole, so nothing is copied.
pub const MIN_LEN: usize = 32;

/// Whether `bytes` are UTF-8: `None` when they are fewer than 32 or
/// this CPU cannot check them here (the caller reads them with the state
/// machine).
///
/// ```
/// use chat_parser_runtime::__private::utf8_check_blocks;
/// let text = "中文的文本，十六个字节一块。".repeat(3);
/// if let Some(valid) = utf8_check_blocks(text.as_bytes()) {
///     assert!(valid);
///     assert_eq!(utf8_check_blocks(&text.as_bytes()[..40]), Some(false)); // cut inside a character
/// }
/// ```
#[inline]
pub fn check(bytes: &[u8]) -> Option<bool> {
    #[cfg(target_arch = "x86_64")]
    if bytes.len() >= MIN_LEN && crate::block::has_ssse3() {
        // SAFETY: the CPU has SSSE3.
        return Some(unsafe { check_ssse3(bytes) });
    }
    let _ = bytes;
    None
}

// The error bits of the module's table.
const TOO_SHORT: u8 = 1 << 0;
const TOO_LONG: u8 = 1 << 1;
const OVERLONG_3: u8 = 1 << 2;
const TOO_LARGE: u8 = 1 << 3;
const SURROGATE: u8 = 1 << 4;
const OVERLONG_2: u8 = 1 << 5;
/// `F5..=FF` then `80..=8F` (over U+10FFFF), and `F0` then `80..=8F`
/// (overlong): one bit, the byte before's low half tells them apart.
const TOO_LARGE_1000: u8 = 1 << 6;
const OVERLONG_4: u8 = 1 << 6;
/// Must be the bit the third and fourth bytes' test sets (`0x80`).
const TWO_CONTS: u8 = 1 << 7;
/// The errors a lead byte's low half does not decide.
const CARRY: u8 = TOO_SHORT | TOO_LONG | TWO_CONTS;

/// By the high half of the byte before.
const BEFORE_HIGH: [u8; 16] = [
    TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, TOO_LONG, // ASCII
    TWO_CONTS, TWO_CONTS, TWO_CONTS, TWO_CONTS, // continuation
    TOO_SHORT | OVERLONG_2,                  // C_
    TOO_SHORT,                               // D_
    TOO_SHORT | OVERLONG_3 | SURROGATE,      // E_
    TOO_SHORT | TOO_LARGE | TOO_LARGE_1000 | OVERLONG_4, // F_
];

/// By the low half of the byte before.
const BEFORE_LOW: [u8; 16] = [
    CARRY | OVERLONG_2 | OVERLONG_3 | OVERLONG_4, // _0
    CARRY | OVERLONG_2,                           // _1
    CARRY,
    CARRY,
    CARRY | TOO_LARGE, // _4
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000 | SURROGATE, // _D
    CARRY | TOO_LARGE | TOO_LARGE_1000,
    CARRY | TOO_LARGE | TOO_LARGE_1000,
];

/// By the high half of the byte itself.
const BYTE_HIGH: [u8; 16] = [
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, // ASCII
    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE_1000 | OVERLONG_4, // 8_
    TOO_LONG | OVERLONG_2 | TWO_CONTS | OVERLONG_3 | TOO_LARGE,                   // 9_
    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,                    // A_
    TOO_LONG | OVERLONG_2 | TWO_CONTS | SURROGATE | TOO_LARGE,                    // B_
    TOO_SHORT, TOO_SHORT, TOO_SHORT, TOO_SHORT, // lead bytes
];

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn table(t: [u8; 16]) -> __m128i {
    let t = t.map(|b| b as i8);
    _mm_setr_epi8(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15])
}

/// The error bits of block `bytes`, given the block before it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn block_errors(bytes: __m128i, before: __m128i, [before_high, before_low, byte_high]: [__m128i; 3]) -> __m128i {
    let low_half = _mm_set1_epi8(0x0f);
    // The bytes one, two and three back, across the blocks' edge.
    let back1 = _mm_alignr_epi8::<15>(bytes, before);
    let back2 = _mm_alignr_epi8::<14>(bytes, before);
    let back3 = _mm_alignr_epi8::<13>(bytes, before);
    let high = |v| _mm_and_si128(_mm_srli_epi16::<4>(v), low_half);
    let pair = _mm_and_si128(
        _mm_and_si128(_mm_shuffle_epi8(before_high, high(back1)), _mm_shuffle_epi8(before_low, _mm_and_si128(back1, low_half))),
        _mm_shuffle_epi8(byte_high, high(bytes)),
    );
    // Third byte: `E0` or more two back; fourth: `F0` or more three back.
    // Subtracting (saturated) 0x60 or 0x70 leaves 0x80 or more just then.
    let third = _mm_subs_epu8(back2, _mm_set1_epi8(0x60));
    let fourth = _mm_subs_epu8(back3, _mm_set1_epi8(0x70));
    let must_continue = _mm_and_si128(_mm_or_si128(third, fourth), _mm_set1_epi8(TWO_CONTS as i8));
    _mm_xor_si128(must_continue, pair)
}

/// Nonzero where `bytes`, the last block, ends inside a character: a lead
/// byte of two, three or four bytes last, next to last or third from last.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn ends_inside(bytes: __m128i) -> __m128i {
    let m = -1;
    let max = _mm_setr_epi8(m, m, m, m, m, m, m, m, m, m, m, m, m, 0xef_u8 as i8, 0xdf_u8 as i8, 0xbf_u8 as i8);
    _mm_subs_epu8(bytes, max)
}

/// [`check`] with SSSE3. Blocks of ASCII are passed over, two at a time
/// where they can be. A run of blocks that are not ASCII is checked block
/// by block, each against the one before it (the first against zeros,
/// which the tables read as they read any ASCII); the block of ASCII after
/// the run only must not follow a character cut short. The last 16 bytes
/// are then checked against the 16 before them, read overlapping the
/// blocks (the errors of a block depend only on it and the block before
/// it), and the text must not end inside a character.
///
/// # Safety
/// The CPU has SSSE3; `bytes` holds at least [`MIN_LEN`] bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn check_ssse3(bytes: &[u8]) -> bool {
    use crate::block::BLOCK;
    let tables = [table(BEFORE_HIGH), table(BEFORE_LOW), table(BYTE_HIGH)];
    let len = bytes.len();
    // SAFETY (of each call): `at + 16 <= len`.
    let load = |at: usize| _mm_loadu_si128(bytes.as_ptr().add(at).cast());
    let ascii = |v| _mm_movemask_epi8(v) == 0;
    let mut errors = _mm_setzero_si128();
    let mut i = 0;
    loop {
        while i + 2 * BLOCK <= len && ascii(_mm_or_si128(load(i), load(i + BLOCK))) {
            i += 2 * BLOCK;
        }
        while i + BLOCK <= len && ascii(load(i)) {
            i += BLOCK;
        }
        if i + BLOCK > len {
            break;
        }
        let mut before = _mm_setzero_si128();
        let mut v = load(i);
        loop {
            errors = _mm_or_si128(errors, block_errors(v, before, tables));
            i += BLOCK;
            if i + BLOCK > len {
                break;
            }
            (before, v) = (v, load(i));
            if ascii(v) {
                errors = _mm_or_si128(errors, ends_inside(before));
                i += BLOCK;
                break;
            }
        }
    }
    debug_assert!(len >= MIN_LEN);
    if len >= MIN_LEN {
        let last = load(len - BLOCK);
        if len % BLOCK != 0 {
            errors = _mm_or_si128(errors, block_errors(last, load(len - 2 * BLOCK), tables));
        }
        errors = _mm_or_si128(errors, ends_inside(last));
    }
    _mm_movemask_epi8(_mm_cmpeq_epi8(errors, _mm_setzero_si128())) == 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pair of bytes (and every lead byte with each byte after it
    /// cut, or followed by continuation bytes) in the middle of a long
    /// text, at each offset from a block's edge: the same answer as the
    /// standard check, from the blocks (where this CPU has SSSE3) and from
    /// `utf8_text`, whichever way it reads them.
    #[test]
    fn every_pair_and_triple_agrees_with_the_standard_check() {
        let mut buf = [b'a'; 80];
        for x in 0..=255u8 {
            for y in 0..=255u8 {
                for z in [b'a', 0x80, 0xc0] {
                    // Lanes 13, 14, 15 and 0 of a block, before more
                    // blocks (cut or not) and at the text's end.
                    for at in [13, 14, 15, 16, 29, 30, 31, 32, 77] {
                        buf.fill(b'a');
                        for (k, b) in [x, y, z, 0x80].into_iter().enumerate() {
                            if let Some(d) = buf.get_mut(at + k) {
                                *d = b;
                            }
                        }
                        for len in [at + 2, 80] {
                            let text = &buf[..len.min(80)];
                            let valid = core::str::from_utf8(text).is_ok();
                            assert_eq!(crate::block::utf8_text(text).is_some(), valid, "{text:?}");
                            assert!(check(text).is_none_or(|v| v == valid), "{text:?}");
                        }
                    }
                }
            }
        }
    }

    /// A character of two, three or four bytes at every position of texts
    /// of 32 to 64 bytes, in ASCII or among other characters: across the
    /// edge of every block, the overlapping last one's included.
    #[test]
    fn a_character_anywhere_in_a_short_text_agrees_with_the_standard_check() {
        let mut buf = [0u8; 64];
        for background in ["a", "é"] {
            for wide in ["ß", "中", "🙂"] {
                for len in MIN_LEN..=64 {
                    for at in 0..=len - wide.len() {
                        for (k, b) in buf.iter_mut().enumerate() {
                            *b = background.as_bytes()[k % background.len()];
                        }
                        buf[at..at + wide.len()].copy_from_slice(wide.as_bytes());
                        // Whole, then without its last byte (a cut
                        // character, or a byte of `é` cut off after it).
                        for cut in [0, 1] {
                            let text = &buf[..len];
                            let mut text_cut = [0u8; 64];
                            text_cut[..len].copy_from_slice(text);
                            text_cut.copy_within(at + wide.len()..len, at + wide.len() - cut);
                            let text = &text_cut[..len - cut];
                            let valid = core::str::from_utf8(text).is_ok();
                            assert_eq!(crate::block::utf8_text(text).is_some(), valid, "{text:?}");
                            assert!(check(text).is_none_or(|v| v == valid), "{text:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn declines_short_texts() {
        assert_eq!(check(&[b'a'; MIN_LEN - 1]), None);
    }
}
