//! Finding markers in streamed text, and holding back text that may be the
//! start of one.
//!
//! A parser reading text up to a marker (a "stop", such as `</think>`) can
//! pass on all text before the first stop, except a tail that is a proper
//! prefix of a stop: the next chunk may complete it. [`find_first`] finds the
//! stop, [`partial_suffix_len`] measures the tail to hold back, and
//! [`HoldBuf`] keeps held text across chunks in fixed space.

use core::str;

/// The earliest occurrence of any stop in `text`: its position and the index
/// of the stop in `stops`.
///
/// When several stops occur at that position (one is a prefix of another),
/// the first of them in `stops` order wins, so list longer stops first when
/// the longer should win. Empty stops are ignored.
///
/// Guarantees: one pass over `text` (a stop that never occurs costs no scan
/// of its own), no allocation, no panic. At each position where some stop's
/// first byte occurs, the stops are compared in order.
///
/// # Example
/// ```
/// use chat_parser_runtime::holdback::find_first;
/// let stops: &[&[u8]] = &[b"</tool_call>", b"</think>"];
/// assert_eq!(find_first(b"hmm</think>x</tool_call>", stops), Some((3, 1)));
/// assert_eq!(find_first(b"<think", stops), None);
/// ```
#[must_use]
pub fn find_first(text: &[u8], stops: &[&[u8]]) -> Option<(usize, usize)> {
    let mut first_bytes = [false; 256];
    let mut distinct = 0;
    let mut one = 0;
    for stop in stops {
        if let Some(&b) = stop.first() {
            if !first_bytes[b as usize] {
                first_bytes[b as usize] = true;
                distinct += 1;
                one = b;
            }
        }
    }
    let matching = |at: usize| {
        let rest = &text[at..];
        stops
            .iter()
            .position(|s| !s.is_empty() && rest.starts_with(s))
            .map(|stop| (at, stop))
    };
    match distinct {
        0 => None,
        // Common case (`<...>` markers): a plain byte comparison per byte.
        1 => text
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == one)
            .find_map(|(at, _)| matching(at)),
        _ => text
            .iter()
            .enumerate()
            .filter(|&(_, &b)| first_bytes[b as usize])
            .find_map(|(at, _)| matching(at)),
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of some
/// stop (0 if none): the bytes to hold back until more text shows whether a
/// stop begins there.
///
/// A stop that occurs whole in `text` does not count (find it with
/// [`find_first`] first). If the stops and `text` are valid UTF-8 the held
/// suffix starts at a character boundary, since it starts like a stop.
///
/// Guarantees: no allocation, no panic; the result is below the length of
/// the longest stop and at most `text.len()`.
///
/// # Example
/// ```
/// use chat_parser_runtime::holdback::partial_suffix_len;
/// let stops: &[&[u8]] = &[b"</think>", b"<tool_call>"];
/// assert_eq!(partial_suffix_len(b"so the answer</th", stops), 4);
/// assert_eq!(partial_suffix_len(b"x <", stops), 1);
/// assert_eq!(partial_suffix_len(b"x </think>", stops), 0);
/// ```
#[must_use]
pub fn partial_suffix_len(text: &[u8], stops: &[&[u8]]) -> usize {
    let mut best = 0;
    for stop in stops {
        let Some(&first) = stop.first() else { continue };
        let longest = (stop.len() - 1).min(text.len());
        for n in (best + 1..=longest).rev() {
            let suffix = &text[text.len() - n..];
            if suffix[0] == first && stop.starts_with(suffix) {
                best = n;
                break;
            }
        }
    }
    best
}

/// A fixed-capacity buffer of text held back across chunks.
///
/// Guarantees: holds at most `N` bytes in place, never allocates, never
/// panics; its content is always valid UTF-8. When a push does not fit,
/// [`push`](Self::push) returns `false` and leaves the buffer unchanged: the
/// caller flushes (passes the held text on, or decides that no marker can
/// start there) and pushes again. Choose `N` at least the longest marker
/// length so that a marker prefix always fits.
///
/// # Example
/// ```
/// use chat_parser_runtime::holdback::HoldBuf;
/// let mut held = HoldBuf::<8>::new();
/// assert!(held.push("</th"));
/// assert!(held.push("in"));
/// assert_eq!(held.as_str(), "</thin");
/// assert!(!held.push("k>..."), "does not fit: nothing is pushed");
/// assert_eq!(held.as_str(), "</thin");
/// held.clear();
/// assert!(held.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldBuf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> Default for HoldBuf<N> {
    fn default() -> HoldBuf<N> {
        HoldBuf::new()
    }
}

impl<const N: usize> HoldBuf<N> {
    /// The capacity in bytes.
    pub const CAPACITY: usize = N;

    /// An empty buffer.
    pub const fn new() -> HoldBuf<N> {
        HoldBuf {
            bytes: [0; N],
            len: 0,
        }
    }

