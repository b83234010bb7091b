//! Baseline figures for the streaming reference parser (the IR interpreter,
//! `chat_parser_generator::interp::StreamParser`), to compare generated
//! parsers against.
//!
//! Four templates from the shared corpus (`../shared/templates`, or
//! `$CHAT_PARSER_SHARED/templates`), each a different output format:
//!
//! | label          | template                                       | format                                        |
//! |----------------|------------------------------------------------|-----------------------------------------------|
//! | `hermes-2-pro` | NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use  | `<tool_call>` + JSON object                   |
//! | `qwen3-coder`  | Qwen3-Coder                                    | `<tool_call><function=…><parameter=…>` (XML)  |
//! | `mistral-nemo` | mistralai-Mistral-Nemo-Instruct-2407           | `[TOOL_CALLS]` + JSON array, calls carry ids  |
//! | `qwq-32b`      | Qwen-QwQ-32B                                   | forced-open `<think>` + `<tool_call>` JSON    |
//!
//! For each template, three outputs of 16–17 KB, written in that template's
//! own format:
//!
//! - `a-text`: 8 KiB reasoning + 8 KiB content (16 KiB content when the
//!   template has no reasoning);
//! - `b-long-call`: 8 KiB reasoning (8 KiB content when the template has no
//!   reasoning) + one call whose string argument is about 8.5 KiB;
//! - `c-3-calls`: 4 KiB content + three parallel calls of about 4 KiB each
//!   (QwQ's reasoning block is opened by the prompt, so its output starts
//!   with one line of reasoning and `</think>`).
//!
//! The request declares one tool, `save_snippet(code: string, line: integer)`,
//! with `parallel_tool_calls` and `enable_thinking` on. Every output is
//! checked once, before anything is measured, to parse into the intended
//! message (one-shot and in 4-byte chunks).
//!
//! Measured (events go to a no-op sink):
//! - `one_shot`: `StreamParser::new`, one `feed` of the whole output,
//!   `finish`. Divan's bytes counter gives the throughput; ns/byte is the
//!   median time divided by the output size (printed in the report below).
//! - `stream_4b`: the same output fed in 4-byte chunks (total time).
//!
//! Before the timed runs, `main` prints a report (not timed): for each case,
//! the output size, the heap allocations made by a one-shot parse and by a
//! 4-byte streamed parse (counted by a global allocator wrapping `System`;
//! `alloc`, `alloc_zeroed` and `realloc` each count as one), and
//! `size_of::<StreamParser>()`. The counter is a relaxed atomic increment,
//! also present (and negligible) during the timed runs.
//!
//! Run with `cargo bench --bench reference_parser` (add divan options after
//! `--`, e.g. `-- one_shot` to run only the one-shot benchmarks). Without the
//! corpus, it prints one line and measures nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use chat_parser::{Event, MessageBuilder, Sink};
use chat_parser_generator::{
    analyze,
    interp::StreamParser,
    ir::{
        build::{build, ParseOptions},
        Node,
    },
    jinja::ChatTemplate,
};
use divan::{counter::BytesCount, Bencher};
use serde_json::{json, Value};

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
// Parsing (what is measured)

/// Events go nowhere: only the parser's own work is measured.
fn noop_sink() -> impl FnMut(Event<'_>) {
    |_: Event<'_>| {}
}

/// The whole output in one `feed`, then `finish`.
fn parse_one_shot(grammar: &Node, output: &[u8], sink: &mut impl Sink) {
    let mut parser = StreamParser::new(grammar);
    parser.feed(output, sink);
    parser.finish(sink);
}

/// The output in `chunk`-byte pieces, then `finish`.
fn parse_streamed(grammar: &Node, output: &[u8], chunk: usize, sink: &mut impl Sink) {
    let mut parser = StreamParser::new(grammar);
    for piece in output.chunks(chunk) {
        parser.feed(piece, sink);
    }
    parser.finish(sink);
}

// ---------------------------------------------------------------------------
// Benchmarks

