//! A long text checked for UTF-8 16 or 32 bytes at a time, by table lookups
//! on the bytes' halves (x86-64 with SSSE3 or AVX2, found at run time).
//!
//! Text of many multi-byte characters (Chinese: three bytes each) is most of
//! what a one-shot parse of it costs: [`Utf8State`](crate::utf8::Utf8State)
//! reads it at about four instructions a byte. Here a register of 16 bytes
//! (SSSE3) or 32 (AVX2) is checked at once, at about two or one a byte.
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
//! ([`crate::block::has_ssse3`]); its 32-byte form is AVX2
//! ([`crate::block::has_avx2`]). The check is written once ([`Lanes`]) for
//! both. Without either, and on other architectures, [`check`] declines and
//! the state machine reads the text.

// (The tables serve only the x86-64 checks.)
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::*;

/// The shortest text [`check`] takes: its last register is read
/// overlapping the one before it, both whole, so nothing is copied.
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
    {
        use crate::block::{has_avx2, has_ssse3};
        if bytes.len() >= 2 * <__m256i as Lanes>::LEN && has_avx2() {
            // SAFETY: the CPU has AVX2; the text holds two registers.
            return Some(unsafe { check_avx2(bytes) });
        }
        if bytes.len() >= MIN_LEN && has_ssse3() {
            // SAFETY: the CPU has SSSE3; the text holds two registers.
            return Some(unsafe { check_ssse3(bytes) });
        }
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

/// A register of bytes, the unit the check reads: 16 (SSSE3) or 32 (AVX2).
/// Each operation is what the check needs of it; all are inlined into the
/// one function per register that enables its instructions.
#[cfg(target_arch = "x86_64")]
trait Lanes: Copy {
    /// The bytes a register holds.
    const LEN: usize;
    /// Loads the `LEN` bytes at `at`.
    ///
    /// # Safety
    /// They are readable; the CPU has the register's instructions.
    unsafe fn load(at: *const u8) -> Self;
    /// The 16-entry table `t` in each 16-byte lane.
    unsafe fn table(t: [u8; 16]) -> Self;
    unsafe fn zero() -> Self;
    unsafe fn or(self, other: Self) -> Self;
    /// Whether every byte is ASCII.
    unsafe fn ascii(self) -> bool;
    /// Whether every byte is zero.
    unsafe fn zeros(self) -> bool;
    /// The register of the bytes `N` places back: the last `N` bytes of
    /// `before`, then the first bytes of `self`.
    unsafe fn back<const N: i32>(self, before: Self) -> Self;
    /// Each byte looked up in `table` (16 entries) by its low half.
    unsafe fn lookup(self, table: Self) -> Self;
    /// Each byte's high half.
    unsafe fn high_half(self) -> Self;
    unsafe fn low_half(self) -> Self;
    unsafe fn and(self, other: Self) -> Self;
    unsafe fn xor(self, other: Self) -> Self;
    /// Each byte less `n`, down to 0 at least.
    unsafe fn saturating_sub(self, n: u8) -> Self;
    /// Each byte of `n`.
    unsafe fn splat(n: u8) -> Self;
    /// Each byte less the bytes of `max`, which are 0xff but for the last
    /// three: 0xef, 0xdf, 0xbf.
    unsafe fn less_last_three(self) -> Self;
}

#[cfg(target_arch = "x86_64")]
impl Lanes for __m128i {
    const LEN: usize = 16;
    #[inline(always)]
    unsafe fn load(at: *const u8) -> Self {
        _mm_loadu_si128(at.cast())
    }
    #[inline(always)]
    unsafe fn table(t: [u8; 16]) -> Self {
        _mm_loadu_si128(t.as_ptr().cast())
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        _mm_setzero_si128()
    }
    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        _mm_or_si128(self, other)
    }
    #[inline(always)]
    unsafe fn ascii(self) -> bool {
        _mm_movemask_epi8(self) == 0
    }
    #[inline(always)]
    unsafe fn zeros(self) -> bool {
        _mm_movemask_epi8(_mm_cmpeq_epi8(self, _mm_setzero_si128())) == 0xffff
    }
    #[inline(always)]
    unsafe fn back<const N: i32>(self, before: Self) -> Self {
        // (`alignr` takes the shift as a constant expression of its own.)
        match N {
            1 => _mm_alignr_epi8::<15>(self, before),
            2 => _mm_alignr_epi8::<14>(self, before),
            _ => _mm_alignr_epi8::<13>(self, before),
        }
    }
    #[inline(always)]
    unsafe fn lookup(self, table: Self) -> Self {
        _mm_shuffle_epi8(table, self)
    }
    #[inline(always)]
    unsafe fn high_half(self) -> Self {
        _mm_and_si128(_mm_srli_epi16::<4>(self), _mm_set1_epi8(0x0f))
    }
    #[inline(always)]
    unsafe fn low_half(self) -> Self {
        _mm_and_si128(self, _mm_set1_epi8(0x0f))
    }
    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        _mm_and_si128(self, other)
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        _mm_xor_si128(self, other)
    }
    #[inline(always)]
    unsafe fn saturating_sub(self, n: u8) -> Self {
        _mm_subs_epu8(self, _mm_set1_epi8(n as i8))
    }
    #[inline(always)]
    unsafe fn splat(n: u8) -> Self {
        _mm_set1_epi8(n as i8)
    }
    #[inline(always)]
    unsafe fn less_last_three(self) -> Self {
        let m = -1;
        _mm_subs_epu8(self, _mm_setr_epi8(m, m, m, m, m, m, m, m, m, m, m, m, m, 0xef_u8 as i8, 0xdf_u8 as i8, 0xbf_u8 as i8))
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for __m256i {
    const LEN: usize = 32;
    #[inline(always)]
    unsafe fn load(at: *const u8) -> Self {
        _mm256_loadu_si256(at.cast())
    }
    #[inline(always)]
    unsafe fn table(t: [u8; 16]) -> Self {
        _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        _mm256_setzero_si256()
    }
    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        _mm256_or_si256(self, other)
    }
    #[inline(always)]
    unsafe fn ascii(self) -> bool {
        _mm256_movemask_epi8(self) == 0
    }
    #[inline(always)]
    unsafe fn zeros(self) -> bool {
        _mm256_testz_si256(self, self) == 1
    }
    #[inline(always)]
    unsafe fn back<const N: i32>(self, before: Self) -> Self {
        // The shuffles work within 16-byte lanes: the bytes before the low
        // lane are the high lane of `before`.
        let between = _mm256_permute2x128_si256::<0x21>(before, self);
        match N {
            1 => _mm256_alignr_epi8::<15>(self, between),
            2 => _mm256_alignr_epi8::<14>(self, between),
            _ => _mm256_alignr_epi8::<13>(self, between),
        }
    }
    #[inline(always)]
    unsafe fn lookup(self, table: Self) -> Self {
        _mm256_shuffle_epi8(table, self)
    }
    #[inline(always)]
    unsafe fn high_half(self) -> Self {
        _mm256_and_si256(_mm256_srli_epi16::<4>(self), _mm256_set1_epi8(0x0f))
    }
    #[inline(always)]
    unsafe fn low_half(self) -> Self {
        _mm256_and_si256(self, _mm256_set1_epi8(0x0f))
    }
    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        _mm256_and_si256(self, other)
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        _mm256_xor_si256(self, other)
    }
    #[inline(always)]
    unsafe fn saturating_sub(self, n: u8) -> Self {
        _mm256_subs_epu8(self, _mm256_set1_epi8(n as i8))
    }
    #[inline(always)]
    unsafe fn splat(n: u8) -> Self {
        _mm256_set1_epi8(n as i8)
    }
    #[inline(always)]
    unsafe fn less_last_three(self) -> Self {
        let m = -1;
        #[rustfmt::skip]
        let max = _mm256_setr_epi8(
            m, m, m, m, m, m, m, m, m, m, m, m, m, m, m, m,
            m, m, m, m, m, m, m, m, m, m, m, m, m, 0xef_u8 as i8, 0xdf_u8 as i8, 0xbf_u8 as i8,
        );
        _mm256_subs_epu8(self, max)
    }
}