    /// Appends `text` if it fits whole; returns `false` (and appends
    /// nothing) if it does not.
    pub fn push(&mut self, text: &str) -> bool {
        let end = self.len + text.len();
        if end > N {
            return false;
        }
        self.bytes[self.len..end].copy_from_slice(text.as_bytes());
        self.len = end;
        true
    }

    /// The held text.
    pub fn as_str(&self) -> &str {
        // Always valid: only whole `&str`s are pushed, and prefixes are
        // removed at character boundaries.
        str::from_utf8(self.as_bytes()).unwrap_or_default()
    }

    /// The held text as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Length of the held text in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes that can still be pushed.
    pub fn remaining(&self) -> usize {
        N - self.len
    }

    /// Empties the buffer.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Removes the first `n` bytes (text that was passed on), keeping the
    /// rest. Returns `false` and changes nothing if `n` is beyond the end or
    /// not at a character boundary.
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::holdback::HoldBuf;
    /// let mut held = HoldBuf::<8>::new();
    /// held.push("é</t");
    /// assert!(!held.remove_prefix(1));
    /// assert!(held.remove_prefix(2));
    /// assert_eq!(held.as_str(), "</t");
    /// ```
    pub fn remove_prefix(&mut self, n: usize) -> bool {
        if !self.as_str().is_char_boundary(n) {
            return false;
        }
        self.bytes.copy_within(n..self.len, 0);
        self.len -= n;
        true
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// The obvious quadratic search.
    fn naive_find(text: &[u8], stops: &[&[u8]]) -> Option<(usize, usize)> {
        (0..=text.len()).find_map(|at| {
            stops
                .iter()
                .position(|s| !s.is_empty() && text[at..].starts_with(s))
                .map(|i| (at, i))
        })
    }

    fn naive_partial(text: &[u8], stops: &[&[u8]]) -> usize {
        (0..=text.len())
            .filter(|&n| {
                stops
                    .iter()
                    .any(|s| n < s.len() && s.starts_with(&text[text.len() - n..]))
            })
            .max()
            .unwrap_or(0)
    }

    const TEXTS: &[&[u8]] = &[
        b"",
        b"<",
        b"</",
        b"abc</think>def",
        b"<tool<tool_call>",
        b"<tool_call",
        b"x<tool",
        b"<<<<",
        b"aaab",
        "é</th".as_bytes(),
    ];

    #[test]
    fn find_first_agrees_with_the_naive_search() {
        let stop_sets: &[&[&[u8]]] = &[
            &[],
            &[b""],
            &[b"</think>"],
            &[b"<tool", b"<tool_call>"],
            &[b"<tool_call>", b"<tool"],
            &[b"<<", b"<"],
            &[b"aab", b"b", b""],
            &[b"\xc3\xa9"],
        ];
        for stops in stop_sets {
            for text in TEXTS {
                assert_eq!(
                    find_first(text, stops),
                    naive_find(text, stops),
                    "{text:?} {stops:?}"
                );
                assert_eq!(
                    partial_suffix_len(text, stops),
                    naive_partial(text, stops),
                    "{text:?} {stops:?}"
                );
            }
        }
    }

    #[test]
    fn stops_that_are_prefixes_of_each_other() {
        let short_first: &[&[u8]] = &[b"<tool", b"<tool_call>"];
        let long_first: &[&[u8]] = &[b"<tool_call>", b"<tool"];
        assert_eq!(find_first(b"a<tool_call>", short_first), Some((1, 0)));
        assert_eq!(find_first(b"a<tool_call>", long_first), Some((1, 0)));
        assert_eq!(find_first(b"a<tool>", long_first), Some((1, 1)));
        // A whole shorter stop is no partial; the longer one still is.
        assert_eq!(partial_suffix_len(b"a<tool", short_first), 5);
        assert_eq!(partial_suffix_len(b"a<tool_c", short_first), 7);
        assert_eq!(partial_suffix_len(b"<<", &[b"<<<"]), 2);
    }

    #[test]
    fn hold_buffer_refuses_what_does_not_fit() {
        let mut held = HoldBuf::<4>::new();
        assert_eq!(HoldBuf::<4>::CAPACITY, 4);
        assert!(held.push("ab"));
        assert!(held.push(""));
        assert!(!held.push("cde"));
        assert_eq!((held.as_str(), held.remaining()), ("ab", 2));
        assert!(held.push("€".get(..0).unwrap()));
        assert!(!held.push("€"));
        assert!(held.push("cd"));
        assert_eq!(held.remaining(), 0);
        assert!(!held.remove_prefix(5));
        assert!(held.remove_prefix(4));
        assert!(held.is_empty());
        let mut zero = HoldBuf::<0>::new();
        assert!(zero.push(""));
        assert!(!zero.push("a"));
    }
}
