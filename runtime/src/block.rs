//! Long texts read sixteen bytes at a time.
//!
//! A one-shot parse reads long runs that need no decision: an argument of
//! source code up to its next escape, a whole output checked for UTF-8.
//! Each question about a run ("where is the next byte a JSON string cannot
//! hold raw", "is it ASCII") is answered for a block of 16 bytes at once, as
//! a bit mask: bit `i` for byte `i` of the block, so `trailing_zeros` is the
//! first such byte and clearing the lowest bit walks them all.
//!
//! On x86-64 a block is one SSE2 vector (SSE2 is part of every x86-64
//! CPU, so nothing is detected at run time); elsewhere it is two words with
//! the same answers ([`crate::word::json_escape_lanes`]).
//!
//! # Example
//! ```
//! use chat_parser_runtime::__private::{block_at, json_specials, non_ascii};
//! let text = r#"say("C:\\dev")  # é."#.as_bytes();
//! let b = block_at(text, 0).unwrap();
//! // `"` at 4 and 12, `\` at 7 and 8.
//! assert_eq!(json_specials(b), 1 << 4 | 1 << 7 | 1 << 8 | 1 << 12);
//! assert_eq!(non_ascii(b), 0);
//! assert_eq!(non_ascii(block_at(text, 5).unwrap()).trailing_zeros(), 13);
//! ```

/// The bytes a block holds.
pub const BLOCK: usize = 16;

/// The block of `bytes` at `at`, when 16 bytes are left there.
#[inline(always)]
pub fn block_at(bytes: &[u8], at: usize) -> Option<&[u8; BLOCK]> {
    bytes.get(at..at.checked_add(BLOCK)?)?.try_into().ok()
}

/// The bytes of `b` that a JSON string cannot hold raw: `"`, `\` and the
/// control characters below U+0020.
#[inline(always)]
pub fn json_specials(b: &[u8; BLOCK]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};
        // SAFETY: the load reads the 16 bytes of `b` (unaligned loads
        // allowed); SSE2 is enabled on every x86-64 target.
        unsafe {
            let v = _mm_loadu_si128(b.as_ptr().cast());
            let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
            let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
            // Below 0x20 (unsigned): the byte is its own minimum with 0x1f.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        json_specials_by_words(b)
    }
}

/// The bytes of `b` that are not ASCII.
#[inline(always)]
pub fn non_ascii(b: &[u8; BLOCK]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8};
        // SAFETY: as in `json_specials`.
        unsafe { _mm_movemask_epi8(_mm_loadu_si128(b.as_ptr().cast())) as u32 }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        non_ascii_by_words(b)
    }
}

/// The bytes of a text where one of `pairs` starts: bit `i` when byte `i`
/// of `b0` and byte `i` of `b1` (the block one byte further on) are one of
/// the pairs. Finds a stop by its first two bytes (`</` of
/// `</parameter>`), not stopping at each `<` of source code.
#[inline(always)]
pub fn pairs_in<const K: usize>(b0: &[u8; BLOCK], b1: &[u8; BLOCK], pairs: [[u8; 2]; K]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128};
        // SAFETY: as in `json_specials`.
        unsafe {
            let v0 = _mm_loadu_si128(b0.as_ptr().cast());
            let v1 = _mm_loadu_si128(b1.as_ptr().cast());
            let mut hits = _mm_setzero_si128();
            for [x, y] in pairs {
                let pair = _mm_and_si128(_mm_cmpeq_epi8(v0, _mm_set1_epi8(x as i8)), _mm_cmpeq_epi8(v1, _mm_set1_epi8(y as i8)));
                hits = _mm_or_si128(hits, pair);
            }
            _mm_movemask_epi8(hits) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        pairs_in_by_words(b0, b1, pairs)
    }
}

/// A 32-byte block (one AVX2 register).
#[cfg(target_arch = "x86_64")]
pub const WIDE: usize = 32;

/// [`pairs_in`] for 32-byte blocks.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub unsafe fn pairs_in_wide<const K: usize>(b0: &[u8; WIDE], b1: &[u8; WIDE], pairs: [[u8; 2]; K]) -> u32 {
    use core::arch::x86_64::{_mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm256_setzero_si256};
    // SAFETY: the loads read the 32 bytes of `b0` and `b1` (unaligned
    // loads allowed); the caller's CPU has AVX2.
    unsafe {
        let v0 = _mm256_loadu_si256(b0.as_ptr().cast());
        let v1 = _mm256_loadu_si256(b1.as_ptr().cast());
        let mut hits = _mm256_setzero_si256();
        for [x, y] in pairs {
            let pair = _mm256_and_si256(_mm256_cmpeq_epi8(v0, _mm256_set1_epi8(x as i8)), _mm256_cmpeq_epi8(v1, _mm256_set1_epi8(y as i8)));
            hits = _mm256_or_si256(hits, pair);
        }
        _mm256_movemask_epi8(hits) as u32
    }
}

