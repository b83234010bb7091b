//! Times a generated parser on one request.
//!
//! ```text
//! chat-parser-bench TEMPLATE.jinja REQUEST.json [--chunk-bytes K]
//! chat-parser-bench TEMPLATE.jinja --shape SHAPE [--chunk-bytes K]
//! ```
//!
//! With `--once`, nothing is timed: one one-shot parse and one parse in
//! K-byte chunks run once each, in the functions `parse_one_shot` and
//! `parse_streamed`, for an instruction count of each
//! (`valgrind --tool=callgrind --toggle-collect='*parse_one_shot*'`, or
//! both and `callgrind_annotate --inclusive=yes`); then `parse_floor`
//! hands the same chunks to the same sink with no parser
//! (`chat_parser_bench::floor`), the count no parser can go below.
//!
//! With `--shape`, the text is the benchmark output of that shape for the
//! template (`shapes`: `a-text`, `b-long-call`, `c-3-calls`,
//! `d-long-call-escaped`, `e-3-calls-escaped`, `f-chinese-text`; the benchmarked templates
//! only) and the request is the benchmark's (`save_snippet`, parallel calls).
//!
//! `TEMPLATE.jinja` is a path or a file name; the generated parser is picked
//! by file name among those built in (`parsers::TEMPLATES`). `REQUEST.json`
//! is the request `chat-parser parse` reads (`text`, `tools`,
//! `enable_thinking`, `reasoning_format`, `parallel_tool_calls`,
//! `tool_choice`, `json_schema`, ...). Prints one JSON line:
//!
//! ```text
//! {"template", "bytes", "oneshot_ns_per_byte", "stream_chunk_bytes", "stream_total_us", "heap_allocations", "state_bytes"}
//! ```
//!
//! - `oneshot_ns_per_byte`: median time of a new parser + one `feed` of the
//!   whole text + `finish`, over at least 200 ms of runs, per byte;
//! - `stream_total_us`: median time of a new parser + feeding the text in
//!   K-byte chunks (default 4) + `finish`, likewise;
//! - `heap_allocations`: allocations made inside `feed`/`finish` during one
//!   streamed run (a counting global allocator; the sink only counts);
//! - `state_bytes`: `size_of` the parser.
//!
//! Errors (unknown template, unreadable or bad request, bad option) print
//! one line and exit with status 2.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chat_parser_bench::parsers::{AnyParser, TEMPLATES};
use chat_parser_bench::request::{Request, RuntimeTools};
use chat_parser_bench::floor::Passthrough;
use chat_parser_bench::{run_parser, shapes, Tally};
use chat_parser_runtime::Options;
use serde_json::json;

const USAGE: &str = "usage: chat-parser-bench TEMPLATE.jinja (REQUEST.json | --shape SHAPE) [--chunk-bytes K] [--once]";

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

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