/// The error bits of register `bytes`, given the register before it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block_errors<V: Lanes>(bytes: V, before: V, [before_high, before_low, byte_high]: [V; 3]) -> V {
    // The bytes one, two and three back, across the registers' edge.
    let back1 = bytes.back::<1>(before);
    let pair = back1.high_half().lookup(before_high).and(back1.low_half().lookup(before_low)).and(bytes.high_half().lookup(byte_high));
    // Third byte: `E0` or more two back; fourth: `F0` or more three back.
    // Subtracting (saturated) 0x60 or 0x70 leaves 0x80 or more just then.
    let third = bytes.back::<2>(before).saturating_sub(0x60);
    let fourth = bytes.back::<3>(before).saturating_sub(0x70);
    third.or(fourth).and(V::splat(TWO_CONTS)).xor(pair)
}

/// [`check`] by registers `V`. Registers of ASCII are passed over, two at
/// a time where they can be. A run of registers that are not ASCII is
/// checked register by register, each against the one before it (the
/// first against zeros, which the tables read as they read any ASCII); the
/// register of ASCII after the run only must not follow a character cut
/// short (a lead byte among its last three). The last `LEN` bytes are then
/// checked against the `LEN` before them, read overlapping the registers
/// (the errors of a register depend only on it and the one before it), and
/// the text must not end inside a character.
///
/// # Safety
/// The CPU has `V`'s instructions; `bytes` holds at least `2 * V::LEN`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn check_with<V: Lanes>(bytes: &[u8]) -> bool {
    let tables = [V::table(BEFORE_HIGH), V::table(BEFORE_LOW), V::table(BYTE_HIGH)];
    let (len, step) = (bytes.len(), V::LEN);
    // SAFETY (of each call): `at + step <= len`.
    let load = |at: usize| V::load(bytes.as_ptr().add(at));
    let mut errors = V::zero();
    let mut i = 0;
    loop {
        while i + 2 * step <= len && load(i).or(load(i + step)).ascii() {
            i += 2 * step;
        }
        while i + step <= len && load(i).ascii() {
            i += step;
        }
        if i + step > len {
            break;
        }
        let mut before = V::zero();
        let mut v = load(i);
        loop {
            errors = errors.or(block_errors(v, before, tables));
            i += step;
            if i + step > len {
                break;
            }
            (before, v) = (v, load(i));
            if v.ascii() {
                errors = errors.or(before.less_last_three());
                i += step;
                break;
            }
        }
    }
    debug_assert!(len >= 2 * step);
    if len >= 2 * step {
        let last = load(len - step);
        if len % step != 0 {
            errors = errors.or(block_errors(last, load(len - 2 * step), tables));
        }
        errors = errors.or(last.less_last_three());
    }
    errors.zeros()
}