/// [`pairs_in`] from words.
#[inline(always)]
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn pairs_in_by_words<const K: usize>(b0: &[u8; BLOCK], b1: &[u8; BLOCK], pairs: [[u8; 2]; K]) -> u32 {
    let mut mask = 0;
    for k in 0..2 {
        let (w0, w1) = (word_of(b0, k), word_of(b1, k));
        let lanes = pairs.iter().fold(0, |l, &[x, y]| l | (crate::word::byte_lanes(w0, x) & crate::word::byte_lanes(w1, y)));
        mask |= u32::from(gather(lanes)) << (8 * k);
    }
    mask
}

/// [`json_specials`] from two words (the portable form, tested against the
/// vector one).
#[inline(always)]
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn json_specials_by_words(b: &[u8; BLOCK]) -> u32 {
    by_words(b, crate::word::json_escape_lanes)
}

/// [`non_ascii`] from two words.
#[inline(always)]
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn non_ascii_by_words(b: &[u8; BLOCK]) -> u32 {
    by_words(b, |w| w & 0x8080_8080_8080_8080)
}

/// The mask of a block whose words' lanes (the high bit of each byte) are
/// given by `lanes`.
#[inline(always)]
fn by_words(b: &[u8; BLOCK], lanes: impl Fn(u64) -> u64) -> u32 {
    u32::from(gather(lanes(word_of(b, 0)))) | u32::from(gather(lanes(word_of(b, 1)))) << 8
}

/// Word `k` (0 or 1) of a block, little-endian.
#[inline(always)]
fn word_of(b: &[u8; BLOCK], k: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[8 * k..8 * k + 8]);
    u64::from_le_bytes(w)
}

