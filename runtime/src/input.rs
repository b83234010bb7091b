//! The input side of a generated parser: bytes in any chunking become text
//! the state machine can read, with what a later chunk decides about held in
//! a fixed window.
//!
//! Every generated module has the same input handling; only its state
//! machine differs. [`Input`] is that handling, written once for every
//! window size and taking the machine's [`Table`].

use crate::machine::{floor_boundary, Core};
use crate::table::{Machine, Table};
use crate::pack::{pack, unpack};
use crate::utf8::{ascii_str, complete_prefix, whole_word, Utf8Carry};
use crate::word::{is_ascii, Word};
use crate::Sink;

/// Chunks up to this size are decoded into one small buffer on the slow
/// path (chunks of up to 8 bytes take the inline fast path first).
const SMALL_CHUNK: usize = 64;
/// Copies a few bytes to `dst[at..]`: a plain loop, where `copy_from_slice`
/// would call `memcpy` for every handful of bytes.
#[inline(always)]
fn put<const N: usize>(dst: &mut [u8], at: usize, src: &[u8]) {
    // A fixed count of conditional byte stores: a loop over `src` alone
    // is turned back into a `memcpy` call.
    for i in 0..N {
        if let (Some(&s), Some(d)) = (src.get(i), dst.get_mut(at + i)) {
            *d = s;
        }
    }
}

/// Held-back bytes that a small chunk may complete on the fast path.
const HELD_SMALL: usize = 8;
/// The longest stop start the fast path holds back (a chunk of up to 8
/// bytes and a carried character end with at most 11).
const SMALL_HOLD: usize = 16;

/// Input state: the window of held-back text (`buf`, `[u8; W]` in a
/// parser) and an incomplete UTF-8 character carried to the next chunk.
///
/// The code is written once, for `Input<[u8]>` (a parser's input coerces to
/// it), so a binary holds one copy however many window sizes its parsers
/// have. [`Table::full`] is how much text the machine may have to look at
/// once (what it holds back, plus a chunk): the window's size for most
/// templates. Templates with a pack table ([`Table::pack`], see
/// [`crate::pack`]) keep held text longer than the window packed, and
/// unpack it into a buffer on the stack to run the machine over it.
#[derive(Debug, Clone)]
pub struct Input<B: ?Sized = [u8]> {
    len: u16,
    /// What `buf[..len]` holds.
    held: Held,
    utf8: Utf8Carry,
    finished: bool,
    /// Nothing held back, no character carried, not finished: the one test
    /// before a chunk may be reported where it is (kept by [`Self::settle`]).
    plain: bool,
    buf: B,
}

impl<const W: usize> Default for Input<[u8; W]> {
    fn default() -> Self {
        Input { buf: [0; W], len: 0, held: Held::Text, utf8: Utf8Carry::new(), finished: false, plain: true }
    }
}

/// The longest text a machine looks at at once ([`Table::full`]): the
/// largest stack buffer packed windows are unpacked into.
pub const MAX_FULL: usize = 4096;

/// Runs `f` with a zeroed stack buffer of `full` bytes (at most
/// [`MAX_FULL`]): the buffer is one of a few sizes, the smallest that holds
/// `full`, so that a template's buffer costs little more to clear than its
/// own size.
#[inline(never)]
fn with_scratch<T>(full: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
    fn run<const N: usize, T>(full: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
        let mut buf = [0u8; N];
        f(&mut buf[..full.min(N)])
    }
    match full {
        0..=256 => run::<256, T>(full, f),
        257..=1024 => run::<1024, T>(full, f),
        1025..=2048 => run::<2048, T>(full, f),
        _ => run::<MAX_FULL, T>(full, f),
    }
}

/// What the window holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Whole characters: text cut at character boundaries, so the next
    /// chunk's text completes it without checking it again.
    Text,
    /// Packed text ([`crate::pack`]).
    Packed,
    /// Bytes not known to be whole characters: the machine kept text from
    /// inside a character, which it never should. Checked when read.
    Bytes,
}

impl Held {
    /// `text[keep..]`: whole characters when `keep` is a character boundary.
    fn of(text: &[u8], keep: usize) -> Held {
        // A suffix of valid UTF-8 is valid unless it starts inside a
        // character (with a continuation byte).
        match text.get(keep) {
            Some(&b) if (b as i8) < -0x40 => Held::Bytes,
            _ => Held::Text,
        }
    }
}

