//! Generated parsers for every template the build script found (see
//! `build.rs`), picked by file name, and what the comparison harness needs
//! to drive them from a `parse` request.
//!
//! - [`parsers`]: the generated modules, `TEMPLATES` and `AnyParser`;
//! - [`request`]: a `chat-parser parse` request and its runtime options;
//! - [`shapes`]: the benchmark outputs (four corpus templates, three 16 KB
//!   shapes each), shared by the binary, the benchmark and the tests;
//! - [`Tally`]: a sink that only counts, so timing measures the parser;
//! - [`floor`]: what streaming costs before any parsing, the baseline the
//!   instruction counts are read against.

use std::path::PathBuf;

use chat_parser_generator::{template_file::TemplateFile, FormatSpec};
use chat_parser_runtime::{Event, Parse, Sink, VisitParser};

pub mod floor;
pub mod request;
pub mod shapes;

#[allow(clippy::all)]
pub mod parsers {
    include!(concat!(env!("OUT_DIR"), "/parsers.rs"));
}

/// A sink that counts events and the bytes of text they carry: it never
/// allocates, and its sums keep the events from being optimised away.
/// Each text passes through `black_box`, as if it were read: a sink that
/// only added up lengths let the compiler drop the stores of text the
/// parser writes itself (a raw value's JSON escape), which a real sink
/// copies.
///
/// # Example
/// ```
/// use chat_parser_bench::Tally;
/// use chat_parser_runtime::{Event, Sink};
/// let mut tally = Tally::default();
/// tally.event(Event::Content("Hi"));
/// tally.event(Event::ToolCallStart { index: 0 });
/// assert_eq!((tally.events, tally.text_bytes), (2, 2));
/// ```
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub events: usize,
    pub text_bytes: usize,
}

impl Sink for Tally {
    #[inline]
    fn event(&mut self, event: Event<'_>) {
        self.events += 1;
        self.text_bytes += match event {
            Event::Content(t) | Event::Reasoning(t) | Event::ToolName(t) | Event::ToolId(t) | Event::ToolArgs(t) => core::hint::black_box(t).len(),
            Event::ToolCallStart { .. } | Event::ToolCallEnd { .. } | Event::ToolCallCut { .. } | Event::ToolCallBroken { .. } => 0,
        };
    }
}

/// Feeds `text` to `parser` in `chunk`-byte pieces (`usize::MAX`: one
/// piece), then finishes it unless `partial`.
///
/// The template is picked once ([`parsers::AnyParser::visit`]); the chunks
/// then go to the parser's own type, as in a server that holds the parser
/// of its model.
pub fn run_parser(parser: &mut parsers::AnyParser<'_>, text: &[u8], chunk: usize, partial: bool, sink: &mut impl Sink) {
    struct Run<'a, S> {
        text: &'a [u8],
        chunk: usize,
        partial: bool,
        sink: &'a mut S,
    }
    impl<S: Sink> VisitParser for Run<'_, S> {
        type Output = ();
        fn visit<P: Parse>(self, parser: &mut P) {
            for piece in self.text.chunks(self.chunk.max(1)) {
                parser.feed(piece, self.sink);
            }
            if !self.partial {
                parser.finish(self.sink);
            }
        }
    }
    parser.visit(Run { text, chunk, partial, sink });
}

/// The directories the build script read templates from (see `build.rs`).
pub fn template_dirs() -> Vec<PathBuf> {
    option_env!("CHAT_PARSER_BENCH_TEMPLATE_DIRS").map(|dirs| std::env::split_paths(dirs).collect()).unwrap_or_default()
}

/// Where the template `file` (a name in `parsers::TEMPLATES`) is, if it is
/// still in one of [`template_dirs`].
pub fn template_path(file: &str) -> Option<PathBuf> {
    template_dirs().into_iter().map(|d| d.join(file)).find(|p| p.is_file())
}

/// The template `file` with the special tokens the build script gave it,
/// named `file` (as the parsers were made), if it is still where it was
/// and can be read.
pub fn template_file(file: &str) -> Option<TemplateFile> {
    let template = TemplateFile::read(&template_path(file)?).ok()?;
    let tokens = option_env!("CHAT_PARSER_BENCH_SPECIAL_TOKENS")
        .and_then(|path| chat_parser_generator::template_file::read_special_tokens(path.as_ref()).ok())
        .and_then(|mut map| map.remove(file))
        .unwrap_or_default();
    Some(TemplateFile { name: file.to_string(), ..template }.with_tokens(&tokens))
}

/// The format spec of `file`, analysed as the build script analysed it.
pub fn spec(file: &str) -> Result<FormatSpec, String> {
    chat_parser_generator::spec_from_file(&template_file(file).ok_or_else(|| format!("{file}: not found or not readable in {:?}", template_dirs()))?)
}
