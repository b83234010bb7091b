//! The floor of streaming: what handing a text to a sink in small chunks
//! costs before any parsing is done.
//!
//! A streamed parse of a 16 KB output in 4-byte chunks is 4,096 calls to
//! `feed`, each of which loads its chunk, checks that it is UTF-8, carries
//! a character the chunk cut off to the next call, and reports the whole
//! characters to the sink. No parser can do less. [`Passthrough`] does only
//! that, as cheaply as this crate knows how (the chunk in one register,
//! UTF-8 checked by [`Utf8State`] from where the last chunk left it), so
//! that instruction counts of the generated parsers can be read against
//! it: `bench/instructions.sh` prints it beside them.
//!
//! # Example
//! ```
//! use chat_parser_bench::{floor::Passthrough, Tally};
//! let mut tally = Tally::default();
//! let mut floor = Passthrough::default();
//! for chunk in "中文 text".as_bytes().chunks(4) {
//!     floor.feed(chunk, &mut tally);
//! }
//! floor.finish(&mut tally);
//! assert_eq!(tally.text_bytes, "中文 text".len());
//! ```

use chat_parser_runtime::__private::{whole_word, Word};
use chat_parser_runtime::utf8::{Utf8Carry, Utf8State, REPLACEMENT};
use chat_parser_runtime::{Event, Sink};

/// Reports a stream's text as [`Event::Content`], whole characters only,
/// decoded as `String::from_utf8_lossy` decodes the whole stream.
#[derive(Debug, Clone, Copy)]
pub struct Passthrough {
    /// The bytes of a character the last chunk cut off, little-endian
    /// (zero past `len`).
    carry: u64,
    len: usize,
    /// The UTF-8 check after the carried bytes.
    state: Utf8State,
}

impl Default for Passthrough {
    fn default() -> Self {
        Passthrough { carry: 0, len: 0, state: Utf8State::START }
    }
}

const HIGH: u64 = 0x8080_8080_8080_8080;

impl Passthrough {
    /// Reports the whole characters of `bytes` (after the carried ones).
    #[inline(always)]
    pub fn feed(&mut self, bytes: &[u8], sink: &mut impl Sink) {
        let Some(w) = Word::new(bytes) else { return self.feed_long(bytes, sink) };
        if self.len == 0 && w.bits & HIGH == 0 {
            // SAFETY: ASCII is UTF-8.
            sink.event(Event::Content(unsafe { core::str::from_utf8_unchecked(bytes) }));
            return;
        }
        // The carried bytes and the chunk's, in one register: up to 8 in
        // all (a longer chunk after a cut character goes the long way).
        let total = self.len + w.len;
        if total > 8 {
            return self.feed_long(bytes, sink);
        }
        let mut state = self.state;
        let mut rest = w.bits;
        for _ in 0..w.len {
            state = state.step(rest as u8);
            rest >>= 8;
        }
        let joined = self.carry | w.bits << (8 * self.len);
        // Whole up to the last character's first byte, unless that one is
        // whole (the runtime's own test, as the parsers make it).
        let Some(whole) = whole_word(state, Word { bits: joined, len: total }) else {
            return self.feed_long(bytes, sink);
        };
        if whole > 0 {
            let text = joined.to_le_bytes();
            // SAFETY: the check found `text[..whole]` whole characters of
            // valid UTF-8 (the carried bytes were checked with the chunk).
            sink.event(Event::Content(unsafe { core::str::from_utf8_unchecked(&text[..whole]) }));
        }
        self.carry = joined.checked_shr(8 * whole as u32).unwrap_or(0);
        self.len = total - whole;
        self.state = state;
    }

    /// A chunk of more than 8 bytes, or one with invalid UTF-8 in it: the
    /// runtime's lossy decoder ([`Utf8Carry`]) takes it from the carried
    /// bytes on.
    #[inline(never)]
    fn feed_long(&mut self, bytes: &[u8], sink: &mut impl Sink) {
        let mut carry = Utf8Carry::new();
        // (The carried bytes, a character's valid start, are carried again.)
        let _ = carry.split(&self.carry.to_le_bytes()[..self.len]);
        let split = carry.split(bytes);
        if !split.head().is_empty() {
            sink.event(Event::Content(split.head()));
        }
        split.rest().for_each(|piece| sink.event(Event::Content(piece)));
        let pending = carry.pending();
        self.carry = pending.iter().enumerate().fold(0, |w, (i, &b)| w | u64::from(b) << (8 * i));
        self.len = pending.len();
        self.state = Utf8State::START.read(pending);
    }

    /// Ends the stream: a character still cut off becomes U+FFFD.
    pub fn finish(&mut self, sink: &mut impl Sink) {
        if self.len > 0 {
            sink.event(Event::Content(REPLACEMENT));
        }
        *self = Passthrough::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Text(String);

    impl Sink for Text {
        fn event(&mut self, event: Event<'_>) {
            let Event::Content(t) = event else { panic!("only content: {event:?}") };
            self.0.push_str(t);
        }
    }

    #[test]
    fn decodes_as_from_utf8_lossy_in_every_chunking() {
        let inputs: [&[u8]; 7] = [
            "plain ASCII text".as_bytes(),
            "中文，还有 ASCII 和 emoji 😀 以及 é".as_bytes(),
            b"cut \xe4\xb8 then ASCII",
            b"\xff\xfe lone bytes \x80 and \xed\xa0\x80 a surrogate",
            b"ends cut \xf0\x9f\x98",
            b"\xe4\xb8\xad\xe4\xb8",
            b"overlong \xc0\xaf and \xe0\x80\xaf",
        ];
        for input in inputs {
            let expected = String::from_utf8_lossy(input);
            for size in 1..=input.len() {
                let mut out = Text(String::new());
                let mut floor = Passthrough::default();
                for chunk in input.chunks(size) {
                    floor.feed(chunk, &mut out);
                }
                floor.finish(&mut out);
                assert_eq!(out.0, expected, "{input:?} in {size}-byte chunks");
            }
        }
    }
}
