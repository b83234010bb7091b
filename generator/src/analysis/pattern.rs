//! Small text patterns that locate markers around a known needle in a render.
//!
//! The analysis knows what it put into a render (a function name, an argument
//! value) and asks: which marker stands right before it, which right after?
//! These questions are PEG expressions over the rendered text (ordered choice,
//! greedy repetition, lookahead) with named captures. They run a few dozen
//! times per template on short strings, so a direct backtracking interpreter
//! is all that is needed.

use std::collections::BTreeMap;

/// A pattern over rendered text.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// Exactly this text.
    Literal(String),
    /// `<...>` or `[...]`.
    Marker,
    /// Zero or more spaces, tabs, carriage returns and newlines.
    Space,
    /// Everything up to (not including) the first of these delimiters, or to
    /// the end of the text when none occurs.
    Until(Vec<String>),
    /// One character.
    Any,
    /// Everything that is left.
    Rest,
    /// Succeeds only at the end of the text.
    End,
    Seq(Vec<Pattern>),
    /// Ordered choice: the first alternative that matches wins.
    Choice(Vec<Pattern>),
    /// Greedy zero-or-more.
    Many(Box<Pattern>),
    Optional(Box<Pattern>),
    /// Negative lookahead.
    Not(Box<Pattern>),
    /// Captures the text the inner pattern matched under a name.
    Tag(&'static str, Box<Pattern>),
}

/// Shorthands that keep the analysis readable.
pub mod p {
    use super::Pattern;
    pub fn lit(s: impl Into<String>) -> Pattern {
        Pattern::Literal(s.into())
    }
    pub fn marker() -> Pattern {
        Pattern::Marker
    }
    pub fn space() -> Pattern {
        Pattern::Space
    }
    pub fn until(s: impl Into<String>) -> Pattern {
        Pattern::Until(vec![s.into()])
    }
    pub fn until_one_of(s: &[&str]) -> Pattern {
        Pattern::Until(s.iter().map(|s| s.to_string()).collect())
    }
    pub fn any() -> Pattern {
        Pattern::Any
    }
    pub fn rest() -> Pattern {
        Pattern::Rest
    }
    pub fn end() -> Pattern {
        Pattern::End
    }
    pub fn seq(v: Vec<Pattern>) -> Pattern {
        Pattern::Seq(v)
    }
    pub fn choice(v: Vec<Pattern>) -> Pattern {
        Pattern::Choice(v)
    }
    pub fn many(x: Pattern) -> Pattern {
        Pattern::Many(Box::new(x))
    }
    pub fn opt(x: Pattern) -> Pattern {
        Pattern::Optional(Box::new(x))
    }
    pub fn not(x: Pattern) -> Pattern {
        Pattern::Not(Box::new(x))
    }
    pub fn tag(name: &'static str, x: Pattern) -> Pattern {
        Pattern::Tag(name, Box::new(x))
    }
    /// Any run of characters that contains no marker start.
    pub fn non_markers() -> Pattern {
        many(seq(vec![not(marker()), any()]))
    }
    /// The last marker of the text with whatever non-marker text follows it.
    pub fn last_marker_to_end() -> Pattern {
        seq(vec![marker(), non_markers(), end()])
    }
}

/// Named captures of a successful match.
#[derive(Debug, Default, Clone)]
pub struct Captures {
    pub matched: bool,
    tags: BTreeMap<&'static str, String>,
}

impl Captures {
    /// The text captured under `name`, or "" when there was none.
    pub fn get(&self, name: &str) -> &str {
        self.tags.get(name).map(String::as_str).unwrap_or("")
    }
}

impl Pattern {
    /// Matches at the start of `text` (need not consume all of it).
    pub fn match_start(&self, text: &str) -> Captures {
        let mut tags = Vec::new();
        match self.run(text, 0, &mut tags) {
            Some(_) => captures(text, tags),
            None => Captures::default(),
        }
    }

