//! Differential comparison of two renders: what they share at the front and
//! back, and what is unique to each side.
//!
//! Templates are compared by rendering two inputs that differ in one detail
//! (a reasoning field, a second tool call, another argument name) and keeping
//! only what changed. Markers such as `<tool_call>` or `[TOOL_CALLS]` must never
//! be cut in half by the split, so the comparison first walks whole segments
//! (markers and the text between them) and only then refines plain text
//! character by character.
//!
//! # Example
//! ```
//! use chat_parser_generator::diff::diff_split;
//! let d = diff_split("<a>hello</a>", "<a>hello<b>x</b></a>");
//! assert_eq!(d.prefix, "<a>hello");
//! assert_eq!(d.left, "");
//! assert_eq!(d.right, "<b>x</b>");
//! assert_eq!(d.suffix, "</a>");
//! ```

/// Whether a piece of rendered text is a marker (`<...>` or `[...]`) or the
/// text between markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    Text,
    Marker,
}

/// One piece of a rendered template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    pub kind: SegmentKind,
    pub text: &'a str,
}

/// Splits `text` into markers (`<...>`, `[...]`) and the text between them.
///
/// An opener without its closer leaves the rest of the text as one text
/// segment. Angle and square brackets do not nest.
pub fn segments(text: &str) -> Vec<Segment<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut opener: Option<u8> = None;
    let mut border = 0;
    for (pos, &b) in bytes.iter().enumerate() {
        match opener {
            None if b == b'<' || b == b'[' => {
                if border < pos {
                    out.push(Segment { kind: SegmentKind::Text, text: &text[border..pos] });
                }
                border = pos;
                opener = Some(b);
            }
            Some(open) if (open == b'<' && b == b'>') || (open == b'[' && b == b']') => {
                out.push(Segment { kind: SegmentKind::Marker, text: &text[border..=pos] });
                border = pos + 1;
                opener = None;
            }
            _ => {}
        }
    }
    if border < text.len() {
        out.push(Segment { kind: SegmentKind::Text, text: &text[border..] });
    }
    out
}

/// The segments that are not whitespace only.
pub fn non_blank_segments(text: &str) -> Vec<Segment<'_>> {
    segments(text).into_iter().filter(|s| !s.text.trim().is_empty()).collect()
}

/// The result of comparing two renders `left` and `right`:
/// `left == prefix + self.left + suffix` and `right == prefix + self.right + suffix`
/// (except in the degenerate case of equal inputs, where `prefix` is the whole text).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffSplit {
    pub prefix: String,
    pub suffix: String,
    pub left: String,
    pub right: String,
}