fn main() {
    let cases = cases();
    if cases.is_empty() {
        println!("reference_parser: template corpus not found (../shared/templates or $CHAT_PARSER_SHARED/templates); nothing to measure");
        return;
    }
    allocation_report(cases);
    divan::main();
}

fn case_names() -> Vec<&'static str> {
    cases().iter().map(|c| c.name.as_str()).collect()
}

fn case(name: &str) -> &'static Case {
    cases().iter().find(|c| c.name == name).expect("known case")
}

/// Whole output at once; throughput in bytes.
#[divan::bench(args = case_names())]
fn one_shot(bencher: Bencher, name: &str) {
    let case = case(name);
    let mut sink = noop_sink();
    bencher
        .counter(BytesCount::of_str(&case.output))
        .bench_local(|| parse_one_shot(&case.grammar, black_box(case.output.as_bytes()), &mut sink));
}

/// 4-byte chunks; total time for the whole output.
#[divan::bench(args = case_names())]
fn stream_4b(bencher: Bencher, name: &str) {
    let case = case(name);
    let mut sink = noop_sink();
    bencher.bench_local(|| parse_streamed(&case.grammar, black_box(case.output.as_bytes()), 4, &mut sink));
}

/// Not timed: allocations per parse and the parser's size.
fn allocation_report(cases: &[Case]) {
    println!("StreamParser: size_of = {} bytes", std::mem::size_of::<StreamParser<'static>>());
    println!("heap allocations per parse (alloc + alloc_zeroed + realloc), no-op sink:");
    println!("{:<28} {:>7} {:>9} {:>10}", "case", "bytes", "one-shot", "4-byte");
    for case in cases {
        let bytes = case.output.as_bytes();
        let mut sink = noop_sink();
        let one_shot = count_allocations(|| parse_one_shot(&case.grammar, bytes, &mut sink));
        let streamed = count_allocations(|| parse_streamed(&case.grammar, bytes, 4, &mut sink));
        println!("{:<28} {:>7} {:>9} {:>10}", case.name, bytes.len(), one_shot, streamed);
    }
    println!();
}

// ---------------------------------------------------------------------------
// Cases

/// One template × output shape, ready to parse.
struct Case {
    /// `template-label/shape`.
    name: String,
    grammar: Node,
    output: String,
}

#[derive(Clone, Copy)]
enum CallStyle {
    /// `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, calls joined by `\n`.
    JsonTag,
    /// `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…</function>\n</tool_call>`.
    XmlTag,
    /// `[TOOL_CALLS][{"name": …, "arguments": {…}, "id": "…"}, …]`.
    MistralArray,
}

struct TemplateInfo {
    file: &'static str,
    label: &'static str,
    calls: CallStyle,
    /// The prompt opens `<think>`: the output starts inside the reasoning and closes it with `</think>`.
    forced_open_reasoning: bool,
}

const TEMPLATES: [TemplateInfo; 4] = [
    TemplateInfo {
        file: "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
        label: "hermes-2-pro",
        calls: CallStyle::JsonTag,
        forced_open_reasoning: false,
    },
    TemplateInfo { file: "Qwen3-Coder", label: "qwen3-coder", calls: CallStyle::XmlTag, forced_open_reasoning: false },
    TemplateInfo {
        file: "mistralai-Mistral-Nemo-Instruct-2407",
        label: "mistral-nemo",
        calls: CallStyle::MistralArray,
        forced_open_reasoning: false,
    },
    TemplateInfo { file: "Qwen-QwQ-32B", label: "qwq-32b", calls: CallStyle::JsonTag, forced_open_reasoning: true },
];

const TOOL: &str = "save_snippet";
const KIB: usize = 1024;

fn options() -> ParseOptions {
    ParseOptions {
        enable_thinking: true,
        parallel_tool_calls: true,
        tools: vec![json!({
            "type": "function",
            "function": {
                "name": TOOL,
                "description": "Saves a code snippet at a line of the open file.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "code": {"type": "string", "description": "The snippet."},
                        "line": {"type": "integer", "description": "Where to insert it."}
                    },
                    "required": ["code", "line"]
                }
            }
        })],
        ..ParseOptions::default()
    }
}

