//! JSON string escaping without allocation.
//!
//! Generated parsers turn raw text (a tool argument written as plain text
//! between markers) into the inside of a JSON string literal. The escaped
//! form is written to a callback as borrowed slices of the input, with short
//! static strings in place of the characters JSON does not allow raw.

use crate::block::{block_at, json_specials, BLOCK};
use crate::word::Word;

/// The escape of each control character `U+0000..=U+001F`: `\n`, `\r` and
/// `\t` in their short forms, the others as `\u00XX` (lower-case hex).
const CONTROL: [&str; 32] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
    "\\u0008", "\\t", "\\n", "\\u000b", "\\u000c", "\\r", "\\u000e", "\\u000f", "\\u0010",
    "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018",
    "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
];

/// The JSON escape of an ASCII byte that cannot appear raw in a JSON
/// string, or `None` for a byte that can.
#[inline]
pub(crate) const fn escape_of(b: u8) -> Option<&'static str> {
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..=0x1f => Some(CONTROL[b as usize]),
        _ => None,
    }
}

/// Writes `text` escaped for the inside of a JSON string literal (without
/// the surrounding quotes).
///
/// `"` becomes `\"`, `\` becomes `\\`, newline, carriage return and tab
/// become `\n`, `\r` and `\t`, other control characters below U+0020 become
/// `\u00XX` (lower-case hex); everything else, including non-ASCII
/// characters and U+007F, is passed through unchanged.
///
/// Guarantees: never allocates and never panics. `out` receives non-empty
/// pieces only: the text and its escapes are gathered 16 bytes at a time
/// ([`crate::block`]) in a small buffer on the stack and written in pieces
/// of about 256 bytes (source code with an escape every few bytes is a few
/// pieces, not two per escape); a text that starts with a run of
/// [`LONG_RUN`] bytes or more needing no escape passes that run as a slice
/// of `text`. The concatenated pieces, put between double quotes, are a
/// JSON string that decodes to `text`.
///
/// # Example
/// ```
/// use chat_parser_runtime::escape::json_escape;
/// let mut json = String::new();
/// json_escape("say \"hi\"\n\u{1}", &mut |piece: &str| json.push_str(piece));
/// assert_eq!(json, r#"say \"hi\"\n\u0001"#);
/// ```
pub fn json_escape(text: &str, out: &mut impl FnMut(&str)) {
    let bytes = text.as_bytes();
    // A text that needs no escape is passed whole, and a streamed chunk of
    // a few bytes is escaped in a small buffer: neither pays for the large
    // one.
    let plain = next_to_escape(bytes, 0);
    if plain == bytes.len() {
        if !text.is_empty() {
            out(text);
        }
        return;
    }
    let mut small = [0u8; 64];
    if let Some(escaped) = json_escape_short("", text, &mut small) {
        out(escaped);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use crate::block::{has_avx2, has_ssse3};
        if has_avx2() {
            // SAFETY: the CPU has AVX2.
            unsafe { escape_long_avx2(text, plain, out) };
            return;
        }
        if has_ssse3() {
            // SAFETY: the CPU has SSSE3.
            unsafe { escape_long_ssse3(text, plain, out) };
            return;
        }
    }
    escape_long::<BLOCK, { 2 * BLOCK }>(text, plain, out, escape_block);
}

