//! Generated parsers against the reference parser (the IR interpreter,
//! `chat_parser_generator::interp::StreamParser`) on the same outputs.
//!
//! Inputs (`chat_parser_bench::shapes`): six corpus templates of different
//! output formats (`<think>` + `<tool_call>` JSON, Qwen3-Coder XML
//! arguments, Mistral `[TOOL_CALLS]`, DeepSeek-R1 with a prompt-opened
//! `<think>`, harmony, Gemma 4), six 16–17 KB outputs each (reasoning +
//! content, one long call, three parallel calls, the two call shapes
//! with escape-dense arguments, and reasoning + content in Chinese). Before anything is timed, every output is
//! checked to parse into its intended message with both parsers, whole and
//! in 4-byte chunks.
//!
//! Measured (events go to a `Tally` sink, which counts them and passes each
//! text through `black_box`, as if it read it):
//! - `generated::one_shot`, `reference::one_shot`: a new parser, one `feed`
//!   of the whole output, `finish`. Divan's bytes counter gives the
//!   throughput; ns/byte is the median time divided by the output size
//!   (printed in the report below).
//! - `generated::stream_4b`, `reference::stream_4b`: the same in 4-byte
//!   chunks (total time).
//! - `floor::stream_4b`: the same chunks and sink with no parser
//!   (`chat_parser_bench::floor`): what no streaming parser can go below.
//!
//! The generated parser is driven through `AnyParser::visit` (one `match`
//! per output, then the parser's own type, with its fast path inlined into
//! the chunk loop), so the benchmark builds without the corpus; the reference
//! parser gets the request's tool signatures and the template's hold limit
//! and pack table, as in the equivalence tests.
//!
//! Before the timed runs, `main` prints (not timed): per case, the output
//! size, the generated parser's state size (`size_of`), and the heap
//! allocations of one parse with each parser (one-shot / 4-byte chunks;
//! `alloc`, `alloc_zeroed` and `realloc` each count as one), and
//! `size_of::<StreamParser>()`.
//!
//! Run with `cargo bench -p chat-parser-bench --bench parsers` (divan
//! options after `--`, e.g. `-- generated` for the generated parsers only).
//! Without the corpus it prints one line and measures nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use chat_parser_bench::parsers::{AnyParser, TEMPLATES};
use chat_parser_bench::{run_parser, shapes, template_path, Tally};
use chat_parser_generator::interp::StreamParser;
use chat_parser_generator::ir::build::{build, tool_signatures, ToolSignature};
use chat_parser_generator::ir::Node;
use chat_parser_runtime::{MessageBuilder, Sink};
use divan::{counter::BytesCount, Bencher};

// ---------------------------------------------------------------------------
// Allocation counting

/// `System`, counting the calls that hand out memory.
struct CountingAlloc;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

// SAFETY: every call is forwarded unchanged to `System`.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Heap allocations made while `f` runs.
fn count_allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    f();
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

// ---------------------------------------------------------------------------
// Cases

/// One output, with what the reference parser needs for its template.
struct Case {
    case: shapes::Case,
    grammar: Node,
    tools: Vec<ToolSignature>,
    hold_limit: usize,
    pack: Vec<String>,
}

impl Case {
    fn generated(&self, chunk: usize, sink: &mut impl Sink) {
        let mut parser = AnyParser::new(self.case.family.file, shapes::options()).expect("checked in cases()");
        run_parser(&mut parser, self.case.text.as_bytes(), chunk, false, sink);
    }

    fn reference(&self, chunk: usize, sink: &mut impl Sink) {
        let mut parser = StreamParser::new(&self.grammar).with_tools(self.tools.clone()).with_hold_limit(self.hold_limit).with_pack(self.pack.clone());
        for piece in self.case.text.as_bytes().chunks(chunk) {
            parser.feed(piece, sink);
        }
        parser.finish(sink);
    }
}

/// All cases, built and checked once. Empty when the corpus is missing.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        if !shapes::FAMILIES.iter().all(|f| TEMPLATES.contains(&f.file) && template_path(f.file).is_some()) {
            return Vec::new();
        }
        let options = shapes::parse_options();
        let mut cases = Vec::new();
        for case in shapes::cases() {
            let file = case.family.file;
            let spec = chat_parser_bench::spec(file).unwrap_or_else(|e| panic!("{file}: {e}"));
            let case = Case {
                grammar: build(&spec, &options),
                tools: tool_signatures(&options),
                hold_limit: chat_parser_generator::codegen::hold_limit(&spec),
                pack: chat_parser_generator::codegen::pack_table(&spec),
                case,
            };
            for chunk in [usize::MAX, 4] {
                case.case.check_generated(chunk).unwrap_or_else(|e| panic!("{e}"));
                let mut message = MessageBuilder::new();
                case.reference(chunk, &mut message);
                if let Err(e) = case.case.expected.check(&message.into_message()) {
                    panic!("{} (reference parser, {chunk}-byte chunks): {e}", case.case.name);
                }
            }
            cases.push(case);
        }
        cases
    })
}