fn corpus_dir() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    std::env::var_os("CHAT_PARSER_SHARED").map(PathBuf::from).unwrap_or_else(|| root.join("../shared")).join("templates")
}

/// All cases, built and checked once. Empty when the corpus is missing.
fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let dir = corpus_dir();
        if !dir.is_dir() {
            return Vec::new();
        }
        let options = options();
        let mut cases = Vec::new();
        for info in &TEMPLATES {
            let path = dir.join(format!("{}.jinja", info.file));
            let source = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let template = ChatTemplate::new(info.file, &source).expect("template compiles");
            let spec = analyze(&template).expect("template analyses").spec;
            for (shape, output, expected) in outputs(info) {
                let case = Case { name: format!("{}/{shape}", info.label), grammar: build(&spec, &options), output };
                check(&case, &expected);
                cases.push(case);
            }
        }
        cases
    })
}

/// The message an output is meant to parse into.
struct Expected {
    reasoning: String,
    content: String,
    /// `(name, id, arguments)`.
    calls: Vec<(String, String, Value)>,
}

struct Call {
    id: &'static str,
    code: String,
    line: u32,
}

impl Call {
    fn arguments(&self) -> Value {
        json!({"code": self.code, "line": self.line})
    }

    /// The arguments as the templates' `tojson` writes them.
    fn json_arguments(&self) -> String {
        format!("{{\"code\": {}, \"line\": {}}}", Value::String(self.code.clone()), self.line)
    }
}

/// The three outputs of one template: `(shape, output, expected message)`.
fn outputs(info: &TemplateInfo) -> Vec<(&'static str, String, Expected)> {
    const IDS: [&str; 3] = ["a1B2c3D4e", "f5G6h7I8j", "k9L0m1N2o"];
    let half = 8 * KIB;
    let a = if info.forced_open_reasoning {
        (reasoning(half), content(half), Vec::new())
    } else {
        (String::new(), content(2 * half), Vec::new())
    };
    let long_call = Call { id: IDS[0], code: code(8 * KIB + 300), line: 120 };
    let b = if info.forced_open_reasoning {
        (reasoning(half), String::new(), vec![long_call])
    } else {
        (String::new(), content(half), vec![long_call])
    };
    let parallel = IDS.iter().enumerate().map(|(i, &id)| Call { id, code: code(3900), line: 10 + 40 * i as u32 }).collect();
    let c = (
        if info.forced_open_reasoning { "I'll save the three snippets in one go.".to_string() } else { String::new() },
        content(4 * KIB),
        parallel,
    );
    [("a-text", a), ("b-long-call", b), ("c-3-calls", c)]
        .into_iter()
        .map(|(shape, (reasoning, content, calls))| {
            let output = render(info, &reasoning, &content, &calls);
            let has_ids = matches!(info.calls, CallStyle::MistralArray);
            let calls = calls
                .iter()
                .map(|c| (TOOL.to_string(), if has_ids { c.id.to_string() } else { String::new() }, c.arguments()))
                .collect();
            (shape, output, Expected { reasoning, content, calls })
        })
        .collect()
}

/// One output in the template's format (from right after the generation prompt).
fn render(info: &TemplateInfo, reasoning: &str, content: &str, calls: &[Call]) -> String {
    let mut out = String::new();
    if info.forced_open_reasoning {
        out += reasoning;
        out += "\n</think>\n\n";
    }
    out += content;
    if calls.is_empty() {
        return out;
    }
    if !content.is_empty() {
        out += "\n\n";
    }
    let rendered: Vec<String> = match info.calls {
        CallStyle::JsonTag => calls
            .iter()
            .map(|c| format!("<tool_call>\n{{\"name\": \"{TOOL}\", \"arguments\": {}}}\n</tool_call>", c.json_arguments()))
            .collect(),
        CallStyle::XmlTag => calls
            .iter()
            .map(|c| {
                format!(
                    "<tool_call>\n<function={TOOL}>\n<parameter=code>\n{}\n</parameter>\n<parameter=line>\n{}\n</parameter>\n</function>\n</tool_call>",
                    c.code, c.line
                )
            })
            .collect(),
        CallStyle::MistralArray => {
            let items: Vec<String> = calls
                .iter()
                .map(|c| format!("{{\"name\": \"{TOOL}\", \"arguments\": {}, \"id\": \"{}\"}}", c.json_arguments(), c.id))
                .collect();
            vec![format!("[TOOL_CALLS][{}]", items.join(", "))]
        }
    };
    out += &rendered.join("\n");
    out
}