/// [`json_escape`] of a text that needs an escape and is longer than
/// [`SHORT`] (`plain`: the bytes before its first escape), `STEP` bytes
/// (one or two blocks) at a time by `escape_step`, which escapes the first
/// `step` bytes of a `WINDOW` (`STEP` bytes and the block after them: the
/// byte-by-byte block copies the rest of a block after an escape from
/// there) to the buffer, and returns the buffer's new end.
#[inline(always)]
fn escape_long<const STEP: usize, const WINDOW: usize>(
    text: &str,
    plain: usize,
    out: &mut impl FnMut(&str),
    escape_step: impl Fn(&mut [u8; ESCAPE_BUF], usize, &[u8; WINDOW], usize) -> usize,
) {
    const { assert!(WINDOW == STEP + BLOCK && STEP <= 2 * BLOCK) };
    let bytes = text.as_bytes();
    // Runs are copied a step at a time: the buffer has room for the steps
    // and escapes written after it passes FLUSH_AT, until a character ends.
    let mut buf = [0u8; ESCAPE_BUF];
    let mut n = 0;
    let mut i = 0;
    // A text that starts with a long run needing no escape: passed whole.
    if plain >= LONG_RUN {
        if let Some(run) = text.get(..plain) {
            out(run);
            i = plain;
        }
    }
    // A step at a time, each read with the block after it, then the last
    // one or two from a copy padded with spaces (which need no escape; only
    // the count of the text's own bytes is kept).
    while let Some(window) = bytes.get(i..i + WINDOW).and_then(|w| <&[u8; WINDOW]>::try_from(w).ok()) {
        n = escape_step(&mut buf, n, window, STEP);
        i += STEP;
        n = flush_full(text, i, &mut buf, n, out);
    }
    while let Some(rest) = bytes.get(i..).filter(|r| !r.is_empty()) {
        let mut pad = [b' '; WINDOW];
        let len = rest.len().min(WINDOW);
        pad[..len].copy_from_slice(&rest[..len]);
        let step = len.min(STEP);
        n = escape_step(&mut buf, n, &pad, step);
        i += step;
        n = flush_full(text, i, &mut buf, n, out);
    }
    flush(&buf[..n.min(ESCAPE_BUF)], out);
}

/// Once the buffer holds [`FLUSH_AT`] bytes or more (the text escaped up
/// to `i`), writes it out up to where the last whole character ends and
/// returns what is left in it: the block may have cut a character, whose
/// first bytes (the last `cut` of the buffer, copied unchanged) start the
/// next piece.
#[inline(always)]
fn flush_full(text: &str, i: usize, buf: &mut [u8; ESCAPE_BUF], n: usize, out: &mut impl FnMut(&str)) -> usize {
    if n < FLUSH_AT {
        return n;
    }
    let mut end = i;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = i - end;
    flush(&buf[..n - cut], out);
    buf.copy_within(n - cut..n, 0);
    cut
}

/// Writes the first `step` bytes of the block that starts `window`,
/// escaped, at `buf[n..]`; returns the new end. The whole block is stored
/// first (a block with nothing to escape, the common case, is one store);
/// each escape is then written over the byte it replaces, followed by the
/// rest of the block, 16 bytes read from `window` after the escaped byte.
/// (Read from the text itself, not from a copy just stored: a load that
/// overlaps a recent store at another offset waits for it.)
#[inline(always)]
fn escape_block(buf: &mut [u8; ESCAPE_BUF], mut n: usize, window: &[u8; 2 * BLOCK], step: usize) -> usize {
    let Some(block) = window.first_chunk::<BLOCK>() else { return n };
    let mut specials = json_specials(block);
    put16(buf, n, block);
    if specials == 0 {
        return n + step;
    }
    let mut done = 0;
    while specials != 0 {
        // The bytes before the lane are in place already.
        let lane = specials.trailing_zeros() as usize & (BLOCK - 1);
        n += lane - done;
        let escape = ESCAPED_BYTES[usize::from(block[lane])];
        // The length in the top byte is stored too, past the escape: the
        // rest of the block is stored over it.
        put8(buf, n, escape);
        n += (escape >> 56) as usize;
        done = lane + 1;
        if let Ok(rest) = <&[u8; BLOCK]>::try_from(&window[done..done + BLOCK]) {
            put16(buf, n, rest);
        }
        specials &= specials - 1;
    }
    n + step.saturating_sub(done)
}

/// [`escape_long`] with SSSE3: blocks with short escapes only by
/// [`escape_block_ssse3`].
///
/// # Safety
/// The CPU has SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn escape_long_ssse3(text: &str, plain: usize, out: &mut impl FnMut(&str)) {
    // SAFETY: the CPU has SSSE3.
    escape_long::<BLOCK, { 2 * BLOCK }>(text, plain, out, |buf, n, window, step| unsafe { escape_block_ssse3(buf, n, window, step) });
}

