//! JSON string escaping without allocation.
//!
//! Generated parsers turn raw text (a tool argument written as plain text
//! between markers) into the inside of a JSON string literal. The escaped
//! form is written to a callback as borrowed slices of the input, with short
//! static strings in place of the characters JSON does not allow raw.

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
pub(crate) fn escape_of(b: u8) -> Option<&'static str> {
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
/// pieces only; each is either a slice of `text` (runs needing no escape are
/// passed through whole) or a static escape string. The concatenated pieces,
/// put between double quotes, are a JSON string that decodes to `text`.
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
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if let Some(escape) = escape_of(b) {
            // Escaped bytes are ASCII, so `start` and `i` are char boundaries.
            if start < i {
                out(&text[start..i]);
            }
            out(escape);
            start = i + 1;
        }
    }
    if start < bytes.len() {
        out(&text[start..]);
    }
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
    let mut n = prefix.len();
    buf[..n].copy_from_slice(prefix.as_bytes());
    for &b in text.as_bytes() {
        match escape_of(b) {
            Some(e) => {
                buf[n..n + e.len()].copy_from_slice(e.as_bytes());
                n += e.len();
            }
            None => {
                buf[n] = b;
                n += 1;
            }
        }
    }
    // SAFETY: `prefix` and `text` are whole characters, and escapes
    // replace single ASCII bytes with ASCII text, so `buf[..n]` is too.
    Some(unsafe { core::str::from_utf8_unchecked(&buf[..n]) })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;
    use std::vec::Vec;

    fn escaped(text: &str) -> (String, Vec<String>) {
        let mut all = String::new();
        let mut pieces = Vec::new();
        json_escape(text, &mut |p: &str| {
            all.push_str(p);
            pieces.push(p.into());
        });
        (all, pieces)
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
    fn plain_runs_are_passed_whole() {
        let (_, pieces) = escaped("hello wörld\nnext line");
        assert_eq!(pieces, ["hello wörld", "\\n", "next line"]);
        let (_, pieces) = escaped("\"\"");
        assert_eq!(pieces, ["\\\"", "\\\""]);
    }
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
        let (piece, used): (&str, usize) = match bytes.get(i + 1) {
            None => ("\\", 1),
            Some(b'n') => ("\n", 2),
            Some(b't') => ("\t", 2),
            Some(b'r') => ("\r", 2),
            Some(b'b') => ("\u{8}", 2),
            Some(b'f') => ("\u{c}", 2),
            Some(b'u') => {
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