/// The high bits of a word's eight lanes as the eight bits of a byte:
/// each lane's bit, moved to bit 7 of the lane, lands by one multiply on
/// its own bit of the top byte (no two products overlap).
#[inline(always)]
fn gather(lanes: u64) -> u8 {
    ((lanes >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// Whether the CPU has SSSE3 (the byte shuffle `pshufb`, which the UTF-8
/// check and the JSON escape use to look bytes up in 16-entry tables).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_ssse3() -> bool {
    cfg!(target_feature = "ssse3") || cpu() & SSSE3 != 0
}

/// Whether the CPU has AVX2 and the system saves its registers (the UTF-8
/// check 32 bytes at a time).
#[cfg(target_arch = "x86_64")]
#[inline]
pub(crate) fn has_avx2() -> bool {
    cfg!(target_feature = "avx2") || cpu() & AVX2 != 0
}

#[cfg(target_arch = "x86_64")]
const ASKED: u8 = 1;
#[cfg(target_arch = "x86_64")]
const SSSE3: u8 = 2;
#[cfg(target_arch = "x86_64")]
const AVX2: u8 = 4;

/// What the CPU has, as `ASKED | SSSE3 | AVX2` bits: asked once (`cpuid`,
/// no `std` needed), then read from a static.
#[cfg(target_arch = "x86_64")]
#[inline]
fn cpu() -> u8 {
    use core::sync::atomic::{AtomicU8, Ordering};
    static CPU: AtomicU8 = AtomicU8::new(0);
    let known = CPU.load(Ordering::Relaxed);
    if known & ASKED != 0 {
        return known;
    }
    // (The races of two first callers store the same answer.)
    let found = ask_cpu();
    CPU.store(found, Ordering::Relaxed);
    found
}

/// [`cpu`], asked.
#[cfg(target_arch = "x86_64")]
#[cold]
fn ask_cpu() -> u8 {
    use core::arch::x86_64::{__cpuid, __cpuid_count, _xgetbv};
    // (`cpuid` faults inside an SGX enclave.)
    if cfg!(target_env = "sgx") {
        return ASKED;
    }
    #[allow(unused_unsafe)]
    // SAFETY: `cpuid` exists on every x86-64 CPU.
    let (max_leaf, leaf1) = unsafe { (__cpuid(0).eax, __cpuid(1)) };
    let mut found = ASKED;
    // Leaf 1: ECX bit 9 SSSE3, bit 27 OSXSAVE (the system saves registers
    // it enables), bit 28 AVX.
    if leaf1.ecx & (1 << 9) != 0 {
        found |= SSSE3;
    }
    if leaf1.ecx & (1 << 27 | 1 << 28) == 1 << 27 | 1 << 28 && max_leaf >= 7 {
        // SAFETY: OSXSAVE says `xgetbv` is enabled; leaf 7 exists.
        #[allow(unused_unsafe)]
        let (saved, leaf7) = unsafe { (_xgetbv(0), __cpuid_count(7, 0)) };
        // The system saves the 16- and 32-byte registers (bits 1 and 2);
        // leaf 7 EBX bit 5 is AVX2.
        if saved & 0b110 == 0b110 && leaf7.ebx & (1 << 5) != 0 {
            found |= AVX2;
        }
    }
    found
}

/// `bytes` as text, if they are UTF-8. A text of 32 bytes or more, on a
/// CPU with SSSE3 or AVX2, by registers of 16 or 32 bytes (`utf8_vector`:
/// about two or one instructions a byte of multi-byte characters);
/// otherwise a block of ASCII between two characters at a time, and the
/// other blocks byte by byte by
/// [`Utf8State`](crate::utf8::Utf8State) (a load and a shift a byte).
///
/// ```
/// use chat_parser_runtime::__private::utf8_text;
/// assert_eq!(utf8_text("plain ascii, then é and 中文".as_bytes()), Some("plain ascii, then é and 中文"));
/// assert_eq!(utf8_text(b"cut \xe4\xb8"), None);
/// ```
#[inline]
pub fn utf8_text(bytes: &[u8]) -> Option<&str> {
    // A long text, where the CPU can: checked by blocks of any content.
    if let Some(valid) = crate::utf8_vector::check(bytes) {
        // SAFETY: the check found `bytes` valid UTF-8.
        return valid.then(|| unsafe { core::str::from_utf8_unchecked(bytes) });
    }
    let mut state = crate::utf8::Utf8State::START;
    let mut i = 0;
    loop {
        // Between characters (or failed for good), ASCII leaves the state
        // where it is.
        while block_at(bytes, i).is_some_and(|b| non_ascii(b) == 0) {
            i += BLOCK;
        }
        // Then whole blocks up to one that ends in ASCII, which leaves the
        // state between characters or failed. (Text of many multi-byte
        // characters stays in this loop; reading only from a block's first
        // non-ASCII byte saves little on text of a few.)
        while let Some(b) = block_at(bytes, i) {
            state = state.read(b);
            i += BLOCK;
            if b[BLOCK - 1].is_ascii() {
                break;
            }
        }
        if block_at(bytes, i).is_none() {
            break;
        }
    }
    state = state.read(bytes.get(i..).unwrap_or_default());
    // SAFETY: the state machine read every byte not in an ASCII block
    // between characters, and ended between characters.
    state.at_boundary().then(|| unsafe { core::str::from_utf8_unchecked(bytes) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks() -> impl Iterator<Item = [u8; BLOCK]> {
        let alphabet = [0u8, 1, 0x1f, 0x20, 0x21, b'"', b'#', b'<', b'\\', b']', b'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..100_000).map(move |_| {
            crate::xorshift(&mut state);
            let s = state;
            core::array::from_fn(|k| alphabet[((s >> (3 * k)) ^ (s >> (k + 40))) as usize % alphabet.len()])
        })
    }

    #[test]
    fn masks_agree_with_byte_tests_in_both_forms() {
        for b in blocks() {
            let specials = b.iter().enumerate().filter(|(_, &x)| x == b'"' || x == b'\\' || x < 0x20).fold(0u32, |m, (k, _)| m | 1 << k);
            let high = b.iter().enumerate().filter(|(_, &x)| x >= 0x80).fold(0u32, |m, (k, _)| m | 1 << k);
            assert_eq!(json_specials(&b), specials, "{b:?}");
            assert_eq!(json_specials_by_words(&b), specials, "{b:?}");
            assert_eq!(non_ascii(&b), high, "{b:?}");
            assert_eq!(non_ascii_by_words(&b), high, "{b:?}");
            // Pairs against the block shifted by one (its last byte `#`).
            let mut next = [b'#'; BLOCK];
            next[..BLOCK - 1].copy_from_slice(&b[1..]);
            let pairs = [[b'<', b'\\'], [0x80, b'#']];
            let hits = (0..BLOCK).filter(|&k| pairs.contains(&[b[k], next[k]])).fold(0u32, |m, k| m | 1 << k);
            assert_eq!(pairs_in(&b, &next, pairs), hits, "{b:?}");
            assert_eq!(pairs_in_by_words(&b, &next, pairs), hits, "{b:?}");
        }
    }

    /// Long texts of every density of multi-byte characters among ASCII
    /// (blocks skipped, blocks read), with up to three cut or invalid
    /// pieces anywhere.
    #[test]
    fn long_texts_agree_with_the_standard_check() {
        let ascii: [&[u8]; 3] = [b"abcdefghijklmnopqrstu", b" ", b"xy"];
        let wide: [&[u8]; 5] = [b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\xe2\x86\x92", b"\xe6\x96\x87\xe5\xad\x97"];
        let broken: [&[u8]; 7] = [b"\xe4\xb8", b"\x80", b"\x80\x80\x80\x80", b"\xff", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"];
        let mut state = 0x3c6e_f372_fe94_f82bu64;
        let mut buf = [0u8; 2048];
        for round in 0..50_000 {
            crate::xorshift(&mut state);
            // One piece in `density` is a multi-byte one (1: all of them).
            let density = 1 + (state % 40);
            let target = 16 + (state >> 8) as usize % 1500;
            let mut len = 0;
            while len < target {
                crate::xorshift(&mut state);
                let piece = if state % density == 0 { wide[(state >> 8) as usize % wide.len()] } else { ascii[(state >> 8) as usize % ascii.len()] };
                buf[len..len + piece.len()].copy_from_slice(piece);
                len += piece.len();
            }
            // Up to three broken pieces: a cut character, then a lone
            // continuation byte after it, may look whole to a check that
            // skips the ASCII between them.
            for _ in 0..round % 4 {
                crate::xorshift(&mut state);
                let piece = broken[(state % broken.len() as u64) as usize];
                let at = (state >> 16) as usize % len;
                buf.copy_within(at..len, at + piece.len());
                buf[at..at + piece.len()].copy_from_slice(piece);
                len += piece.len();
            }
            let text = &buf[..len];
            // (Lengths: a wrong `Some` holds invalid UTF-8, which `Debug`
            // could not print.)
            assert_eq!(utf8_text(text).map(str::len), core::str::from_utf8(text).ok().map(str::len), "round {round}: {text:?}");
        }
    }

    /// A character cut by ASCII, then the continuation bytes it lacked,
    /// at every offset from a block's edge: whatever skips ASCII must not
    /// join them.
    #[test]
    fn a_character_cut_by_ascii_is_invalid_at_every_offset() {
        let mut buf = [b'a'; 128];
        // Each start with as many continuation bytes as it lacks.
        for (lead, lacks) in [(&b"\xe4"[..], 2), (b"\xe4\xb8", 1), (b"\xf0\x9f", 2), (b"\xf0\x9f\x98", 1), (b"\xc3", 1)] {
            for p in 0..40 {
                for q in 1..24 {
                    buf.fill(b'a');
                    buf[p..p + lead.len()].copy_from_slice(lead);
                    let at = p + lead.len() + q;
                    buf[at..at + lacks].fill(0xad);
                    let text = &buf[..at + lacks + (p * 7 + q) % 40];
                    assert!(utf8_text(text).is_none(), "{text:?}");
                    assert_eq!(core::str::from_utf8(text).ok(), None);
                }
            }
        }
    }

    #[test]
    fn utf8_text_agrees_with_the_standard_check() {
        let pieces: [&[u8]; 9] = [b"abcdefgh", b"\xc3\xa9", b"\xe4\xb8\xad", b"\xf0\x9f\x98\x80", b"\xe4\xb8", b"\x80", b"\xff", b"\xed\xa0\x80", b"0123456789abcdef"];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..50_000 {
            crate::xorshift(&mut state);
            // (A buffer, not a `Vec`: the tests build without `alloc` too.)
            let mut buf = [0u8; 11 * 16];
            let mut len = 0;
            for k in 0..(state % 12) {
                let piece = pieces[(state >> (4 * k + 8)) as usize % pieces.len()];
                buf[len..len + piece.len()].copy_from_slice(piece);
                len += piece.len();
            }
            let text = &buf[..len];
            assert_eq!(utf8_text(text).map(str::len), core::str::from_utf8(text).ok().map(str::len), "{text:?}");
        }
    }
}