/// [`escape_long`] with AVX2: two blocks at a time, by
/// [`escape_blocks_avx2`].
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn escape_long_avx2(text: &str, plain: usize, out: &mut impl FnMut(&str)) {
    // SAFETY: the CPU has AVX2.
    escape_long::<{ 2 * BLOCK }, { 3 * BLOCK }>(text, plain, out, |buf, n, window, step| unsafe { escape_blocks_avx2(buf, n, window, step) });
}

/// [`escape_block_ssse3`] for two blocks at once: the bytes to escape are
/// found and turned into letters 32 at a time, then each quarter (8
/// bytes) is spread as a half block is there. Two blocks with another
/// control character go to [`escape_block_ssse3`] one by one.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn escape_blocks_avx2(buf: &mut [u8; ESCAPE_BUF], n: usize, window: &[u8; 3 * BLOCK], step: usize) -> usize {
    use core::arch::x86_64::{
        _mm256_andnot_si256, _mm256_and_si256, _mm256_broadcastsi128_si256, _mm256_castsi256_si128, _mm256_cmpeq_epi8, _mm256_extracti128_si256,
        _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8, _mm256_set1_epi8, _mm256_shuffle_epi8, _mm256_storeu_si256, _mm256_xor_si256,
        _mm_loadu_si128,
    };
    let v = _mm256_loadu_si256(window.as_ptr().cast());
    let table = |t: &[u8; 16]| _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast()));
    let short = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(table(&SHORT_ESCAPED), v), v);
    let control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1f)), v);
    if _mm256_movemask_epi8(_mm256_andnot_si256(short, control)) != 0 {
        let (Some(first), Some(second)) = (window.first_chunk::<{ 2 * BLOCK }>(), window.last_chunk::<{ 2 * BLOCK }>()) else { return n };
        let n = escape_block_ssse3(buf, n, first, step.min(BLOCK));
        return if step > BLOCK { escape_block_ssse3(buf, n, second, step - BLOCK) } else { n };
    }
    let mask = _mm256_movemask_epi8(short) as u32 as usize;
    // SAFETY (of the stores): each starts at a position masked with
    // `AT_MASK`, and `ESCAPE_BUF` is `AT_MASK + 1 + 32`.
    if mask == 0 {
        _mm256_storeu_si256(buf.as_mut_ptr().add(n & AT_MASK).cast(), v);
        return n + step;
    }
    let letters = _mm256_xor_si256(v, _mm256_and_si256(short, _mm256_shuffle_epi8(table(&TO_LETTER), v)));
    let at = spread_block(buf, n, _mm256_castsi256_si128(letters), mask & 0xffff);
    let at = spread_block(buf, at, _mm256_extracti128_si256::<1>(letters), mask >> BLOCK);
    // (The padding after a last step's `step` bytes is spaces: no escape.)
    at - 2 * BLOCK + step
}

/// Writes a block of `letters` (the bytes to escape, bits of `mask`,
/// already turned into their escapes' letters) at `buf[at..]`, a backslash
/// before each letter, and returns where it ends: each half spread out
/// next to 8 backslashes by one shuffle from [`SPREAD`].
///
/// # Safety
/// The CPU has SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn spread_block(buf: &mut [u8; ESCAPE_BUF], mut at: usize, letters: core::arch::x86_64::__m128i, mask: usize) -> usize {
    use core::arch::x86_64::{_mm_loadu_si128, _mm_set1_epi8, _mm_shuffle_epi8, _mm_storeu_si128, _mm_unpackhi_epi64, _mm_unpacklo_epi64};
    let backslashes = _mm_set1_epi8(b'\\' as i8);
    let halves = [_mm_unpacklo_epi64(letters, backslashes), _mm_unpackhi_epi64(letters, backslashes)];
    for (k, half) in halves.into_iter().enumerate() {
        let escapes = mask >> (8 * k) & 0xff;
        // SAFETY: the store starts at a position masked with `AT_MASK`,
        // and `ESCAPE_BUF` is `AT_MASK + 1 + 32`.
        _mm_storeu_si128(buf.as_mut_ptr().add(at & AT_MASK).cast(), _mm_shuffle_epi8(half, _mm_loadu_si128(SPREAD[escapes].as_ptr().cast())));
        // (Counted by table: `count_ones` is a dozen instructions without
        // the `popcnt` of later CPUs.)
        at += 8 + usize::from(ONES[escapes]);
    }
    at
}

