//! The parser every generated module exports: the runtime's input handling
//! and fixed state, driven by the module's [`Machine`] table.
//!
//! A module names it with its own machine and sizes,
//!
//! ```text
//! pub type Parser<'t> = chat_parser_runtime::parser::Parser<'t, Grammar, W, 1, 1>;
//! ```
//!
//! so `module::Parser::new(options)`, `feed` and `finish` are the same code
//! for every template, and a module holds only what is its template's own.

use core::marker::PhantomData;

use crate::input::Input;
use crate::table::Machine;
use crate::machine::{Core, Options};
use crate::{Parse, Sink};

/// A streaming parser of a model's output: feed it bytes as they arrive,
/// then `finish`. Fixed-size state (`W` bytes of window, `R` regions, `P`
/// loops: the module's sizes), no heap allocation.
pub struct Parser<'t, M, const W: usize, const R: usize, const P: usize> {
    core: Core<'t, R, P>,
    entry: u16,
    input: Input<[u8; W]>,
    machine: PhantomData<M>,
}

impl<'t, M: Machine, const W: usize, const R: usize, const P: usize> Parser<'t, M, W, R, P> {
    /// A parser for a request with these options (the grammar variant they
    /// select, and the tools names and argument types are checked against).
    pub fn new(options: Options<'t>) -> Self {
        // The window holds `full` bytes unless the template packs; a packed
        // window is unpacked into at most MAX_FULL.
        const {
            let full = M::TABLE.full as usize;
            assert!(if M::TABLE.pack.is_empty() { W == full } else { W <= full && full <= crate::input::MAX_FULL }, "a table's text size does not fit its window");
        };
        let entry = M::TABLE.entries[options.variant(M::TABLE.switches)];
        Parser { core: Core::new(entry, options.tools), entry, input: Input::default(), machine: PhantomData }
    }

    /// Parses the next chunk of output (any size, any split), reporting
    /// what is certain so far.
    #[inline]
    pub fn feed(&mut self, bytes: &[u8], sink: &mut impl Sink) {
        let input: &mut Input = &mut self.input;
        input.feed::<M, R, P>(&mut self.core, &self.entry, bytes, sink);
    }

    /// Ends the output: reports what was held back, and ends a call the
    /// output cut off (`complete: false`).
    pub fn finish(&mut self, sink: &mut impl Sink) {
        let input: &mut Input = &mut self.input;
        input.finish(&mut self.core, M::TABLE, self.entry, sink);
    }
}

impl<M: Machine, const W: usize, const R: usize, const P: usize> Parse for Parser<'_, M, W, R, P> {
    #[inline]
    fn feed<S: Sink>(&mut self, bytes: &[u8], sink: &mut S) {
        Parser::feed(self, bytes, sink)
    }

    fn finish<S: Sink>(&mut self, sink: &mut S) {
        Parser::finish(self, sink)
    }
}