impl Input<[u8]> {
    /// Parses the next chunk of output with machine `M`.
    ///
    /// The common streaming case (a few ASCII bytes, nothing held back, a
    /// state that reports them unchanged) is decided here, inlined into the
    /// caller; everything else goes to the out-of-line [`Self::feed_slow`].
    #[inline(always)]
    pub fn feed<M: Machine, const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        entry: &u16,
        bytes: &[u8],
        sink: &mut impl Sink,
    ) {
        let m = M::TABLE;
        if self.plain {
            if let Some(w) = Word::new(bytes) {
                if is_ascii(w) {
                    // SAFETY: every ASCII byte sequence is valid UTF-8.
                    let s = unsafe { core::str::from_utf8_unchecked(bytes) };
                    if w.len == 0 {
                        return;
                    }
                    // Nothing is held before the chunk; after it, only what
                    // `hold_partial` keeps.
                    if M::fast_step(core, s, w, sink) {
                        core.fast_consumed(s.len());
                        return;
                    }
                    if self.hold_partial(core, m, s, sink) {
                        core.fast_consumed(s.len() - self.len as usize);
                        return;
                    }
                } else if self.feed_chars::<M, R, P>(core, 0, bytes, sink) {
                    return;
                }
            }
        } else if !self.finished
            && bytes.len() <= 8
            && self.held != Held::Packed
            && (self.len == 0 || (self.len as usize <= HELD_SMALL && core.pos == 0))
            && self.feed_chars::<M, R, P>(core, self.len as usize, bytes, sink)
        {
            return;
        }
        // The entry state is read there: only the machine needs it.
        self.feed_slow(core, m, entry, bytes, sink);
    }

    /// A small chunk with multi-byte characters in it, or after a character
    /// the last chunk cut off (text of many multi-byte characters: most of
    /// its chunks). With nothing held and at most 8 bytes joined (in a
    /// register), the whole characters are reported by the current state's
    /// fast path (the module's own rows, inlined), or up to the start of a
    /// stop they end with ([`Self::hold_partial`]). Held bytes, or more
    /// than 8 joined, go to [`Self::feed_joined`]. False, and nothing
    /// changed, when no fast path takes the chunk.
    ///
    /// Generic over the machine, so a copy in every module (1.5–3.1 KB,
    /// with the UTF-8 check and every fast row inlined: a module's states
    /// left room for them when literals became numbers).
    #[inline(never)]
    fn feed_chars<M: Machine, const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        held: usize,
        bytes: &[u8],
        sink: &mut impl Sink,
    ) -> bool {
        let (carried, n, after_carried) = self.utf8.word();
        let total = n + bytes.len();
        if let (0, Some(w), true) = (held, Word::new(bytes), total <= 8) {
            // The carried bytes, then the chunk's, in one word; the check
            // goes on from where the carried bytes left it.
            let bits = u64::from(carried) | w.bits << (8 * n);
            let state = after_carried.then_word(w.bits, w.len);
            let joined = bits.to_le_bytes();
            // (Invalid UTF-8, or text no fast path takes, is the machine's:
            // `feed_joined` would join and try the same again.)
            let Some(end) = whole_word(state, Word { bits, len: total }) else { return false };
            // SAFETY: the state machine found `joined[..end]` whole
            // characters of valid UTF-8.
            let s = unsafe { core::str::from_utf8_unchecked(&joined[..end]) };
            let word = Word { bits: bits & u64::MAX.checked_shr(8 * (8 - end) as u32).unwrap_or(0), len: end };
            // By the module's rows, inlined (about 45 instructions a chunk
            // fewer than the table's, which work a row out from the
            // state); then, as in `feed_joined`, up to the start of a stop
            // it ends with.
            if end > 0 {
                let stepped = M::fast_step(core, s, word, sink);
                if stepped {
                    core.fast_consumed(end);
                } else if self.hold_partial(core, M::TABLE, s, sink) {
                    core.fast_consumed(end - self.len as usize);
                } else {
                    return false;
                }
            }
            // The cut character's bytes: the word past `end` (zero past
            // `total`), and the check inside that character (where reading
            // only its bytes leaves it).
            self.utf8.set_word(bits.checked_shr(8 * end as u32).unwrap_or(0) as u32, total - end, state);
            // `settle`, knowing two of its three reads: the output is not
            // finished (`feed` comes here only then), and no character is
            // carried when the joined bytes ended whole (`total == end`).
            // `len` is what `hold_partial` may have held.
            self.plain = self.len == 0 && total == end;
            return true;
        }
        self.feed_joined(core, M::TABLE, held, bytes, sink)
    }

    /// The fast path for a small chunk joined to what comes before it:
    /// `held` bytes of the window that the current state has not read yet
    /// (the start of a stop the last chunk cut off: `<` in `a <`), and the
    /// start of a character the last chunk cut off. When the joined text
    /// needs no decision, the state reports it as one piece (with nothing
    /// held: up to the start of a stop it ends with, which is then held);
    /// false, and nothing changed, otherwise.
    #[inline(never)]
    fn feed_joined<const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        m: &'static Table,
        held: usize,
        bytes: &[u8],
        sink: &mut impl Sink,
    ) -> bool {
        // The held bytes must be only what the state has not read: an
        // uncommitted round would also hold its markup for a rewind.
        if held > 0 && !core.settled() {
            return false;
        }
        let mut buf = [0u8; HELD_SMALL + 3 + 8];
        let joined: &[u8] = if held == 0 && self.utf8.is_empty() {
            // Nothing to join (the common case: a chunk with a multi-byte
            // character in it): the chunk is checked where it is.
            bytes
        } else {
            let carried = self.utf8.pending();
            let total = held + carried.len() + bytes.len();
            if total > buf.len() {
                return false;
            }
            put::<HELD_SMALL>(&mut buf, 0, &self.buf[..held]);
            put::<3>(&mut buf, held, carried);
            put::<8>(&mut buf, held + carried.len(), bytes);
            &buf[..total]
        };
        let Some(end) = complete_prefix(joined) else { return false };
        // SAFETY: complete_prefix checked that these bytes are whole characters.
        let s = unsafe { core::str::from_utf8_unchecked(&joined[..end]) };
        if !s.is_empty() {
            let word = Word::new(s.as_bytes()).unwrap_or(Word::NONE);
            if m.fast(core, s, word, sink) {
                core.fast_consumed(s.len());
            } else if held == 0 && self.hold_partial(core, m, s, sink) {
                core.fast_consumed(s.len() - self.len as usize);
            } else {
                return false;
            }
        }
        if held > 0 {
            self.len = 0;
        }
        self.utf8.set(&joined[end..]);
        self.settle();
        true
    }

    /// With nothing held back: reports `s` up to the start of a stop it
    /// ends with, and holds that start, as the machine would
    /// ([`Table::fast_partial`]); false (nothing changed) otherwise.
    #[inline(never)]
    fn hold_partial<const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        m: &'static Table,
        s: &str,
        sink: &mut impl Sink,
    ) -> bool {
        // An uncommitted round keeps its markup in the window: the machine
        // would hold more than the stop's start.
        if self.len != 0 || core.pos != 0 || !core.settled() {
            return false;
        }
        // Callers pass a chunk joined to at most a carried character.
        match m.fast_partial(core, s, self.buf.len().min(SMALL_HOLD), sink) {
            Some(p) => {
                let keep = s.len().saturating_sub(p.min(SMALL_HOLD));
                put::<SMALL_HOLD>(&mut self.buf, 0, &s.as_bytes()[keep..]);
                // What was written (`p` itself, from a well-behaved machine).
                self.len = (s.len() - keep) as u16;
                self.held = Held::of(s.as_bytes(), keep);
                self.settle();
                true
            }
            _ => false,
        }
    }

    /// Brings `plain` up to date after anything that may change the window,
    /// the carried character or `finished`.
    #[inline(always)]
    fn settle(&mut self) {
        self.plain = self.len == 0 && self.utf8.is_empty() && !self.finished;
    }

    /// [`Self::feed`] for a chunk the fast path did not take.
    #[inline(never)]
    fn feed_slow<const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        m: &'static Table,
        entry: &u16,
        bytes: &[u8],
        sink: &mut impl Sink,
    ) {
        let entry = *entry;
        // Every way out passes `settle`: the window, the carried character
        // or `finished` may have changed.
        'slow: {
            if self.finished {
                break 'slow;
            }
            // Output that degraded is content: a chunk that is whole
            // characters, with nothing held before it, is reported as it is
            // (the module's fast path covers only its text states).
            if self.plain && core.degraded() {
                if let Some(s) = crate::block::utf8_text(bytes) {
                    if !s.is_empty() {
                        sink.event(crate::Event::Content(s));
                        core.fast_consumed(s.len());
                    }
                    break 'slow;
                }
            }
            // Streaming case: a small chunk (with the start of a character the
            // last one cut off) becomes text once.
            if bytes.len() <= SMALL_CHUNK {
                if self.utf8.is_empty() {
                    if let Some(s) = ascii_str(bytes) {
                        // Chunks of up to 8 bytes were offered to the fast path
                        // already.
                        if s.is_empty() {
                        } else if self.len == 0 && s.len() > 8 && m.fast(core, s, Word::NONE, sink) {
                            core.fast_consumed(s.len());
                        } else {
                            self.push(core, m, entry, s, sink);
                        }
                        break 'slow;
                    }
                }
                let mut tmp = [0u8; SMALL_CHUNK + 4];
                let carried = self.utf8.pending().len();
                tmp[..carried].copy_from_slice(self.utf8.pending());
                tmp[carried..carried + bytes.len()].copy_from_slice(bytes);
                let all = &tmp[..carried + bytes.len()];
                let text = match core::str::from_utf8(all) {
                    Ok(s) => Some((s, all.len())),
                    // Only an incomplete character at the end.
                    Err(e) if e.error_len().is_none() => core::str::from_utf8(&all[..e.valid_up_to()]).ok().map(|s| (s, e.valid_up_to())),
                    Err(_) => None,
                };
                if let Some((s, valid)) = text {
                    self.utf8 = Utf8Carry::new();
                    if valid < all.len() {
                        let _ = self.utf8.split(&all[valid..]);
                    }
                    if s.is_empty() {
                    } else if self.len == 0 && m.fast(core, s, Word::new(s.as_bytes()).unwrap_or(Word::NONE), sink) {
                        core.fast_consumed(s.len());
                    } else {
                        self.push(core, m, entry, s, sink);
                    }
                    break 'slow;
                }
            } else if self.utf8.is_empty() {
                if let Some(s) = crate::block::utf8_text(bytes) {
                    self.push(core, m, entry, s, sink);
                    break 'slow;
                }
            }
            // Invalid UTF-8, or a character cut off before a large chunk.
            let split = self.utf8.split(bytes);
            let head = split.head();
            if !head.is_empty() {
                let mut b = [0u8; 4];
                let n = head.len();
                b[..n].copy_from_slice(head.as_bytes());
                if let Ok(h) = core::str::from_utf8(&b[..n]) {
                    self.push(core, m, entry, h, sink);
                }
            }
            for piece in split.rest() {
                self.push(core, m, entry, piece, sink);
            }
        }
        self.settle();
    }

    /// Ends the output: runs the machine over what was held back.
    pub fn finish<const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        m: &'static Table,
        entry: u16,
        sink: &mut impl Sink,
    ) {
        if self.finished {
            return;
        }
        let tail = self.utf8.finish();
        if !tail.is_empty() {
            self.push(core, m, entry, tail, sink);
        }
        // Markup held over the limit breaks as it would have at the next
        // chunk (the check comes before a step): that is not the end
        // cutting the call off.
        let mut end = |text: &str| {
            m.run(core, entry, text, false, sink);
            core.ending();
            m.run(core, entry, text, true, sink);
            core.finish(text.len(), sink);
        };
        let held = &self.buf[..self.len as usize];
        if self.held == Held::Packed {
            with_scratch(m.full as usize, |scratch| {
                let n = unpack(held, m.pack, scratch);
                end(core::str::from_utf8(&scratch[..n]).unwrap_or(""));
            });
        } else {
            end(core::str::from_utf8(held).unwrap_or(""));
        }
        self.len = 0;
        self.held = Held::Text;
        self.finished = true;
        self.settle();
    }

    /// Keeps `text[keep..]` as the window: as it is when it fits, packed
    /// when the template packs and that fits; false when neither fits.
    fn store(&mut self, m: &Table, text: &str, keep: usize) -> bool {
        let held = &text.as_bytes()[keep..];
        if held.len() <= self.buf.len() {
            self.buf[..held.len()].copy_from_slice(held);
            self.len = held.len() as u16;
            self.held = Held::of(text.as_bytes(), keep);
            return true;
        }
        if held.len() > m.full as usize || m.pack.is_empty() {
            return false;
        }
        // `pack` writes as it goes and may give up: until it succeeds the
        // window holds no text known to be whole characters.
        self.held = Held::Bytes;
        match pack(held, m.pack, &mut self.buf) {
            Some(n) => {
                self.len = n as u16;
                self.held = Held::Packed;
                true
            }
            None => false,
        }
    }

    fn push<const R: usize, const P: usize>(
        &mut self,
        core: &mut Core<'_, R, P>,
        m: &'static Table,
        entry: u16,
        mut s: &str,
        sink: &mut impl Sink,
    ) {
        while !s.is_empty() {
            if self.len == 0 {
                // Nothing held back: parse the chunk where it is.
                let piece = &s[..floor_boundary(s, 1 << 30)];
                s = &s[piece.len()..];
                loop {
                    m.run(core, entry, piece, false, sink);
                    let keep = core.keep().min(piece.len());
                    if self.store(m, piece, keep) {
                        core.rebase(keep);
                        break;
                    }
                    // More would have to be held back than fits: the held
                    // markup counts as broken.
                    core.fail(piece, sink, |r| m.resume(entry, r));
                }
            } else if !m.pack.is_empty() && (self.held == Held::Packed || self.len as usize + s.len() > self.buf.len()) {
                // Held text that is (or will be) longer than the window:
                // unpacked on the stack, completed, run, kept packed.
                s = with_scratch(m.full as usize, |scratch| {
                    let full = scratch.len();
                    let mut len = if self.held == Held::Packed {
                        unpack(&self.buf[..self.len as usize], m.pack, scratch)
                    } else {
                        let n = self.len as usize;
                        scratch[..n].copy_from_slice(&self.buf[..n]);
                        n
                    };
                    let n = floor_boundary(s, full - len);
                    scratch[len..len + n].copy_from_slice(&s.as_bytes()[..n]);
                    len += n;
                    let held = &scratch[..len];
                    let text = crate::block::utf8_text(held).unwrap_or("");
                    m.run(core, entry, text, false, sink);
                    loop {
                        let keep = core.keep().min(len);
                        let stuck = keep == 0 && (len == full || n == 0);
                        if !stuck && self.store(m, text, keep) {
                            core.rebase(keep);
                            break;
                        }
                        core.fail(text, sink, |r| m.resume(entry, r));
                        m.run(core, entry, text, false, sink);
                    }
                    &s[n..]
                });
            } else {
                // Complete what is held back with the new text.
                let n = floor_boundary(s, self.buf.len() - self.len as usize);
                let len = self.len as usize;
                self.buf[len..len + n].copy_from_slice(&s.as_bytes()[..n]);
                s = &s[n..];
                let len = len + n;
                let held = &self.buf[..len];
                let text = match self.held {
                    // SAFETY: `Held::Text` is whole characters, and `s` is
                    // cut at a character boundary: together whole
                    // characters. (This text is checked on every chunk
                    // otherwise, a third of the time spent in markup.)
                    Held::Text => unsafe { core::str::from_utf8_unchecked(held) },
                    _ => core::str::from_utf8(held).unwrap_or(""),
                };
                m.run(core, entry, text, false, sink);
                let mut keep = core.keep().min(len);
                // The window is full (`full` is its size here unless
                // packing lets the text grow longer), or nothing more could
                // be added.
                while keep == 0 && (len == m.full as usize || n == 0) {
                    core.fail(text, sink, |r| m.resume(entry, r));
                    m.run(core, entry, text, false, sink);
                    keep = core.keep().min(len);
                }
                let kept = if text.len() == len { Held::of(text.as_bytes(), keep) } else { Held::Bytes };
                if keep > 0 {
                    // (Markup of an uncommitted round keeps all it holds.)
                    self.buf.copy_within(keep..len, 0);
                }
                self.len = (len - keep) as u16;
                self.held = kept;
                core.rebase(keep);
            }
        }
    }
}