/// [`escape_block`] by byte shuffles, the same count of instructions
/// whatever the count of escapes, for a block whose escapes are all two
/// bytes long (`\"`, `\\`, `\n`, `\r`, `\t`: source code's). A
/// block with another control character goes to [`escape_block`].
///
/// Each byte to escape is first replaced by its escape's letter; then each
/// half of the block (8 bytes, next to 8 backslashes) is spread out by one
/// shuffle, picked by the half's 8-bit mask of escapes from a table
/// ([`SPREAD`]): a backslash goes in before each letter.
///
/// # Safety
/// The CPU has SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn escape_block_ssse3(buf: &mut [u8; ESCAPE_BUF], n: usize, window: &[u8; 2 * BLOCK], step: usize) -> usize {
    use core::arch::x86_64::{
        _mm_andnot_si128, _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_set1_epi8, _mm_shuffle_epi8,
        _mm_storeu_si128, _mm_xor_si128,
    };
    let v = _mm_loadu_si128(window.as_ptr().cast());
    let table = |t: &[u8; 16]| _mm_loadu_si128(t.as_ptr().cast());
    // The bytes with a short escape: those equal to the entry of their
    // low half in `SHORT_ESCAPED` (a byte of 0x80 or more looks up 0).
    let short = _mm_cmpeq_epi8(_mm_shuffle_epi8(table(&SHORT_ESCAPED), v), v);
    let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
    if _mm_movemask_epi8(_mm_andnot_si128(short, control)) != 0 {
        return escape_block(buf, n, window, step);
    }
    let mask = _mm_movemask_epi8(short) as usize;
    let at = n & AT_MASK;
    // SAFETY (of the stores): each starts at a position masked with
    // `AT_MASK`, and `ESCAPE_BUF` is `AT_MASK + 1 + 32`.
    if mask == 0 {
        _mm_storeu_si128(buf.as_mut_ptr().add(at).cast(), v);
        return n + step;
    }
    let letters = _mm_xor_si128(v, _mm_and_si128(short, _mm_shuffle_epi8(table(&TO_LETTER), v)));
    // (The padding after a last block's `step` bytes is spaces: no escape.)
    spread_block(buf, n, letters, mask) - BLOCK + step
}

/// The count of bits set in each byte.
#[cfg(target_arch = "x86_64")]
static ONES: [u8; 256] = {
    let mut t = [0; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).count_ones() as u8;
        b += 1;
    }
    t
};

/// By a byte's low half: the byte with a two-byte escape (in
/// [`ESCAPED_BYTES`]) that has that low half (`"` 0x22, `\t` 0x09, `\n`
/// 0x0a, `\\` 0x5c, `\r` 0x0d: each low half is another, which the build
/// checks), or 0xff, which no byte under 0x80 equals.
#[cfg(target_arch = "x86_64")]
const SHORT_ESCAPED: [u8; 16] = {
    let mut t = [0xff; 16];
    let mut b = 0;
    while b < 0x80 {
        if ESCAPED_BYTES[b] >> 56 == 2 {
            assert!(t[b & 0xf] == 0xff, "two bytes with a two-byte escape share a low half");
            t[b & 0xf] = b as u8;
        }
        b += 1;
    }
    t
};

/// By a byte's low half: what turns that short-escaped byte into its
/// escape's letter by exclusive or (`\n` into `n`; `"` and `\\` stay).
#[cfg(target_arch = "x86_64")]
const TO_LETTER: [u8; 16] = {
    let mut t = [0; 16];
    let mut k = 0;
    while k < 16 {
        if SHORT_ESCAPED[k] != 0xff {
            let e = ESCAPED_BYTES[SHORT_ESCAPED[k] as usize];
            t[k] = SHORT_ESCAPED[k] ^ (e >> 8) as u8;
        }
        k += 1;
    }
    t
};