/// Asserts that the output parses into the intended message, one-shot and in 4-byte chunks.
fn check(case: &Case, expected: &Expected) {
    let bytes = case.output.as_bytes();
    for chunk in [bytes.len(), 4] {
        let mut builder = MessageBuilder::new();
        parse_streamed(&case.grammar, bytes, chunk, &mut builder);
        let message = builder.into_message();
        let what = format!("{} (chunks of {chunk} bytes)", case.name);
        assert_eq!(message.reasoning_content.trim(), expected.reasoning.trim(), "{what}: reasoning");
        assert_eq!(message.content.trim(), expected.content.trim(), "{what}: content");
        assert_eq!(message.tool_calls.len(), expected.calls.len(), "{what}: number of calls");
        for (got, (name, id, arguments)) in message.tool_calls.iter().zip(&expected.calls) {
            assert_eq!(&got.name, name, "{what}: call name");
            assert_eq!(&got.id, id, "{what}: call id");
            assert!(got.complete, "{what}: call complete");
            let parsed: Value = serde_json::from_str(&got.arguments).unwrap_or_else(|e| panic!("{what}: arguments: {e}"));
            assert_eq!(&parsed, arguments, "{what}: arguments");
        }
    }
}

// ---------------------------------------------------------------------------
// Text

/// `paragraph` repeated, cut to at most `len` bytes on a character boundary
/// and without trailing whitespace.
fn repeat_to(paragraph: &str, len: usize) -> String {
    let mut s = paragraph.repeat(len / paragraph.len() + 1);
    let mut cut = len;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.truncate(s.trim_end().len());
    s
}

/// Reasoning prose (some `<`, brackets and multi-byte characters, none of them a marker).
fn reasoning(len: usize) -> String {
    repeat_to(
        "The user wants the helper rewritten so that each line stays under 80 columns. \
         First I check the existing layout: the header is fine, but the loop body mixes tabs and spaces — that needs fixing. \
         If n < 10 the fast path applies; otherwise we fall back to the general case (xs[i] ≤ xs[j] for i < j). \
         Let me also double-check the edge cases: empty input, a single line, a trailing newline.\n\n",
        len,
    )
}

/// Answer prose (Markdown-ish, with `<`, `[`, code spans and multi-byte characters).
fn content(len: usize) -> String {
    repeat_to(
        "Here is the updated version. The parser now reads the input in one pass and keeps only what it must hold back: \
         a partial marker at the end of a chunk, or an incomplete UTF-8 sequence such as the first byte of “é”. \
         Costs stay linear, so `parse(a + b)` takes about as long as `parse(a)` plus `parse(b)` when a < b [see note 1].\n\n\
         - step 1: read the chunk;\n- step 2: emit what is certain → the sink.\n\n",
        len,
    )
}

/// Rust source of about `len` bytes (quotes, `<`, braces, newlines), whole lines.
fn code(len: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < len {
        s += &format!(
            "/// Sums twice the \"small\" values (those < {i}) → u32.\n\
             fn step_{i}(xs: &[u32]) -> u32 {{\n    xs.iter().filter(|x| **x < {i}).map(|x| x * 2).sum::<u32>()\n}}\n\n"
        );
        i += 1;
    }
    let cut = s[..len].rfind('\n').unwrap_or(len);
    s.truncate(cut);
    s.truncate(s.trim_end().len());
    s
}