/// [`check_with`] 16 bytes at a time.
///
/// # Safety
/// The CPU has SSSE3; `bytes` holds at least 32 bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn check_ssse3(bytes: &[u8]) -> bool {
    check_with::<__m128i>(bytes)
}

/// [`check_with`] 32 bytes at a time.
///
/// # Safety
/// The CPU has AVX2; `bytes` holds at least 64 bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn check_avx2(bytes: &[u8]) -> bool {
    check_with::<__m256i>(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check` and each register's check this CPU can run on `text`: all
    /// must be `valid`.
    fn agrees(text: &[u8], valid: bool) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use crate::block::{has_avx2, has_ssse3};
            // SAFETY: the CPU has the instructions; the lengths are tested.
            if has_ssse3() && text.len() >= 32 && unsafe { check_ssse3(text) } != valid {
                return false;
            }
            // SAFETY: as above.
            if has_avx2() && text.len() >= 64 && unsafe { check_avx2(text) } != valid {
                return false;
            }
        }
        check(text).is_none_or(|v| v == valid)
    }

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
                    // Lanes 13, 14, 15 and 0 of a 16-byte block (and of a
                    // 32-byte one's lanes), before more blocks (cut or not)
                    // and at the text's end.
                    for at in [13, 14, 15, 16, 29, 30, 31, 32, 45, 47, 48, 77] {
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
                            assert!(agrees(text, valid), "{text:?}");
                        }
                    }
                }
            }
        }
    }

    /// A character of two, three or four bytes at every position of texts
    /// of 32 to 130 bytes, in ASCII or among other characters: across the
    /// edge of every register, the overlapping last one's included.
    #[test]
    fn a_character_anywhere_in_a_short_text_agrees_with_the_standard_check() {
        let mut buf = [0u8; 130];
        for background in ["a", "é"] {
            for wide in ["ß", "中", "🙂"] {
                for len in MIN_LEN..=130 {
                    for at in 0..=len - wide.len() {
                        for (k, b) in buf.iter_mut().enumerate() {
                            *b = background.as_bytes()[k % background.len()];
                        }
                        buf[at..at + wide.len()].copy_from_slice(wide.as_bytes());
                        // Whole, then without its last byte (a cut
                        // character, or a byte of `é` cut off after it).
                        for cut in [0, 1] {
                            let text = &buf[..len];
                            let mut text_cut = [0u8; 130];
                            text_cut[..len].copy_from_slice(text);
                            text_cut.copy_within(at + wide.len()..len, at + wide.len() - cut);
                            let text = &text_cut[..len - cut];
                            let valid = core::str::from_utf8(text).is_ok();
                            assert_eq!(crate::block::utf8_text(text).is_some(), valid, "{text:?}");
                            assert!(agrees(text, valid), "{text:?}");
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