/// For each 8-bit mask of the bytes to escape in a half block: the shuffle
/// that spreads the half's 8 bytes (lanes 0 to 7, letters in place of the
/// bytes to escape) out, with a backslash (any of lanes 8 to 15) before
/// each letter. What lies past the spread bytes is not read.
#[cfg(target_arch = "x86_64")]
static SPREAD: [[u8; 16]; 256] = {
    let mut t = [[0x80; 16]; 256];
    let mut mask = 0;
    while mask < 256 {
        let mut j = 0;
        let mut k = 0;
        while k < 8 {
            if mask >> k & 1 == 1 {
                t[mask][j] = 8;
                j += 1;
            }
            t[mask][j] = k as u8;
            j += 1;
            k += 1;
        }
        mask += 1;
    }
    t
};

/// A text that starts with a run this long needing no escape passes it
/// as a slice of the text, not copied.
pub const LONG_RUN: usize = 64;
/// [`json_escape`] writes its buffer out once it holds this many bytes.
const FLUSH_AT: usize = 256;
/// Where [`json_escape`]'s buffer is written: below [`FLUSH_AT`] when a
/// step starts, plus one step (two blocks) that may be all control
/// characters (`\u001f` each) and a 32-byte store, is below 512. Positions
/// are masked with `AT_MASK`, which changes none of them, so that the
/// stores need no bounds checks.
const AT_MASK: usize = 511;
/// [`json_escape`]'s buffer: every masked position and a 32-byte store.
const ESCAPE_BUF: usize = AT_MASK + 1 + 2 * BLOCK;
const _: () = assert!(FLUSH_AT + 6 * 2 * BLOCK + 2 * BLOCK <= AT_MASK);

/// Stores the 16 bytes `src` at `buf[at..at + 16]`.
#[inline(always)]
fn put16(buf: &mut [u8; ESCAPE_BUF], at: usize, src: &[u8; BLOCK]) {
    let at = at & AT_MASK;
    buf[at..at + BLOCK].copy_from_slice(src);
}

/// Stores `w` (little-endian) at `buf[at..at + 8]`.
#[inline(always)]
fn put8(buf: &mut [u8; ESCAPE_BUF], at: usize, w: u64) {
    let at = at & AT_MASK;
    buf[at..at + 8].copy_from_slice(&w.to_le_bytes());
}

/// Each byte as JSON string content, as a little-endian word with its
/// length in the top byte: the escape of a byte JSON does not allow raw
/// (`escape_of`, at most 6 bytes), the byte itself (length 1) otherwise,
/// so that escaping is one lookup and one store per byte.
const ESCAPED_BYTES: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let one = [b as u8];
        let e: &[u8] = match escape_of(b as u8) {
            Some(e) => e.as_bytes(),
            None => &one,
        };
        let mut w = (e.len() as u64) << 56;
        let mut k = 0;
        while k < e.len() {
            w |= (e[k] as u64) << (8 * k);
            k += 1;
        }
        table[b] = w;
        b += 1;
    }
    table
};

/// Writes the gathered `buf` as one piece (nothing when empty).
#[inline]
fn flush(buf: &[u8], out: &mut impl FnMut(&str)) {
    if !buf.is_empty() {
        // SAFETY: the buffer holds bytes of a `&str` from one character
        // boundary to another (found before every flush; the text's end)
        // with ASCII escapes in place of single ASCII bytes, so it is whole
        // characters.
        out(unsafe { core::str::from_utf8_unchecked(buf) });
    }
}

/// The first position from `i` holding a byte JSON escapes, or the end.
/// Sixteen bytes at a time.
#[inline]
fn next_to_escape(bytes: &[u8], mut i: usize) -> usize {
    while let Some(b) = block_at(bytes, i) {
        let specials = json_specials(b);
        if specials != 0 {
            return i + specials.trailing_zeros() as usize;
        }
        i += BLOCK;
    }
    while i < bytes.len() && escape_of(bytes[i]).is_none() {
        i += 1;
    }
    i
}