    /// Matches at the first position of `text` where the pattern matches.
    pub fn match_anywhere(&self, text: &str) -> Captures {
        if text.is_empty() {
            return self.match_start(text);
        }
        for (pos, _) in text.char_indices() {
            let mut tags = Vec::new();
            if self.run(text, pos, &mut tags).is_some() {
                return captures(text, tags);
            }
        }
        Captures::default()
    }

    fn run(&self, text: &str, pos: usize, tags: &mut Vec<(&'static str, usize, usize)>) -> Option<usize> {
        let rest = &text[pos..];
        match self {
            Pattern::Literal(s) => rest.starts_with(s.as_str()).then(|| pos + s.len()),
            Pattern::Marker => {
                let close = match rest.as_bytes().first()? {
                    b'<' => '>',
                    b'[' => ']',
                    _ => return None,
                };
                rest[1..].find(close).map(|i| pos + 1 + i + 1)
            }
            Pattern::Space => {
                let n = rest.bytes().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count();
                Some(pos + n)
            }
            Pattern::Until(delims) => {
                let stop = delims.iter().filter(|d| !d.is_empty()).filter_map(|d| rest.find(d.as_str())).min();
                Some(pos + stop.unwrap_or(rest.len()))
            }
            Pattern::Any => rest.chars().next().map(|c| pos + c.len_utf8()),
            Pattern::Rest => Some(text.len()),
            Pattern::End => rest.is_empty().then_some(pos),
            Pattern::Seq(items) => {
                let mark = tags.len();
                let mut at = pos;
                for item in items {
                    match item.run(text, at, tags) {
                        Some(next) => at = next,
                        None => {
                            tags.truncate(mark);
                            return None;
                        }
                    }
                }
                Some(at)
            }
            Pattern::Choice(items) => items.iter().find_map(|item| item.run(text, pos, tags)),
            Pattern::Many(inner) => {
                let mut at = pos;
                while let Some(next) = inner.run(text, at, tags) {
                    if next == at {
                        break;
                    }
                    at = next;
                }
                Some(at)
            }
            Pattern::Optional(inner) => Some(inner.run(text, pos, tags).unwrap_or(pos)),
            Pattern::Not(inner) => {
                let mut scratch = Vec::new();
                inner.run(text, pos, &mut scratch).is_none().then_some(pos)
            }
            Pattern::Tag(name, inner) => {
                let end = inner.run(text, pos, tags)?;
                tags.push((name, pos, end));
                Some(end)
            }
        }
    }
}

fn captures(text: &str, tags: Vec<(&'static str, usize, usize)>) -> Captures {
    let mut out = Captures { matched: true, tags: BTreeMap::new() };
    // Later captures of the same name win, as in a left-to-right walk.
    for (name, start, end) in tags {
        out.tags.insert(name, text[start..end].to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::p::*;

    #[test]
    fn finds_markers_around_a_needle() {
        let pat = seq(vec![
            tag("pre", seq(vec![marker(), space()])),
            lit("NEEDLE"),
            tag("post", seq(vec![space(), marker(), space()])),
            rest(),
        ]);
        let c = pat.match_anywhere("xx<think>\nNEEDLE\n</think>\n\nrest");
        assert!(c.matched);
        assert_eq!(c.get("pre"), "<think>\n");
        assert_eq!(c.get("post"), "\n</think>\n\n");
    }

    #[test]
    fn failed_branches_drop_their_captures() {
        let pat = choice(vec![seq(vec![tag("a", lit("x")), lit("nope")]), tag("b", lit("x"))]);
        let c = pat.match_start("xy");
        assert!(c.matched);
        assert_eq!(c.get("a"), "");
        assert_eq!(c.get("b"), "x");
    }

    #[test]
    fn last_marker_pattern() {
        let pat = seq(vec![many(seq(vec![not(last_marker_to_end()), any()])), tag("m", last_marker_to_end())]);
        let c = pat.match_start("<a>b<c>tail");
        assert_eq!(c.get("m"), "<c>tail");
    }
}