/// Compares two renders segment by segment, then character by character
/// inside the differing text, never splitting a marker.
pub fn diff_split(left: &str, right: &str) -> DiffSplit {
    let ls = segments(left);
    let rs = segments(right);
    let mut result = DiffSplit::default();
    if ls.is_empty() {
        result.right = right.to_string();
        return result;
    }
    if rs.is_empty() {
        result.left = left.to_string();
        return result;
    }
    let (mut l_start, mut l_end) = (0usize, ls.len() - 1);
    let (mut r_start, mut r_end) = (0usize, rs.len() - 1);
    let mut left_consumed = false;
    let mut right_consumed = false;
    let mut suffix_parts: Vec<&str> = Vec::new();

    // Whole segments first: equal segments at the front go to the prefix,
    // equal segments at the back to the suffix.
    while l_start != l_end && r_start != r_end {
        let mut advanced = false;
        if ls[l_start] == rs[r_start] {
            result.prefix.push_str(ls[l_start].text);
            l_start += 1;
            r_start += 1;
            advanced = true;
        }
        if ls[l_end] == rs[r_end] {
            suffix_parts.push(ls[l_end].text);
            if l_start != l_end {
                l_end -= 1;
            } else {
                left_consumed = true;
            }
            if r_start != r_end {
                r_end -= 1;
            } else {
                right_consumed = true;
            }
            advanced = true;
        }
        if !advanced {
            break;
        }
    }
    // One side is down to a single segment: it may still match either end
    // of the other side.
    if l_start == l_end && r_start != r_end {
        if ls[l_start] == rs[r_end] {
            suffix_parts.push(rs[r_end].text);
            r_end -= 1;
            left_consumed = true;
        } else if ls[l_start] == rs[r_start] {
            result.prefix.push_str(rs[r_start].text);
            r_start += 1;
            left_consumed = true;
        }
    } else if r_start == r_end && l_start != l_end {
        if ls[l_end] == rs[r_start] {
            suffix_parts.push(ls[l_end].text);
            l_end -= 1;
            right_consumed = true;
        } else if ls[l_start] == rs[r_start] {
            result.prefix.push_str(ls[l_start].text);
            l_start += 1;
            right_consumed = true;
        }
    } else if l_start == l_end
        && r_start == r_end
        && ls[l_start] == rs[r_start]
        && ls[l_start].kind == SegmentKind::Marker
    {
        result.prefix.push_str(rs[r_start].text);
        left_consumed = true;
        right_consumed = true;
    }

    // Then plain text: only text (never a marker) may be split further.
    let text_suffix_possible = ls[l_end].kind == SegmentKind::Text && rs[r_end].kind == SegmentKind::Text;
    let text_prefix_possible = ls[l_start].kind == SegmentKind::Text && rs[r_start].kind == SegmentKind::Text;
    let join = |segs: &[Segment<'_>]| segs.iter().map(|s| s.text).collect::<String>();
    let l_stop = if left_consumed { l_end } else { l_end + 1 };
    let r_stop = if right_consumed { r_end } else { r_end + 1 };
    let rem_left = join(&ls[l_start..l_stop.max(l_start)]);
    let rem_right = join(&rs[r_start..r_stop.max(r_start)]);

    let suffix_len = if text_suffix_possible { common_suffix_len(&rem_left, &rem_right) } else { 0 };
    let prefix_len = if text_prefix_possible {
        common_prefix_len(&rem_left[..rem_left.len() - suffix_len], &rem_right[..rem_right.len() - suffix_len])
    } else {
        0
    };
    result.prefix.push_str(&rem_left[..prefix_len]);
    let mut suffix = rem_left[rem_left.len() - suffix_len..].to_string();
    for part in suffix_parts.iter().rev() {
        suffix.push_str(part);
    }
    result.suffix = suffix;
    result.left = rem_left[prefix_len..rem_left.len() - suffix_len].to_string();
    result.right = rem_right[prefix_len..rem_right.len() - suffix_len].to_string();
    if result.left.is_empty() && result.right.is_empty() {
        // Nothing differs: represent the whole text as prefix.
        result.prefix = left.to_string();
        result.suffix.clear();
    }
    result
}

/// Length in bytes of the common prefix, at a character boundary.
pub fn common_prefix_len(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// Length in bytes of the common suffix, at a character boundary.
pub fn common_suffix_len(a: &str, b: &str) -> usize {
    let mut n = a.bytes().rev().zip(b.bytes().rev()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(a.len() - n) || !b.is_char_boundary(b.len() - n) {
        n -= 1;
    }
    n
}

/// The part of `full` before the first occurrence of the common prefix of
/// `a` and `b`; empty when they share nothing or it does not occur.
pub fn until_common_prefix<'a>(full: &'a str, a: &str, b: &str) -> &'a str {
    let n = common_prefix_len(a, b);
    if n == 0 {
        return "";
    }
    match full.find(&a[..n]) {
        Some(pos) => &full[..pos],
        None => "",
    }
}

/// The part of `full` after the last occurrence of the common suffix of
/// `a` and `b`; empty when they share nothing or it does not occur.
pub fn after_common_suffix<'a>(full: &'a str, a: &str, b: &str) -> &'a str {
    let n = common_suffix_len(a, b);
    if n == 0 {
        return "";
    }
    match full.rfind(&a[a.len() - n..]) {
        Some(pos) => &full[pos + n..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_markers_and_text() {
        let s = segments("a<b>c[d]e<f");
        let texts: Vec<_> = s.iter().map(|s| (s.kind, s.text)).collect();
        assert_eq!(
            texts,
            vec![
                (SegmentKind::Text, "a"),
                (SegmentKind::Marker, "<b>"),
                (SegmentKind::Text, "c"),
                (SegmentKind::Marker, "[d]"),
                (SegmentKind::Text, "e"),
                (SegmentKind::Text, "<f"),
            ]
        );
    }

    #[test]
    fn diff_never_splits_a_marker() {
        let d = diff_split("x<tool_call>A</tool_call>", "x<tool_result>A</tool_call>");
        assert_eq!(d.left, "<tool_call>");
        assert_eq!(d.right, "<tool_result>");
        assert_eq!(d.prefix, "x");
        assert_eq!(d.suffix, "A</tool_call>");
    }

    #[test]
    fn diff_refines_text() {
        let d = diff_split("<s>value XXXX end", "<s>value YYYY end");
        assert_eq!((d.prefix.as_str(), d.left.as_str(), d.right.as_str(), d.suffix.as_str()), ("<s>value ", "XXXX", "YYYY", " end"));
    }

    #[test]
    fn equal_inputs_are_all_prefix() {
        let d = diff_split("<a>b", "<a>b");
        assert_eq!(d.prefix, "<a>b");
        assert!(d.left.is_empty() && d.right.is_empty() && d.suffix.is_empty());
    }

    #[test]
    fn multibyte_text_is_split_at_char_boundaries() {
        let d = diff_split("｜a", "｝a");
        assert_eq!(d.left, "｜");
        assert_eq!(d.right, "｝");
    }

    #[test]
    fn common_affix_helpers() {
        assert_eq!(until_common_prefix("pre{}post", "{}", "{\"first\":"), "pre");
        assert_eq!(after_common_suffix("a\"XXXX\"}end", "{}", "\"XXXX\"}"), "end");
        assert_eq!(until_common_prefix("abc", "x", "y"), "");
    }
}