/// The longest text [`json_escape_short`] takes.
pub const SHORT: usize = 8;

/// A few bytes of text (`prefix` then `text`, `text` at most [`SHORT`]
/// bytes) escaped as [`json_escape`] escapes them, into `buf`, as one
/// piece: a streamed chunk with a quote or a newline in it becomes one
/// event instead of three. `None` when `text` is longer.
///
/// # Example
/// ```
/// use chat_parser_runtime::escape::json_escape_short;
/// let mut buf = [0u8; 64];
/// assert_eq!(json_escape_short("\\n", "a\"b\n", &mut buf), Some(r#"\na\"b\n"#));
/// ```
#[inline]
pub fn json_escape_short<'b>(prefix: &str, text: &str, buf: &'b mut [u8; 64]) -> Option<&'b str> {
    // Each byte becomes at most six (`\u001f`): 8 * 6 + a short prefix fit.
    if text.len() > SHORT || prefix.len() > 8 {
        return None;
    }
    let prefix_word = Word::new(prefix.as_bytes())?;
    buf[..8].copy_from_slice(&prefix_word.bits.to_le_bytes());
    let mut n = prefix.len();
    // One store of 8 bytes per byte, without a branch: what lies past the
    // byte's escape is stored over by the next one or cut off at the end.
    for &b in text.as_bytes() {
        let w = ESCAPED_BYTES[usize::from(b)];
        // `n` is at most 8 + 7 * 6 here: the bound only spares a check.
        let at = n.min(64 - 8);
        buf[at..at + 8].copy_from_slice(&w.to_le_bytes());
        n += (w >> 56) as usize;
    }
    // SAFETY: `prefix` and `text` are whole characters, and escapes
    // replace single ASCII bytes with ASCII text, so `buf[..n]` is too.
    Some(unsafe { core::str::from_utf8_unchecked(&buf[..n.min(64)]) })
}

/// Decodes JSON string content (`a\"b` → `a"b`), writing the text to `out`
/// in pieces (runs of `text` and decoded characters), without allocating.
///
/// Escapes must be complete in `text` (a streaming caller holds back a
/// trailing backslash or an incomplete `\u` escape). A `\u` escape that is
/// not four hex digits of a character (a lone surrogate, say) is kept as
/// written; an unknown escape `\x` is `x`.
///
/// # Example
/// ```
/// use chat_parser_runtime::escape::json_unescape;
/// let mut s = String::new();
/// json_unescape(r#"caf\u00e9 \"ok\"\n"#, &mut |p: &str| s.push_str(p));
/// assert_eq!(s, "café \"ok\"\n");
/// ```
pub fn json_unescape(text: &str, out: &mut impl FnMut(&str)) {
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if start < i {
            out(&text[start..i]);
        }
        let mut buf = [0u8; 4];
        let (piece, used): (&str, usize) = match bytes.get(i + 1).map(|&b| (b, unescaped(b))) {
            None => ("\\", 1),
            Some((_, Some(piece))) => (piece, 2),
            Some((b'u', None)) => {
                let hex = text.get(i + 2..i + 6).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
                match hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32) {
                    Some(c) => (&*c.encode_utf8(&mut buf), 6),
                    None => ("\\u", 2),
                }
            }
            Some(_) => {
                // The escaped character itself (may be multi-byte).
                let c = text[i + 1..].chars().next().unwrap_or('\\');
                (&*c.encode_utf8(&mut buf), 1 + c.len_utf8())
            }
        };
        out(piece);
        i += used;
        start = i;
    }
    if start < bytes.len() {
        out(&text[start..]);
    }
}