fn case_names() -> Vec<&'static str> {
    cases().iter().map(|c| c.case.name.as_str()).collect()
}

fn case(name: &str) -> &'static Case {
    cases().iter().find(|c| c.case.name == name).expect("known case")
}

// ---------------------------------------------------------------------------
// Benchmarks

fn main() {
    let cases = cases();
    if cases.is_empty() {
        println!("parsers: corpus templates not found ($CHAT_PARSER_SHARED/templates or ../shared/templates); nothing to measure");
        return;
    }
    report(cases);
    divan::main();
}

mod generated {
    use super::*;

    /// Whole output at once; throughput in bytes.
    #[divan::bench(args = case_names())]
    fn one_shot(bencher: Bencher, name: &str) {
        let case = case(name);
        bencher.counter(BytesCount::of_str(&case.case.text)).bench_local(|| {
            let mut tally = Tally::default();
            case.generated(black_box(usize::MAX), &mut tally);
            tally
        });
    }

    /// 4-byte chunks; total time for the whole output.
    #[divan::bench(args = case_names())]
    fn stream_4b(bencher: Bencher, name: &str) {
        let case = case(name);
        bencher.bench_local(|| {
            let mut tally = Tally::default();
            case.generated(black_box(4), &mut tally);
            tally
        });
    }
}

/// The floor of `generated::stream_4b`: the same chunks and sink with no
/// parser, only the UTF-8 check and the carried character every parser
/// needs (`chat_parser_bench::floor`).
mod floor {
    use super::*;
    use chat_parser_bench::floor::Passthrough;

    /// 4-byte chunks; total time for the whole output.
    #[divan::bench(args = case_names())]
    fn stream_4b(bencher: Bencher, name: &str) {
        let case = case(name);
        bencher.bench_local(|| {
            let mut tally = Tally::default();
            let mut floor = Passthrough::default();
            for chunk in case.case.text.as_bytes().chunks(black_box(4)) {
                floor.feed(chunk, &mut tally);
            }
            floor.finish(&mut tally);
            tally
        });
    }
}

mod reference {
    use super::*;

    /// Whole output at once; throughput in bytes.
    #[divan::bench(args = case_names())]
    fn one_shot(bencher: Bencher, name: &str) {
        let case = case(name);
        bencher.counter(BytesCount::of_str(&case.case.text)).bench_local(|| {
            let mut tally = Tally::default();
            case.reference(black_box(usize::MAX), &mut tally);
            tally
        });
    }

    /// 4-byte chunks; total time for the whole output.
    #[divan::bench(args = case_names())]
    fn stream_4b(bencher: Bencher, name: &str) {
        let case = case(name);
        bencher.bench_local(|| {
            let mut tally = Tally::default();
            case.reference(black_box(4), &mut tally);
            tally
        });
    }
}

/// Not timed: sizes and allocations per parse.
fn report(cases: &[Case]) {
    println!("size_of::<StreamParser>() (reference) = {} bytes", std::mem::size_of::<StreamParser<'static>>());
    println!("heap allocations per parse (alloc + alloc_zeroed + realloc), one-shot / 4-byte chunks:");
    println!("{:<26} {:>6} {:>12} {:>16} {:>16}", "case", "bytes", "state bytes", "generated", "reference");
    for c in cases {
        let state = AnyParser::new(c.case.family.file, shapes::options()).expect("checked").state_bytes();
        let count = |f: &dyn Fn(usize, &mut Tally)| {
            let mut tally = Tally::default();
            let whole = count_allocations(|| f(usize::MAX, &mut tally));
            let chunked = count_allocations(|| f(4, &mut tally));
            format!("{whole} / {chunked}")
        };
        let generated = count(&|chunk, t| c.generated(chunk, t));
        let reference = count(&|chunk, t| c.reference(chunk, t));
        println!("{:<26} {:>6} {:>12} {:>16} {:>16}", c.case.name, c.case.text.len(), state, generated, reference);
    }
    println!();
}
