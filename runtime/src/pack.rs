//! Held-back markup kept small: known markers stored as two-byte codes.
//!
//! Some templates mark tool calls with long special tokens
//! (`<｜tool▁calls▁begin｜>` is 28 bytes of UTF-8), and a parser must hold
//! a call's markup back until the call's name makes it certain. Those
//! templates get a *pack table*: their long markers. In the parser's window
//! each complete marker of the table is stored as `[CODE, index]`, and a
//! marker cut off at the very end as `[PART, index, length]`. `CODE` and
//! `PART` are bytes that never occur in UTF-8, so packing is reversible and
//! the state machine always runs over the unpacked text.
//!
//! The same measure, [`packed_len`], bounds how much markup a parser holds
//! (`HOLD_LIMIT`), so the generated parser and the reference parser break
//! the same markup.
//!
//! Tables are chosen so that no two markers can overlap in a text (no
//! marker's end is another's start, none contains another): packing from
//! the left then finds every marker a text holds.
//!
//! # Example
//! ```
//! use chat_parser_runtime::pack::{pack, packed_len, unpack};
//! let table = ["<｜tool▁sep｜>", "<｜tool▁call▁begin｜>"];
//! let text = "<｜tool▁call▁begin｜>f<｜tool▁sep｜>get_weather<｜tool▁ca".as_bytes();
//! let mut packed = [0u8; 32];
//! let n = pack(text, &table, &mut packed).unwrap();
//! assert_eq!(n, packed_len(text, &table));
//! assert_eq!(n, 2 + 1 + 2 + 11 + 3);
//! let mut back = [0u8; 128];
//! let m = unpack(&packed[..n], &table, &mut back);
//! assert_eq!(&back[..m], text);
//! ```

/// Starts a complete marker: `[CODE, index]`.
pub const CODE: u8 = 0xFE;
/// Starts a marker cut off at the end: `[PART, index, length]`.
pub const PART: u8 = 0xFF;

/// What is at `text[i..]`: a whole marker, a marker cut off by the end of
/// the text (at least 4 bytes of it), or neither.
#[inline]
fn marker_at<S: AsRef<str>>(text: &[u8], i: usize, table: &[S]) -> Option<(usize, usize)> {
    let rest = &text[i..];
    for (k, m) in table.iter().enumerate() {
        let m = m.as_ref().as_bytes();
        if rest.starts_with(m) {
            return Some((k, m.len()));
        }
    }
    if rest.len() >= 4 {
        for (k, m) in table.iter().enumerate() {
            let m = m.as_ref().as_bytes();
            if m.len() > rest.len() && m.starts_with(rest) {
                return Some((k, rest.len()));
            }
        }
    }
    None
}

/// Whether `b` can start a marker of the table.
#[inline]
fn starts_one<S: AsRef<str>>(b: u8, table: &[S]) -> bool {
    table.iter().any(|m| m.as_ref().as_bytes().first() == Some(&b))
}

/// The length of `text` packed with `table` (`&str`s, or `String`s).
pub fn packed_len<S: AsRef<str>>(text: &[u8], table: &[S]) -> usize {
    if table.is_empty() {
        return text.len();
    }
    let mut n = 0;
    let mut i = 0;
    while i < text.len() {
        match starts_one(text[i], table).then(|| marker_at(text, i, table)).flatten() {
            Some((k, len)) => {
                n += if len == table[k].as_ref().len() { 2 } else { 3 };
                i += len;
            }
            None => {
                n += 1;
                i += 1;
            }
        }
    }
    n
}

/// Packs `text` into `out`; `None` when it does not fit (or a table has
/// more than 256 markers).
pub fn pack(text: &[u8], table: &[&str], out: &mut [u8]) -> Option<usize> {
    if table.len() > 256 {
        return None;
    }
    let mut n = 0;
    let mut i = 0;
    while i < text.len() {
        let code: &[u8] = match starts_one(text[i], table).then(|| marker_at(text, i, table)).flatten() {
            Some((k, len)) if len == table[k].len() => {
                i += len;
                &[CODE, k as u8]
            }
            Some((k, len)) => {
                i += len;
                &[PART, k as u8, len as u8]
            }
            None => {
                i += 1;
                &text[i - 1..i]
            }
        };
        out.get_mut(n..n + code.len())?.copy_from_slice(code);
        n += code.len();
    }
    Some(n)
}

/// Unpacks what [`pack`] wrote into `out`, returning its length. Stops
/// early (never panics) if `out` is too small or the codes are not the
/// table's.
pub fn unpack(packed: &[u8], table: &[&str], out: &mut [u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < packed.len() {
        let piece: &[u8] = match packed[i] {
            CODE => {
                let Some(m) = packed.get(i + 1).and_then(|&k| table.get(k as usize)) else { break };
                i += 2;
                m.as_bytes()
            }
            PART => {
                let (Some(m), Some(&len)) = (packed.get(i + 1).and_then(|&k| table.get(k as usize)), packed.get(i + 2)) else { break };
                i += 3;
                let Some(part) = m.as_bytes().get(..len as usize) else { break };
                part
            }
            _ => {
                i += 1;
                &packed[i - 1..i]
            }
        };
        let Some(dst) = out.get_mut(n..n + piece.len()) else { break };
        dst.copy_from_slice(piece);
        n += piece.len();
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: [&str; 4] = ["<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>function", "<｜tool▁sep｜>", "\n```json\n"];

    #[test]
    fn packs_and_unpacks_every_cut_of_a_call() {
        let call = "x <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"a\": 1}";
        for end in (0..=call.len()).filter(|&e| call.is_char_boundary(e)) {
            let text = &call.as_bytes()[..end];
            let mut packed = [0u8; 256];
            let n = pack(text, &TABLE, &mut packed).unwrap();
            assert_eq!(n, packed_len(text, &TABLE), "{end}");
            assert!(n <= text.len());
            let mut back = [0u8; 256];
            let m = unpack(&packed[..n], &TABLE, &mut back);
            assert_eq!(&back[..m], text, "{end}");
        }
        let mut small = [0u8; 4];
        assert_eq!(pack(call.as_bytes(), &TABLE, &mut small), None);
    }

    #[test]
    fn no_table_is_no_packing() {
        assert_eq!(packed_len::<&str>(b"abc", &[]), 3);
        let mut out = [0u8; 3];
        assert_eq!(pack(b"abc", &[], &mut out), Some(3));
        assert_eq!(&out, b"abc");
    }

    #[test]
    fn unpacking_garbage_stops_without_panicking() {
        let mut out = [0u8; 8];
        for bad in [&[CODE][..], &[CODE, 9], &[PART, 0], &[PART, 0, 200], &[b'a'; 20]] {
            let n = unpack(bad, &TABLE, &mut out);
            assert!(n <= out.len());
        }
    }
}