/// What a JSON escape with one character after its backslash stands for
/// (`\n` → a newline, `\"` → `"`); `None` for `u` (four hex digits follow)
/// and for characters JSON does not escape.
pub(crate) fn unescaped(b: u8) -> Option<&'static str> {
    Some(match b {
        b'"' => "\"",
        b'\\' => "\\",
        b'/' => "/",
        b'b' => "\u{8}",
        b'f' => "\u{c}",
        b'n' => "\n",
        b'r' => "\r",
        b't' => "\t",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;
    use std::vec::Vec;
    use std::string::ToString;

    fn escaped(text: &str) -> (String, Vec<String>) {
        let mut all = String::new();
        let mut pieces = Vec::new();
        json_escape(text, &mut |p: &str| {
            // Pieces made with `from_utf8_unchecked` must be valid UTF-8.
            assert!(core::str::from_utf8(p.as_bytes()).is_ok(), "{:?}", p.as_bytes());
            all.push_str(p);
            pieces.push(p.into());
        });
        (all, pieces)
    }

    /// Texts of every density of escapes (short ones, long ones, none),
    /// with multi-byte characters, of lengths around the block and buffer
    /// sizes: the same escaped text from `json_escape`, from the
    /// byte-by-byte blocks and from each shuffled path this CPU has (16
    /// and 32 bytes a step), and it decodes back to the text.
    #[test]
    fn shuffled_and_byte_escapes_agree_at_every_density() {
        let plain = ["a", "bc", " = ", "é", "中", "🙂", "\u{7f}", "0123456789abcdef", "?"];
        let special = ["\"", "\\", "\n", "\r", "\t", "\u{1}", "\u{8}", "\u{1f}", "\u{0}"];
        let mut state = 0x853c_49e6_748f_ea9bu64;
        for round in 0..20_000 {
            crate::xorshift(&mut state);
            // One piece in `density` needs an escape; a long escape
            // (other control characters) is rarer still, or never.
            let density = 1 + state % 12;
            let long_too = state >> 8 & 3 == 0;
            let target = (state >> 16) as usize % 700;
            let mut text = String::new();
            while text.len() < target {
                crate::xorshift(&mut state);
                let kinds = if long_too { special.len() } else { 5 };
                let piece = if state % density == 0 { special[(state >> 8) as usize % kinds] } else { plain[(state >> 8) as usize % plain.len()] };
                if piece == "?" {
                    // Any printable ASCII byte.
                    text.push(char::from(0x20 + (state >> 20) as u8 % 0x5f));
                } else {
                    text.push_str(piece);
                }
            }
            let (all, _) = escaped(&text);
            let plain = next_to_escape(text.as_bytes(), 0);
            let mut by_bytes = String::new();
            escape_long::<BLOCK, { 2 * BLOCK }>(&text, plain, &mut |p: &str| by_bytes.push_str(p), escape_block);
            assert_eq!(all, by_bytes, "round {round}: {text:?}");
            // Each shuffled path this CPU has, whichever `json_escape` took.
            #[cfg(target_arch = "x86_64")]
            {
                use crate::block::{has_avx2, has_ssse3};
                let mut shuffled = String::new();
                if has_ssse3() {
                    // SAFETY: the CPU has SSSE3.
                    unsafe { escape_long_ssse3(&text, plain, &mut |p: &str| shuffled.push_str(p)) };
                    assert_eq!(shuffled, by_bytes, "round {round} (SSSE3): {text:?}");
                }
                if has_avx2() {
                    shuffled.clear();
                    // SAFETY: the CPU has AVX2.
                    unsafe { escape_long_avx2(&text, plain, &mut |p: &str| shuffled.push_str(p)) };
                    assert_eq!(shuffled, by_bytes, "round {round} (AVX2): {text:?}");
                }
            }
            assert_eq!(serde_json::from_str::<String>(&std::format!("\"{all}\"")).unwrap(), text, "round {round}");
        }
    }

    #[test]
    fn short_texts_escape_as_one_piece_the_same_way() {
        let alphabet = ["a", "\"", "\\", "\n", "\u{1}", "é", "🙂", "\u{7f}"];
        let mut buf = [0u8; 64];
        for i in 0..4096usize {
            // Up to four symbols, each picked from the alphabet by i's digits.
            let text: String = (0..(i % 5)).map(|k| alphabet[(i >> (3 * k)) % alphabet.len()]).collect();
            let want = escaped(&text).0;
            match json_escape_short("\\n", &text, &mut buf) {
                Some(got) => assert_eq!(got, std::format!("\\n{want}"), "{text:?}"),
                None => assert!(text.len() > SHORT, "{text:?}"),
            }
        }
    }

    #[test]
    fn escapes_quotes_backslashes_and_controls() {
        assert_eq!(escaped("a\"b\\c").0, r#"a\"b\\c"#);
        assert_eq!(escaped("\n\r\t").0, r"\n\r\t");
        assert_eq!(
            escaped("\u{0}\u{8}\u{c}\u{1f}").0,
            r"\u0000\u0008\u000c\u001f"
        );
        assert_eq!(escaped("\u{7f} é 😀 /").0, "\u{7f} é 😀 /");
        assert_eq!(escaped("").0, "");
    }

    #[test]
    fn every_control_character_round_trips_through_serde_json() {
        for c in (0u8..0x80).map(char::from) {
            let mut text = String::from("x");
            text.push(c);
            let json = std::format!("\"{}\"", escaped(&text).0);
            assert_eq!(
                serde_json::from_str::<String>(&json).unwrap(),
                text,
                "{c:?}"
            );
        }
    }

    #[test]
    fn short_runs_and_escapes_are_one_piece_a_long_first_run_is_a_slice() {
        let (_, pieces) = escaped("hello wörld\nnext line");
        assert_eq!(pieces, ["hello wörld\\nnext line"]);
        let (_, pieces) = escaped("\"\"");
        assert_eq!(pieces, ["\\\"\\\""]);
        let long = "x".repeat(LONG_RUN);
        let (_, pieces) = escaped(&std::format!("{long}\tb"));
        assert_eq!(pieces, [long.as_str(), "\\tb"]);
        let (all, pieces) = escaped(&std::format!("a\n{long}\tb"));
        assert_eq!(all, std::format!("a\\n{long}\\tb"));
        assert_eq!(pieces.len(), 1);
    }

    #[test]
    fn pieces_are_whole_characters_however_the_blocks_cut_them() {
        // A few ASCII bytes, a newline (so the text is gathered, not passed
        // whole), then 4-, 2- and 3-byte characters, with a quote every
        // `gap` characters: 16-byte blocks end inside the characters, so
        // each piece must end before the cut one (checked by `escaped`).
        for lead in ["", "a", "ab", "abc", "\"", "a\n"] {
            for gap in [1, 2, 5, 17, 100, 1000] {
                let body: String = "🙂é日".chars().cycle().take(900).enumerate().map(|(k, c)| if k % gap == gap - 1 { '"' } else { c }).collect();
                let text = std::format!("{lead}\n{body}");
                let (all, pieces) = escaped(&text);
                let want: String = text.chars().map(|c| match c {
                    '"' => "\\\"".into(),
                    '\n' => "\\n".into(),
                    c => c.to_string(),
                }).collect();
                assert_eq!(all, want, "{lead:?} {gap}");
                assert!(pieces.len() > 5, "{lead:?} {gap}");
            }
        }
    }

    #[test]
    fn escape_dense_text_of_any_length_equals_the_byte_rule() {
        // Every length around the buffer's size, with escapes of every
        // width (\u0001 is six bytes) and multi-byte characters.
        let unit = "a\\\"é\u{1}\n🙂bc";
        for len in 0..3 * ESCAPE_BUF {
            let text: String = unit.chars().cycle().take(len).collect();
            let (got, pieces) = escaped(&text);
            // Byte-wise rule, compared on bytes (non-ASCII passes through).
            let want_bytes: Vec<u8> = text.bytes().flat_map(|b| escape_of(b).map(|e| e.as_bytes().to_vec()).unwrap_or_else(|| std::vec![b])).collect();
            assert_eq!(got.as_bytes(), want_bytes.as_slice(), "{len}");
            assert!(pieces.iter().all(|p| !p.is_empty() && p.len() <= ESCAPE_BUF), "{len}");
            // The widest escapes only: six bytes out for each byte in.
            let controls = "\u{1f}".repeat(len);
            assert_eq!(escaped(&controls).0, "\\u001f".repeat(len), "{len}");
        }
    }
}