struct Args {
    template: String,
    /// A request file, or `None` with `shape`.
    request: Option<String>,
    shape: Option<String>,
    chunk: usize,
    /// Parse once each way, untimed (for instruction counts).
    once: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut paths = Vec::new();
    let mut chunk = 4;
    let mut shape = None;
    let mut once = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = match arg.as_str() {
            "-h" | "--help" => return Err(USAGE.into()),
            "--once" => {
                once = true;
                None
            }
            "--shape" => {
                shape = Some(it.next().ok_or("--shape needs a shape label (a-text, b-long-call, ...)")?.clone());
                None
            }
            "--chunk-bytes" => Some(it.next().ok_or("--chunk-bytes needs a size in bytes (K >= 1)")?.as_str()),
            flag if flag.starts_with("--chunk-bytes=") => Some(&flag["--chunk-bytes=".len()..]),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`; {USAGE}")),
            path => {
                paths.push(path.to_string());
                None
            }
        };
        if let Some(v) = value {
            chunk = match v.parse::<usize>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(format!("--chunk-bytes needs a size in bytes (K >= 1), not `{v}`")),
            };
        }
    }
    match (paths.as_slice(), &shape) {
        ([template, request], None) => Ok(Args { template: template.clone(), request: Some(request.clone()), shape, chunk, once }),
        ([template], Some(_)) => Ok(Args { template: template.clone(), request: None, shape, chunk, once }),
        _ => Err(USAGE.into()),
    }
}

fn run(args: &[String]) -> Result<String, String> {
    let args = parse_args(args)?;
    let file = Path::new(&args.template).file_name().and_then(|f| f.to_str()).unwrap_or(&args.template);
    let Some(&file) = TEMPLATES.iter().find(|t| **t == file) else {
        return Err(format!(
            "no generated parser for `{file}` ({} templates are built in, from {}; see `CHAT_PARSER_TEMPLATES`)",
            TEMPLATES.len(),
            chat_parser_bench::template_dirs().iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        ));
    };
    let (Some(path), None) = (&args.request, &args.shape) else {
        let label = args.shape.as_deref().unwrap_or("");
        let family = shapes::FAMILIES.iter().find(|f| f.file == file).ok_or_else(|| {
            format!("`{file}` is not a benchmarked template ({})", shapes::FAMILIES.iter().map(|f| f.file).collect::<Vec<_>>().join(", "))
        })?;
        let shape = shapes::SHAPES.iter().find(|s| s.label() == label).ok_or_else(|| {
            format!("unknown shape `{label}` ({})", shapes::SHAPES.iter().map(|s| s.label()).collect::<Vec<_>>().join(", "))
        })?;
        let case = shapes::case(family, *shape);
        return Ok(measure(file, case.text.as_bytes(), false, args.chunk, args.once, shapes::options()));
    };
    let body = std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let body: serde_json::Value = serde_json::from_slice(&body).map_err(|e| format!("{path} is not valid JSON: {e}"))?;
    let request = Request::from_json(&body).map_err(|e| format!("{path}: {e}"))?;
    let tools = RuntimeTools::new(&request.options);
    tools.with_options(&request.options, |options| Ok(measure(file, request.text.as_bytes(), request.is_partial, args.chunk, args.once, options)))
}

/// The JSON line for `text` parsed by `file`'s generated parser.
fn measure(file: &'static str, text: &[u8], partial: bool, chunk: usize, once: bool, options: Options<'_>) -> String {
    let new = || AnyParser::new(file, options).expect("a name in TEMPLATES has a parser");
    let state_bytes = new().state_bytes();
    if once {
        parse_one_shot(&mut new(), text, partial);
        parse_streamed(&mut new(), text, chunk, partial);
        parse_floor(text, chunk);
        return json!({"template": file, "bytes": text.len(), "once": true}).to_string();
    }

    // Allocations inside feed/finish of one streamed run.
    let mut parser = new();
    let mut tally = Tally::default();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    run_parser(&mut parser, text, chunk, partial, &mut tally);
    let heap_allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    black_box(tally);

    let one_shot = median_time(|| parse_one_shot(&mut new(), text, partial));
    let streamed = median_time(|| parse_streamed(&mut new(), text, chunk, partial));
    let line = json!({
        "template": file,
        "bytes": text.len(),
        "oneshot_ns_per_byte": one_shot.as_nanos() as f64 / text.len().max(1) as f64,
        "stream_chunk_bytes": chunk,
        "stream_total_us": streamed.as_nanos() as f64 / 1000.0,
        "heap_allocations": heap_allocations,
        "state_bytes": state_bytes,
    });
    line.to_string()
}

/// One parse of `text` at once (a function of its own for callgrind).
#[inline(never)]
fn parse_one_shot(parser: &mut AnyParser, text: &[u8], partial: bool) {
    let mut tally = Tally::default();
    run_parser(parser, black_box(text), usize::MAX, partial, &mut tally);
    black_box(tally);
}

/// One parse of `text` in `chunk`-byte pieces (a function of its own for
/// callgrind).
#[inline(never)]
fn parse_streamed(parser: &mut AnyParser, text: &[u8], chunk: usize, partial: bool) {
    let mut tally = Tally::default();
    run_parser(parser, black_box(text), chunk, partial, &mut tally);
    black_box(tally);
}

/// The median duration of `f`, over at least 200 ms (and 21 runs) after a
/// short warm-up.
fn median_time(mut f: impl FnMut()) -> Duration {
    let warm_up = Instant::now();
    while warm_up.elapsed() < Duration::from_millis(20) {
        f();
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 21 || start.elapsed() < Duration::from_millis(200) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort_unstable();
    times[times.len() / 2]
}

/// The floor of a streamed parse: the same text, chunks, loop and sink,
/// but only `floor::Passthrough` (check UTF-8, report whole characters)
/// in place of a parser (a function of its own for callgrind).
#[inline(never)]
fn parse_floor(text: &[u8], chunk: usize) {
    let mut tally = Tally::default();
    let mut floor = Passthrough::default();
    for piece in black_box(text).chunks(chunk.max(1)) {
        floor.feed(piece, &mut tally);
    }
    floor.finish(&mut tally);
    black_box(tally);
}
