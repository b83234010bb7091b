//! What each kind of state does ([`crate::table::State`]): match a
//! literal, skip whitespace, read text up to a stop, read a JSON string.
//! A generated module's table says which states it has; the runtime's
//! [`Table::step`] calls these.
//!
//! Each returns the [`Flow`] the state's step ends with, having moved to
//! `next` when it is done.

use crate::machine::{end, floor_boundary, lit, ws_end, Core, Flow, Found, Kind, MAX_NAME_LEN, G};
use crate::table::{Ending, StopSet, Table};
use crate::Sink;

/// The state's step result for a guard-like match: go on at `p`, wait, or fail.
#[inline]
fn advance<const R: usize, const P: usize>(c: &mut Core<'_, R, P>, g: G, next: u16) -> Flow {
    match g {
        G::Match(p) => {
            c.pos = p;
            c.st = next;
            Flow::Go
        }
        G::More => Flow::More,
        G::No => Flow::Fail,
    }
}

impl<const R: usize, const P: usize> Core<'_, R, P> {
    /// The grammar is done: anything after it makes the rest content.
    pub fn done_state(&mut self, t: &str) -> Flow {
        if self.pos < t.len() {
            self.set_degraded();
            return Flow::Go;
        }
        Flow::Stop
    }

    /// Starts reading text up to a stop (the state `next` reads it).
    #[inline]
    pub fn text_start(&mut self, next: u16) -> Flow {
        self.until_start();
        self.st = next;
        Flow::Go
    }

    /// Starts a JSON value (the state `next` scans it): a Python literal
    /// where `python`, only an object where `object_only`.
    #[inline]
    pub fn json_start(&mut self, python: bool, object_only: bool, next: u16) -> Flow {
        self.json = crate::json::JsonScanner::new(python, object_only);
        self.st = next;
        Flow::Go
    }

    /// Markup that must come next, exactly.
    #[inline(never)]
    pub fn literal_state(&mut self, t: &str, last: bool, literal: &str, next: u16) -> Flow {
        let g = lit(t, self.pos, literal, last);
        advance(self, g, next)
    }

    /// Whitespace (none or more), then markup that must come next, exactly.
    #[inline(never)]
    pub fn spaced_literal_state(&mut self, t: &str, last: bool, literal: &str, next: u16) -> Flow {
        match self.space_state(t, last, self.st) {
            Flow::Go => self.literal_state(t, last, literal, next),
            wait => wait,
        }
    }

    /// Whitespace (none or more).
    #[inline(never)]
    pub fn space_state(&mut self, t: &str, last: bool, next: u16) -> Flow {
        self.pos = ws_end(t, self.pos);
        if self.pos >= t.len() && !last {
            return Flow::More;
        }
        self.st = next;
        Flow::Go
    }

    /// One newline, if there is one.
    #[inline(never)]
    pub fn newline_state(&mut self, t: &str, last: bool, next: u16) -> Flow {
        if self.pos >= t.len() && !last {
            return Flow::More;
        }
        if t.as_bytes().get(self.pos) == Some(&b'\n') {
            self.pos += 1;
        }
        self.st = next;
        Flow::Go
    }

    /// The end of the output.
    #[inline(never)]
    pub fn end_state(&mut self, t: &str, last: bool, next: u16) -> Flow {
        let g = end(t, self.pos, last);
        advance(self, g, next)
    }

    /// Text of `kind` up to the first of `stops` (to the end of the output
    /// without stops): reported as it comes, or kept for the end (see
    /// [`Core::until_step`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub fn text_state(
        &mut self,
        t: &str,
        last: bool,
        kind: Kind,
        trim: bool,
        stops: &StopSet,
        next: u16,
        sink: &mut impl Sink,
    ) -> Flow {
        let rest = t.as_bytes().get(self.pos..).unwrap_or(&[]);
        let found = match stops.ending(rest, last) {
            Ending::At(i) => Found { take: i, done: true },
            // (The closer and what follows it are held until known.)
            Ending::Undecided(i) => Found { take: i, done: false },
            Ending::Nowhere if last => Found { take: rest.len(), done: true },
            Ending::Nowhere => Found { take: rest.len() - stops.partial(rest), done: false },
        };
        self.step_done(t, kind, trim, found, next, sink)
    }

    /// A name (of a tool, an argument) up to the first of `stops`: no
    /// longer than the name room, and never cut off by the end of the
    /// output. A name that ends commits the call in this step, so the hold
    /// limit ([`Table::over_hold`]) is checked where it ends.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub fn name_state<S: Sink>(
        &mut self,
        t: &str,
        last: bool,
        kind: Kind,
        trim: bool,
        stops: &StopSet,
        table: &Table,
        next: u16,
        sink: &mut S,
    ) -> Flow {
        let rest = t.as_bytes().get(self.pos..).unwrap_or(&[]);
        // A name is short: look no further than where it could end.
        let room = self.name_room();
        let cut = floor_boundary(t.get(self.pos..).unwrap_or(""), room + stops.longest as usize);
        let rest = &rest[..cut.min(rest.len())];
        let hit = stops.find(rest);
        let found = match hit {
            Some(i) if i > room => return Flow::Fail,
            Some(i) => Found { take: i, done: true },
            None if last => return Flow::Fail,
            None => {
                let take = rest.len() - stops.partial(rest);
                if take > room {
                    return Flow::Fail;
                }
                Found { take, done: false }
            }
        };
        if found.done && table.over_hold(self, t, self.pos + found.take) {
            return Flow::Fail;
        }
        self.step_done(t, kind, trim, found, next, sink)
    }

    /// On to `declared` when the text ahead, up to the first of `stops`,
    /// names a declared tool, else to `other` (also without declared tools,
    /// and where no stop comes within a name's length); reads nothing.
    #[inline(never)]
    pub fn by_tool_name(&mut self, t: &str, last: bool, stops: &StopSet, declared: u16, other: u16) -> Flow {
        let ahead = t.get(self.pos..).unwrap_or("");
        let window = &ahead[..floor_boundary(ahead, MAX_NAME_LEN + stops.longest as usize)];
        let named = match stops.find(window.as_bytes()) {
            Some(i) if i <= MAX_NAME_LEN => {
                let name = crate::machine::name_text(window.get(..i).unwrap_or(""));
                self.declares(name)
            }
            Some(_) => false,
            None if last || window.len() - stops.partial(window.as_bytes()) > MAX_NAME_LEN => false,
            None => return Flow::More,
        };
        self.st = if named { declared } else { other };
        Flow::Go
    }

    /// One alternative of a choice, by its guard's answer `g`: taken (on
    /// to `next`, past the markup the guard matched), waited for, or
    /// `None` to try the next alternative.
    #[inline]
    pub fn choose(&mut self, g: G, next: u16) -> Option<Flow> {
        match g {
            G::No => None,
            g => Some(advance(self, g, next)),
        }
    }

    /// A lookahead, by its guard's answer `g`: on to `next` without
    /// reading anything when it matches.
    #[inline]
    pub fn peek_state(&mut self, g: G, next: u16) -> Flow {
        match g {
            G::Match(_) => {
                self.st = next;
                Flow::Go
            }
            G::More => Flow::More,
            G::No => Flow::Fail,
        }
    }

    /// One alternative of a counted loop (`repeat`, alternative `alt`, at
    /// most `limit` rounds of it): when it may run another round and its
    /// guard matches, the round starts and the machine goes to `body`.
    /// `None` to try the next alternative.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub fn round(
        &mut self,
        t: &str,
        last: bool,
        (repeat, alt, limit): (usize, usize, Option<u8>),
        recover: bool,
        guard: impl FnOnce(&str, usize, bool) -> G,
        body: u16,
    ) -> Option<Flow> {
        if !self.may_try(repeat, alt, limit) {
            return None;
        }
        let start = self.pos;
        match guard(t, self.pos, last) {
            G::Match(p) => {
                if !self.start_round(repeat, alt, limit.is_some(), recover, start, p) {
                    return Some(Flow::Fail);
                }
                self.st = body;
                Some(Flow::Go)
            }
            G::More => Some(Flow::More),
            G::No => None,
        }
    }

    /// The content of a JSON string, reported as `kind`.
    #[inline(never)]
    pub fn json_string_state(&mut self, t: &str, last: bool, kind: Kind, next: u16, sink: &mut impl Sink) -> Flow {
        let step = self.json_string_step(t, kind, last, sink);
        self.flow(step, next)
    }

    /// One step of text reading, then on to `next` when the text is done.
    #[inline]
    fn step_done(&mut self, t: &str, kind: Kind, trim: bool, found: Found, next: u16, sink: &mut impl Sink) -> Flow {
        let step = self.until_step(t, kind, trim, found, sink);
        self.flow(step, next)
    }

    /// A reader's answer as the state's flow.
    #[inline]
    fn flow(&mut self, step: Option<bool>, next: u16) -> Flow {
        match step {
            Some(true) => {
                self.st = next;
                Flow::Go
            }
            Some(false) => Flow::More,
            None => Flow::Fail,
        }
    }
}
