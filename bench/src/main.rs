//! Times a generated parser on one request.
//!
//! ```text
//! chat-parser-bench TEMPLATE.jinja REQUEST.json [--chunk-bytes K]
//! ```
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
use chat_parser_bench::{run_parser, Tally};
use serde_json::json;

const USAGE: &str = "usage: chat-parser-bench TEMPLATE.jinja REQUEST.json [--chunk-bytes K]";

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
    request: String,
    chunk: usize,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut paths = Vec::new();
    let mut chunk = 4;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let value = match arg.as_str() {
            "-h" | "--help" => return Err(USAGE.into()),
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
    match <[String; 2]>::try_from(paths) {
        Ok([template, request]) => Ok(Args { template, request, chunk }),
        Err(_) => Err(USAGE.into()),
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
    let body = std::fs::read(&args.request).map_err(|e| format!("cannot read {}: {e}", args.request))?;
    let body: serde_json::Value = serde_json::from_slice(&body).map_err(|e| format!("{} is not valid JSON: {e}", args.request))?;
    let request = Request::from_json(&body).map_err(|e| format!("{}: {e}", args.request))?;
    let tools = RuntimeTools::new(&request.options);
    let text = request.text.as_bytes();
    let (partial, chunk) = (request.is_partial, args.chunk);

    tools.with_options(&request.options, |options| {
        let new = || AnyParser::new(file, options).expect("a name in TEMPLATES has a parser");
        let state_bytes = new().state_bytes();

        // Allocations inside feed/finish of one streamed run.
        let mut parser = new();
        let mut tally = Tally::default();
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        run_parser(&mut parser, text, chunk, partial, &mut tally);
        let heap_allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        black_box(tally);

        let one_shot = median_time(|| {
            let mut tally = Tally::default();
            run_parser(&mut new(), black_box(text), usize::MAX, partial, &mut tally);
            black_box(tally);
        });
        let streamed = median_time(|| {
            let mut tally = Tally::default();
            run_parser(&mut new(), black_box(text), chunk, partial, &mut tally);
            black_box(tally);
        });
        let line = json!({
            "template": file,
            "bytes": text.len(),
            "oneshot_ns_per_byte": one_shot.as_nanos() as f64 / text.len().max(1) as f64,
            "stream_chunk_bytes": chunk,
            "stream_total_us": streamed.as_nanos() as f64 / 1000.0,
            "heap_allocations": heap_allocations,
            "state_bytes": state_bytes,
        });
        Ok(line.to_string())
    })
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
