//! Bad model output: the reference parser (`interp::StreamParser`) against
//! the rules of its module docs ("Bad output"):
//!
//! - it never panics and never loses text;
//! - markup that breaks before a call's name is complete comes back as
//!   content, and parsing goes on after it;
//! - a call whose name is known but whose rest is broken ends there, with the
//!   arguments so far and `complete: false`; the rest is content;
//! - a call cut off by the end of the output ends the same way;
//! - invalid UTF-8 becomes U+FFFD;
//! - events are append-only: what a prefix of the output reported is never
//!   contradicted by more output, so any chunking gives the same events.
//!
//! Grammars come from the project's own templates (`templates/*.jinja`) and,
//! when the shared corpus is present, from templates of several families.
//! Valid outputs are written by hand in each family's format, and taken from
//! the corpus' parse vectors.
//!
//! Every failure names the rule it breaks (`[RULE: ...]`), the template and
//! options, the input (Rust-escaped; `\xNN` is a raw byte that is not valid
//! UTF-8) and the chunking. A test collects all its failures and prints them
//! grouped by rule before failing.
//!
//! Checks that go beyond the interp docs are labelled as such: the runtime's
//! `Event` contract (a name before arguments, arguments of a call concatenate
//! to a JSON object) and a timing smoke check.
//!
//! Assertions that failed when this file was written (parser behaviour that
//! breaks the documented rules) are marked `KNOWN VIOLATION (reported)`;
//! they are kept failing on purpose until the parser is fixed.
//!
//! Environment: `BAD_OUTPUT_SHOW=n` prints n examples per rule and template
//! (default 3); `BAD_OUTPUT_FUZZ_ITERS` (default 100 per valid sample) and
//! `BAD_OUTPUT_FUZZ_SEED` drive the fuzz loop.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use chat_parser_generator::interp::StreamParser;
use chat_parser_generator::ir::build::{build, ParseOptions, ReasoningFormat};
use chat_parser_generator::ir::{Mark, Node};
use chat_parser_generator::{analyze, jinja::ChatTemplate, FormatSpec};
use chat_parser_runtime::{Event, Message, MessageBuilder, Sink};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// Rules (the `[RULE: ...]` tag of a failure).

const R_PANIC: &str = "never panics";
const R_LOSS: &str = "never loses text";
const R_BEFORE_NAME: &str = "markup broken before the call's name is complete comes back as content";
const R_RESUME: &str = "after markup is given back as content, parsing goes on";
const R_BROKEN: &str = "a named call broken later ends there: arguments so far, complete=false, the rest is content";
const R_TYPED: &str = "a typed raw value that does not open like JSON is the string the model wrote; its call stays whole";
const R_BROKEN_TEXT: &str = "a broken call's text is the output from its start to where reading goes on, right after its end";
const R_CUTOFF: &str = "a call cut off by the end of output keeps its arguments, complete=false";
const R_UTF8: &str = "invalid UTF-8 becomes U+FFFD";
const R_APPEND: &str = "events are append-only (a prefix's events are never contradicted by more output)";
const R_STREAM: &str = "any chunking gives the same events and message as the whole input";
const R_NAMES: &str = "a reported call's name is a declared tool";
const R_EVENTS: &str = "runtime Event contract (one name per call, before its arguments; tool events inside a call)";
const R_JSON: &str = "runtime Event contract: a complete call's arguments are a JSON object";
const R_TIME: &str = "smoke check: hostile inputs finish quickly";
const R_FIXTURE: &str = "FIXTURE: a hand-written valid output does not parse as intended (test data problem)";

// ---------------------------------------------------------------------------
// Events, runs and chunkings.

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Content(String),
    Reasoning(String),
    Start(usize),
    Name(String),
    Id(String),
    Args(String),
    End(bool),
    /// A broken call's text: an offset in the output and a length.
    Broken(usize, usize),
}

/// Records events (owned) and assembles the message.
struct Recorder {
    events: Vec<Ev>,
    builder: MessageBuilder,
}

impl Sink for Recorder {
    fn event(&mut self, e: Event<'_>) {
        self.builder.event(e);
        self.events.push(match e {
            Event::Content(t) => Ev::Content(t.to_string()),
            Event::Reasoning(t) => Ev::Reasoning(t.to_string()),
            Event::ToolCallStart { index } => Ev::Start(index),
            Event::ToolName(t) => Ev::Name(t.to_string()),
            Event::ToolId(t) => Ev::Id(t.to_string()),
            Event::ToolArgs(t) => Ev::Args(t.to_string()),
            Event::ToolCallEnd { complete } => Ev::End(complete),
            // A call the output cut off ends incomplete too.
            Event::ToolCallCut { .. } => Ev::End(false),
            Event::ToolCallBroken { from, len } => Ev::Broken(from, len),
        });
    }
}

/// Consecutive text events of one kind merged (how a chunking splits text is
/// not significant; anything else is).
fn normalize(events: &[Ev]) -> Vec<Ev> {
    let mut out: Vec<Ev> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(Ev::Content(a)), Ev::Content(b))
            | (Some(Ev::Reasoning(a)), Ev::Reasoning(b))
            | (Some(Ev::Id(a)), Ev::Id(b))
            | (Some(Ev::Args(a)), Ev::Args(b)) => a.push_str(b),
            _ => out.push(e.clone()),
        }
    }
    out
}

#[derive(Debug, Clone)]
struct Outcome {
    /// Raw events, in order (for the event contract).
    raw: Vec<Ev>,
    /// Normalized events (for comparisons).
    events: Vec<Ev>,
    message: Message,
    /// Markup the format drops by design (harmony's content types and
    /// messages to built-in tools), NUL-separated.
    discarded: String,
}

#[derive(Debug, Clone)]
enum Chunking {
    Whole,
    Every(usize),
    /// Chunk sizes; the rest of the input is one last chunk.
    Sizes(Vec<usize>),
}

impl Chunking {
    fn pieces<'a>(&self, input: &'a [u8]) -> Vec<&'a [u8]> {
        match self {
            Chunking::Whole => vec![input],
            Chunking::Every(n) => input.chunks((*n).max(1)).collect(),
            Chunking::Sizes(sizes) => {
                let mut out = Vec::new();
                let mut at = 0;
                for &s in sizes {
                    let end = (at + s).min(input.len());
                    out.push(&input[at..end]);
                    at = end;
                }
                if at < input.len() || out.is_empty() {
                    out.push(&input[at..]);
                }
                out
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Chunking::Whole => "whole (one feed)".into(),
            Chunking::Every(1) => "1-byte chunks".into(),
            Chunking::Every(n) => format!("{n}-byte chunks"),
            Chunking::Sizes(s) => format!("chunks of sizes {s:?} then the rest"),
        }
    }
}

/// Feeds `input` in the given chunks (then `finish` if asked). A panic is
/// returned as `Err(message)`.
fn run(grammar: &Grammar, input: &[u8], chunking: &Chunking, finish: bool) -> Result<Outcome, String> {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut rec = Recorder { events: Vec::new(), builder: MessageBuilder::new() };
        let mut parser = StreamParser::new(&grammar.node).with_tools(grammar.tools.clone()).with_discard_log();
        for piece in chunking.pieces(input) {
            parser.feed(piece, &mut rec);
        }
        if finish {
            parser.finish(&mut rec);
        }
        (rec, parser.discarded().to_string())
    }));
    match result {
        Ok((rec, discarded)) => {
            Ok(Outcome { events: normalize(&rec.events), raw: rec.events, message: rec.builder.into_message(), discarded })
        }
        Err(payload) => Err(payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(non-string panic payload)".into())),
    }
}

// ---------------------------------------------------------------------------
// Failure reports.

/// Input bytes as a Rust-escaped string (`\xNN` for bytes that are not
/// valid UTF-8), shortened in the middle when huge.
fn esc(bytes: &[u8]) -> String {
    const HEAD: usize = 1200;
    const TAIL: usize = 300;
    if bytes.len() > HEAD + TAIL + 100 {
        return format!(
            "{} …({} bytes in all; {} left out)… {}",
            esc(&bytes[..HEAD]),
            bytes.len(),
            bytes.len() - HEAD - TAIL,
            esc(&bytes[bytes.len() - TAIL..])
        );
    }
    let mut s = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            s.extend(c.escape_debug());
        }
        for b in chunk.invalid() {
            let _ = write!(s, "\\x{b:02X}");
        }
    }
    s.push('"');
    s
}

fn short(s: &str) -> String {
    if s.len() > 400 {
        let mut cut = 400;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{:?}…({} bytes)", &s[..cut], s.len())
    } else {
        format!("{s:?}")
    }
}

struct Failures {
    test: &'static str,
    /// `(rule, template label, full report)`.
    list: Vec<(&'static str, String, String)>,
}

impl Failures {
    fn new(test: &'static str) -> Failures {
        Failures { test, list: Vec::new() }
    }

    fn add(&mut self, rule: &'static str, label: &str, input: &[u8], chunking: &str, detail: impl std::fmt::Display) {
        let text = format!("[RULE: {rule}]\n    {detail}\n    template: {label}\n    input: {}\n    chunking: {chunking}", esc(input));
        self.list.push((rule, label.to_string(), text));
    }

    /// Takes the failures of `other`, with a line appended to each.
    fn absorb(&mut self, other: Failures, extra: &str) {
        for (rule, label, text) in other.list {
            self.list.push((rule, label, format!("{text}\n    {extra}")));
        }
    }

    /// Prints the failures grouped by rule and template (3 examples per
    /// rule and template, or `BAD_OUTPUT_SHOW`) and fails if there were any.
    fn finish(self) {
        if self.list.is_empty() {
            println!("{}: no failures", self.test);
            return;
        }
        let mut by_rule: BTreeMap<&str, BTreeMap<&str, Vec<&String>>> = BTreeMap::new();
        for (rule, label, text) in &self.list {
            by_rule.entry(rule).or_default().entry(label.as_str()).or_default().push(text);
        }
        let mut summary = String::new();
        for (rule, by_label) in &by_rule {
            let n: usize = by_label.values().map(Vec::len).sum();
            let _ = writeln!(summary, "  {n:>5} × [RULE: {rule}] in {} template/option sets", by_label.len());
        }
        println!("{}: {} failures\n{summary}", self.test, self.list.len());
        // BAD_OUTPUT_SHOW=n prints n examples per rule and template.
        let show: usize = std::env::var("BAD_OUTPUT_SHOW").ok().and_then(|v| v.parse().ok()).unwrap_or(3);
        for (rule, by_label) in &by_rule {
            println!("==== [RULE: {rule}]");
            for (label, items) in by_label {
                println!("  ---- {} failures in {label}", items.len());
                for text in items.iter().take(show) {
                    println!("{text}\n");
                }
            }
        }
        let firsts: Vec<&str> = by_rule.values().filter_map(|m| m.values().next().map(|v| v[0].as_str())).collect();
        panic!(
            "{}: {} failures by rule (all printed above, grouped by template):\n{summary}\nfirst failure of each rule:\n{}",
            self.test,
            self.list.len(),
            firsts.join("\n\n")
        );
    }
}

// ---------------------------------------------------------------------------
// Templates, tools and fixtures.

fn tool(name: &str, props: Value) -> Value {
    json!({"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object", "properties": props}}})
}

/// The tools every hand-written fixture declares.
fn tools() -> Vec<Value> {
    vec![
        tool("get_weather", json!({"city": {"type": "string"}, "days": {"type": "integer"}})),
        tool("get_time", json!({"city": {"type": "string"}})),
        tool("toggle", json!({"enabled": {"type": "boolean"}, "note": {"description": "no type: JSON when it parses, else a string"}})),
    ]
}

fn own_template(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../templates").join(format!("{name}.jinja"))
}

/// The analysed spec of a template (cached: analysis renders many probes).
fn spec_of(path: &Path) -> FormatSpec {
    static CACHE: OnceLock<Mutex<BTreeMap<PathBuf, FormatSpec>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(BTreeMap::new()));
    if let Some(s) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
        return s.clone();
    }
    let name = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let template = ChatTemplate::new(&name, &source).unwrap_or_else(|e| panic!("{name}: does not compile: {e}"));
    let spec = analyze(&template).unwrap_or_else(|e| panic!("{name}: does not analyse: {e}")).spec;
    cache.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_path_buf(), spec.clone());
    spec
}

/// How a family writes tool calls (for hand-written outputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `<tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>`
    Hermes,
    /// `<function=NAME>{..}</function>`
    TagJson,
    /// `<tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call>`
    QwenXml,
    /// `[TOOL_CALLS][{"name": .., "arguments": {..}, "id": ..}]`
    MistralArray,
    /// `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{..}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`
    DeepSeek,
    /// `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{..}`
    MistralSmall,
    /// `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>`
    Glm,
    /// `<minimax:tool_call>\n<invoke name="NAME">\n<parameter name="K">V</parameter>\n</invoke>\n</minimax:tool_call>`
    MiniMax,
    /// `<|START_ACTION|>[\n    {"tool_call_id": .., "tool_name": .., "parameters": {..}}\n]<|END_ACTION|>`
    Cohere,
    /// `<tool_calls>[{"name": .., "arguments": {..}}]</tool_calls>`
    Apriel,
    /// No tool calls in this template.
    NoTools,
}

#[derive(Debug, Clone)]
enum Val {
    /// A string value (JSON-quoted in JSON formats, raw in tagged ones).
    S(String),
    /// JSON text, written as is (may be broken on purpose).
    J(String),
}

impl Val {
    fn raw(&self) -> &str {
        match self {
            Val::S(s) | Val::J(s) => s,
        }
    }
    fn json_text(&self) -> String {
        match self {
            Val::S(s) => serde_json::to_string(s).unwrap_or_default(),
            Val::J(s) => s.clone(),
        }
    }
}

#[derive(Debug, Clone)]
enum Args {
    Pairs(Vec<(String, Val)>),
    /// The whole arguments text (JSON formats only).
    Raw(String),
}

#[derive(Debug, Clone)]
struct Call {
    name: String,
    id: String,
    args: Args,
}

fn s(v: &str) -> Val {
    Val::S(v.to_string())
}
fn j(v: &str) -> Val {
    Val::J(v.to_string())
}

fn call(name: &str, id: &str, pairs: &[(&str, Val)]) -> Call {
    Call { name: name.into(), id: id.into(), args: Args::Pairs(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()) }
}

fn raw_call(name: &str, id: &str, args: &str) -> Call {
    Call { name: name.into(), id: id.into(), args: Args::Raw(args.into()) }
}

impl Call {
    fn json_args(&self) -> String {
        match &self.args {
            Args::Raw(r) => r.clone(),
            Args::Pairs(p) => {
                let items: Vec<String> = p.iter().map(|(k, v)| format!("{}: {}", json!(k), v.json_text())).collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }
    fn pairs(&self) -> Vec<(String, Val)> {
        match &self.args {
            Args::Pairs(p) => p.clone(),
            Args::Raw(_) => panic!("test bug: raw arguments in a tagged format"),
        }
    }
    /// The arguments as a JSON value, when they are valid.
    fn expected_args(&self) -> Option<Value> {
        serde_json::from_str(&self.json_args()).ok()
    }
}

impl Family {
    fn of(template: &str) -> Family {
        match template {
            "json_tool_call" | "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use" => Family::Hermes,
            "tag_json_args" => Family::TagJson,
            "xml_args" | "Qwen3-Coder" => Family::QwenXml,
            "mistral_tool_calls" => Family::MistralArray,
            "deepseek-ai-DeepSeek-V3.1" => Family::DeepSeek,
            "Mistral-Small-3.2-24B-Instruct-2506" => Family::MistralSmall,
            "GLM-4.7-Flash" => Family::Glm,
            "MiniMax-M2" => Family::MiniMax,
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use" => Family::Cohere,
            "unsloth-Apriel-1.5" => Family::Apriel,
            _ => Family::NoTools,
        }
    }

    fn has_tools(self) -> bool {
        self != Family::NoTools
    }

    /// Arguments written as one JSON object (not tag by tag).
    fn json_args(self) -> bool {
        !matches!(self, Family::QwenXml | Family::Glm | Family::MiniMax | Family::NoTools)
    }

    /// What opens tool calls.
    fn trigger(self) -> &'static str {
        match self {
            Family::Hermes | Family::QwenXml | Family::Glm | Family::NoTools => "<tool_call>",
            Family::TagJson => "<function=",
            Family::MistralArray | Family::MistralSmall => "[TOOL_CALLS]",
            Family::DeepSeek => "<｜tool▁calls▁begin｜>",
            Family::MiniMax => "<minimax:tool_call>",
            Family::Cohere => "<|START_ACTION|>",
            Family::Apriel => "<tool_calls>",
        }
    }

    /// Markers that close something.
    fn closers(self) -> &'static [&'static str] {
        match self {
            Family::Hermes => &["</tool_call>"],
            Family::TagJson => &["</function>"],
            Family::QwenXml => &["</parameter>", "</function>", "</tool_call>"],
            Family::MistralArray => &["]", "}]"],
            Family::DeepSeek => &["<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>", "<｜tool▁sep｜>"],
            Family::MistralSmall => &["[ARGS]", "[CALL_ID]"],
            Family::Glm => &["</arg_value>", "</tool_call>"],
            Family::MiniMax => &["</invoke>", "</minimax:tool_call>"],
            Family::Cohere => &["<|END_ACTION|>", "<|END_RESPONSE|>"],
            Family::Apriel => &["</tool_calls>"],
            Family::NoTools => &["</tool_call>", "</think>"],
        }
    }

    fn render(self, calls: &[Call]) -> String {
        let mut out = String::new();
        match self {
            Family::Hermes => {
                let parts: Vec<String> = calls
                    .iter()
                    .map(|c| format!("<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>", c.name, c.json_args()))
                    .collect();
                out = parts.join("\n");
            }
            Family::TagJson => {
                for c in calls {
                    let _ = write!(out, "<function={}>{}</function>", c.name, c.json_args());
                }
            }
            Family::QwenXml => {
                let parts: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        let mut s = format!("<tool_call>\n<function={}>\n", c.name);
                        for (k, v) in c.pairs() {
                            let _ = write!(s, "<parameter={k}>\n{}\n</parameter>\n", v.raw());
                        }
                        s + "</function>\n</tool_call>"
                    })
                    .collect();
                out = parts.join("\n");
            }
            Family::MistralArray => {
                let parts: Vec<String> = calls
                    .iter()
                    .map(|c| format!("{{\"name\": \"{}\", \"arguments\": {}, \"id\": \"{}\"}}", c.name, c.json_args(), c.id))
                    .collect();
                out = format!("[TOOL_CALLS][{}]", parts.join(", "));
            }
            Family::DeepSeek => {
                out.push_str("<｜tool▁calls▁begin｜>");
                for c in calls {
                    let _ = write!(out, "<｜tool▁call▁begin｜>{}<｜tool▁sep｜>{}<｜tool▁call▁end｜>", c.name, c.json_args());
                }
                out.push_str("<｜tool▁calls▁end｜>");
            }
            Family::MistralSmall => {
                for c in calls {
                    let _ = write!(out, "[TOOL_CALLS]{}[CALL_ID]{}[ARGS]{}", c.name, c.id, c.json_args());
                }
            }
            Family::Glm => {
                for c in calls {
                    let _ = write!(out, "<tool_call>{}", c.name);
                    for (k, v) in c.pairs() {
                        let _ = write!(out, "<arg_key>{k}</arg_key><arg_value>{}</arg_value>", v.raw());
                    }
                    out.push_str("</tool_call>");
                }
            }
            Family::MiniMax => {
                let parts: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        let mut s = format!("<minimax:tool_call>\n<invoke name=\"{}\">\n", c.name);
                        for (k, v) in c.pairs() {
                            let _ = writeln!(s, "<parameter name=\"{k}\">{}</parameter>", v.raw());
                        }
                        s + "</invoke>\n</minimax:tool_call>"
                    })
                    .collect();
                out = parts.join("\n");
            }
            Family::Cohere => {
                let parts: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        format!("{{\"tool_call_id\": \"{}\", \"tool_name\": \"{}\", \"parameters\": {}}}", c.id, c.name, c.json_args())
                    })
                    .collect();
                out = format!("<|START_ACTION|>[\n    {}\n]<|END_ACTION|>", parts.join(",\n    "));
            }
            Family::Apriel => {
                let parts: Vec<String> =
                    calls.iter().map(|c| format!("{{\"name\": \"{}\", \"arguments\": {}}}", c.name, c.json_args())).collect();
                out = format!("<tool_calls>[{}]</tool_calls>", parts.join(", "));
            }
            Family::NoTools => {}
        }
        out
    }
}

/// Plain text before the call markup in hand-written outputs.
const LEAD: &str = "Sure, checking now.\n";

/// The ids hand-written calls carry (where the format has ids).
const IDS: [&str; 2] = ["A1b2C4d5e", "Z9y8X7w6v"];

#[derive(Debug, Clone)]
struct Sample {
    text: Vec<u8>,
    /// Byte range of plain content that comes before any call markup.
    lead: Option<Range<usize>>,
    origin: String,
    /// The calls a whole parse must report (hand-written samples).
    expect: Option<Vec<Call>>,
}

/// A grammar and the tools its parser checks names against.
struct Grammar {
    node: Node,
    tools: Vec<chat_parser_generator::ir::build::ToolSignature>,
}

struct Fixture {
    template: String,
    label: String,
    family: Family,
    grammar: Grammar,
    /// Declared tool names.
    tools: Vec<String>,
    /// Text that ends a reasoning block the output starts in (or opens and
    /// closes one), so that what follows is content. Empty when the output
    /// starts in content.
    rprefix: String,
    /// The content a whole parse of `rprefix` alone reports (text the
    /// generation prompt prefilled).
    base: String,
    /// Every literal and name in the grammar (markup that may vanish).
    literals: Vec<String>,
    /// The template's end-of-turn markers (dropped from content by design).
    turn_ends: Vec<String>,
    /// JSON call objects, which the parsers also read with their arguments
    /// first: their arguments then come before the name, and a call that
    /// breaks after its arguments opened ends without a name (the Event
    /// contract's documented exception, `Event::ToolName`).
    args_first: bool,
    samples: Vec<Sample>,
}

fn collect_literals(n: &Node, out: &mut Vec<String>) {
    match n {
        Node::Literal(s) => out.push(s.clone()),
        Node::Seq(items) => items.iter().for_each(|i| collect_literals(i, out)),
        Node::Choice(alts) | Node::Repeat { alts, .. } => {
            for a in alts {
                collect_literals(&a.guard, out);
                collect_literals(&a.body, out);
            }
        }
        Node::Until { stops, .. } => out.extend(stops.iter().cloned()),
        Node::Json { marker, .. } if !marker.is_empty() => out.push(marker.clone()),
        Node::Mark(Mark::Name(name)) => out.push(name.clone()),
        Node::ArgKey(k) => out.push(k.clone()),
        Node::ByArgType { string, json, auto } => [string, json, auto].iter().for_each(|n| collect_literals(n, out)),
        _ => {}
    }
}

/// The text that gets the output out of reasoning, per template and
/// options (checked by `fixture_sanity`).
fn reasoning_prefix(template: &str, options: &ParseOptions) -> String {
    let opens = matches!(template, "think" | "deepseek-ai-DeepSeek-V3.1" | "GLM-4.7-Flash" | "MiniMax-M2");
    if opens && options.enable_thinking {
        return "Thinking it over.</think>".into();
    }
    if template == "CohereForAI-c4ai-command-r7b-12-2024-tool_use" {
        return "<|START_THINKING|>Planning ahead.<|END_THINKING|>".into();
    }
    String::new()
}

fn describe_options(o: &ParseOptions) -> String {
    let names: Vec<&str> = o.tools.iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    format!(
        "tools {names:?}, parallel_tool_calls={}, enable_thinking={}, reasoning_format={:?}, tool_choice={:?}",
        o.parallel_tool_calls, o.enable_thinking, o.reasoning_format, o.tool_choice
    )
}

fn make_fixture(template: &str, path: &Path, options: ParseOptions, samples: Vec<Sample>, rprefix: String) -> Fixture {
    let spec = spec_of(path);
    let grammar = Grammar { node: build(&spec, &options), tools: chat_parser_generator::ir::build::tool_signatures(&options) };
    let mut literals = Vec::new();
    collect_literals(&grammar.node, &mut literals);
    literals.sort();
    literals.dedup();
    let base = run(&grammar, rprefix.as_bytes(), &Chunking::Whole, true).map(|o| o.message.content).unwrap_or_default();
    Fixture {
        template: template.to_string(),
        label: format!("{template} [{}]", describe_options(&options)),
        family: Family::of(template),
        tools: options.tools.iter().filter_map(|t| t["function"]["name"].as_str().map(String::from)).collect(),
        grammar,
        rprefix,
        base,
        literals,
        turn_ends: spec.content.end_of_turn.clone(),
        args_first: chat_parser_generator::ir::build::reads_arguments_first(&spec),
        samples,
    }
}

/// `text` as content reports it: each end-of-turn marker dropped with the
/// whitespace after it.
fn without_turn_ends(text: &str, ends: &[String]) -> String {
    let mut out = String::new();
    let mut rest = text;
    'scan: while let Some(c) = rest.chars().next() {
        for e in ends.iter().filter(|e| !e.is_empty()) {
            if let Some(after) = rest.strip_prefix(e.as_str()) {
                rest = after.trim_start_matches([' ', '\t', '\n', '\r']);
                continue 'scan;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Hand-written valid outputs for a family: `(calls, parallel only)`.
fn valid_calls(family: Family) -> Vec<(Vec<Call>, bool)> {
    if !family.has_tools() {
        return Vec::new();
    }
    vec![
        (vec![call("get_weather", IDS[0], &[("city", s("Paris")), ("days", j("3"))])], false),
        (vec![call("toggle", IDS[0], &[("enabled", j("true")), ("note", j("null"))])], false),
        (vec![call("get_time", IDS[0], &[("city", s("Zürich <tool_call> \"Alt\" 東京"))])], false),
        (vec![call("get_time", IDS[0], &[("city", s("Oslo"))]), call("toggle", IDS[1], &[("enabled", j("false"))])], true),
    ]
}

/// A hand-written output: reasoning prefix, lead content, then the calls.
fn hand_sample(fx_rprefix: &str, family: Family, calls: &[Call], origin: &str) -> Sample {
    let text = format!("{fx_rprefix}{LEAD}{}", family.render(calls));
    let start = fx_rprefix.len();
    Sample { text: text.into_bytes(), lead: Some(start..start + LEAD.len()), origin: origin.into(), expect: Some(calls.to_vec()) }
}

/// Fixtures over one template with the hand-written tools: tool templates
/// with and without parallel calls; reasoning templates with a few reasoning
/// options.
fn hand_fixtures_for(template: &str, path: &Path) -> Vec<Fixture> {
    let family = Family::of(template);
    let mut option_sets: Vec<ParseOptions> = Vec::new();
    if family.has_tools() {
        for parallel in [false, true] {
            option_sets.push(ParseOptions { tools: tools(), parallel_tool_calls: parallel, ..ParseOptions::default() });
        }
    } else {
        option_sets.push(ParseOptions { tools: tools(), ..ParseOptions::default() });
        if template == "think" {
            option_sets.push(ParseOptions { enable_thinking: false, ..ParseOptions::default() });
            option_sets.push(ParseOptions { reasoning_format: ReasoningFormat::None, ..ParseOptions::default() });
        }
    }
    option_sets
        .into_iter()
        .map(|options| {
            let rprefix =
                if options.reasoning_format == ReasoningFormat::None { String::new() } else { reasoning_prefix(template, &options) };
            let mut samples = Vec::new();
            for (i, (calls, parallel_only)) in valid_calls(family).into_iter().enumerate() {
                if parallel_only && !options.parallel_tool_calls {
                    continue;
                }
                samples.push(hand_sample(&rprefix, family, &calls, &format!("hand-written #{i}")));
            }
            if !family.has_tools() {
                let text = format!("{rprefix}{LEAD}The answer is 4, see <b>this</b>.");
                let start = rprefix.len();
                samples.push(Sample {
                    lead: Some(start..text.len()),
                    text: text.into_bytes(),
                    origin: "hand-written content".into(),
                    expect: Some(Vec::new()),
                });
            }
            make_fixture(template, path, options, samples, rprefix)
        })
        .collect()
}

const OWN_TEMPLATES: &[&str] = &["json_tool_call", "tag_json_args", "xml_args", "mistral_tool_calls", "think", "plain"];

const CORPUS_TEMPLATES: &[&str] = &[
    "Qwen3-Coder",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
    "deepseek-ai-DeepSeek-V3.1",
    "Mistral-Small-3.2-24B-Instruct-2506",
    "GLM-4.7-Flash",
    "MiniMax-M2",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use",
    "unsloth-Apriel-1.5",
];

/// One corpus template of each dedicated family (formats the generic
/// analysis cannot describe): their parse vectors are truncated at every
/// byte and mutated like the others'.
const DEDICATED_TEMPLATES: &[&str] = &[
    "openai-gpt-oss-120b",
    "google-gemma-4-31B-it",
    "mistralai-Ministral-3-14B-Reasoning-2512",
    "Kimi-K2-Thinking",
    "deepseek-ai-DeepSeek-V3.2",
    "LFM2-8B-A1B",
    "LFM2.5-Instruct",
    "meetkai-functionary-medium-v3.2",
    "Cohere2MoE",
    "GigaChat3-10B-A1.8B",
    "MiroThinker",
];

fn own_fixtures() -> Vec<Fixture> {
    OWN_TEMPLATES.iter().flat_map(|t| hand_fixtures_for(t, &own_template(t))).collect()
}

/// Hand-written fixtures over the corpus templates (empty, after a skip
/// line, without the corpus).
fn corpus_hand_fixtures(test: &str) -> Vec<Fixture> {
    let Some(shared) = common::shared_dir(&format!("{test} (corpus templates only; own templates still run)")) else { return Vec::new() };
    CORPUS_TEMPLATES.iter().flat_map(|t| hand_fixtures_for(t, &shared.join("templates").join(format!("{t}.jinja")))).collect()
}

/// Own and corpus hand-written fixtures.
fn all_hand_fixtures(test: &str) -> Vec<Fixture> {
    let mut v = own_fixtures();
    v.extend(corpus_hand_fixtures(test));
    v
}

/// One fixture per parse vector of the chosen corpus templates (the case's
/// own options), with the vector's input as the valid sample.
fn vector_fixtures(test: &str) -> Vec<Fixture> {
    let Some(shared) = common::shared_dir(test) else { return Vec::new() };
    // With the project's own cases of formats no render shows (MiroThinker).
    case_fixtures(&shared, common::vectors::load(&shared).into_iter().chain(common::vectors::described(&shared)).collect(), "vector")
}

/// One fixture per real-output case (`tests/data/real_outputs/*.jsonl`:
/// outputs as models write them, beyond the template's renders) of the
/// chosen corpus templates, whose input is the valid sample: the lenient
/// forms are mutated like the template's own.
fn real_output_fixtures(test: &str) -> Vec<Fixture> {
    let Some(shared) = common::shared_dir(test) else { return Vec::new() };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/real_outputs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect())
        .unwrap_or_default();
    files.sort();
    let cases = files.iter().flat_map(|f| common::vectors::load_file(&shared, f)).collect();
    case_fixtures(&shared, cases, "real output")
}

/// [`vector_fixtures`] of `cases` (`kind` names them in failures).
fn case_fixtures(shared: &Path, cases: Vec<common::vectors::Case>, kind: &str) -> Vec<Fixture> {
    let mut out = Vec::new();
    for case in cases {
        let stem = case.template.trim_end_matches(".jinja").to_string();
        let chosen = CORPUS_TEMPLATES.contains(&stem.as_str()) || DEDICATED_TEMPLATES.contains(&stem.as_str());
        if !chosen || case.is_partial || case.expected.is_none() {
            continue;
        }
        let path = shared.join("templates").join(&case.template);
        let mut fx = make_fixture(&stem, &path, case.options.clone(), Vec::new(), String::new());
        fx.label = format!("{} ({kind} {})", fx.label, case.id);
        // The plain content before the first call: the content events a
        // whole parse reports before the first call, located in the input.
        let mut lead = None;
        if let Ok(o) = run(&fx.grammar, case.input.as_bytes(), &Chunking::Whole, true) {
            let mut first = String::new();
            for e in &o.events {
                match e {
                    Ev::Content(t) => first.push_str(t),
                    Ev::Start(_) => break,
                    _ => {}
                }
            }
            if !first.trim().is_empty() && case.input.matches(first.as_str()).count() == 1 {
                let at = case.input.find(first.as_str()).unwrap_or(0);
                lead = Some(at..at + first.len());
            }
        }
        fx.samples.push(Sample { text: case.input.clone().into_bytes(), lead, origin: format!("{kind} {}", case.id), expect: None });
        out.push(fx);
    }
    out
}

// ---------------------------------------------------------------------------
// Checks.

/// The runtime's event contract, and declared names, on a raw event stream.
/// `finished`: the stream ends with `finish()` (every call must be closed).
fn check_events(f: &mut Failures, fx: &Fixture, input: &[u8], chunking: &str, raw: &[Ev], finished: bool) {
    let mut calls = 0usize;
    // (has name, ended) of the current call.
    let mut open: Option<(bool, usize)> = None;
    let mut args_of_call = String::new();
    for (i, e) in raw.iter().enumerate() {
        let bad = |f: &mut Failures, rule: &'static str, what: String| {
            f.add(rule, &fx.label, input, chunking, format!("event #{i} {e:?}: {what}\n    events: {}", short(&format!("{raw:?}"))))
        };
        match e {
            Ev::Content(t) | Ev::Reasoning(t) if t.is_empty() => bad(f, R_EVENTS, "empty text event".into()),
            Ev::Start(index) => {
                if let Some((named, _)) = open {
                    if !named {
                        bad(f, R_BEFORE_NAME, "a call started before the previous one got a name".into());
                    }
                    bad(f, R_EVENTS, "a call started while the previous one was still open".into());
                }
                if *index != calls {
                    bad(f, R_EVENTS, format!("index {index}, expected {calls}"));
                }
                calls += 1;
                open = Some((false, i));
                args_of_call.clear();
            }
            Ev::Name(n) => match open.as_mut() {
                None => bad(f, R_EVENTS, "name outside a call".into()),
                Some((named, _)) => {
                    if *named {
                        bad(f, R_EVENTS, "a second name for one call".into());
                    }
                    *named = true;
                    if n.is_empty() {
                        bad(f, R_NAMES, "empty name".into());
                    } else if !fx.tools.iter().any(|t| t == n) {
                        bad(f, R_NAMES, format!("{n:?} is not declared (tools: {:?})", fx.tools));
                    }
                }
            },
            Ev::Id(_) if open.is_none() => bad(f, R_EVENTS, "id outside a call".into()),
            Ev::Args(t) => match open {
                None => bad(f, R_EVENTS, "arguments outside a call".into()),
                Some((false, _)) if !fx.args_first => bad(f, R_EVENTS, "arguments before the call's name".into()),
                Some(_) => args_of_call.push_str(t),
            },
            Ev::End(complete) => match open.take() {
                None => bad(f, R_EVENTS, "end outside a call".into()),
                Some((named, _)) => {
                    // (An arguments-first call that broke after its
                    // arguments has none, by `Event::ToolName`'s contract.)
                    let args_first_broken = fx.args_first && !args_of_call.is_empty() && !*complete;
                    if !(named || args_first_broken) {
                        // KNOWN VIOLATION (reported): a later call of a
                        // section holding several calls (JSON arrays,
                        // DeepSeek) that breaks before its name is reported
                        // as a nameless incomplete call.
                        bad(f, R_BEFORE_NAME, "a call without a name was reported (its markup must come back as content)".into());
                    }
                    if *complete {
                        match serde_json::from_str::<Value>(&args_of_call) {
                            // KNOWN VIOLATION (reported): the JSON scanner
                            // takes any run of [0-9.eE+-] as a number
                            // ("1-2", "-", "01", "1e", "1.2.3").
                            Err(_) => bad(f, R_BROKEN, format!("complete call whose arguments {args_of_call:?} are not valid JSON")),
                            // KNOWN VIOLATION (reported): any JSON value is
                            // taken as a call's arguments.
                            Ok(v) if !v.is_object() => {
                                bad(f, R_JSON, format!("complete call with arguments {args_of_call:?}, not a JSON object"))
                            }
                            Ok(_) => {}
                        }
                    }
                }
            },
            Ev::Broken(from, len) => {
                if i == 0 || raw[i - 1] != Ev::End(false) {
                    bad(f, R_BROKEN_TEXT, "not right after the end of an incomplete call".into());
                }
                let output = String::from_utf8_lossy(input);
                match output.get(*from..from + len) {
                    None => bad(f, R_BROKEN_TEXT, format!("not a span of the output ({} bytes)", output.len())),
                    // Content read after the call is the output from there,
                    // but for markup the content rule drops (an end-of-turn
                    // marker and the whitespace after it: a token-like
                    // `<|…|>` in the fixtures), no longer than a marker.
                    Some(_) => {
                        if let Some(Ev::Content(next)) = raw.get(i + 1) {
                            let rest = &output[from + len..];
                            let markup = fx.literals.iter().chain(&fx.turn_ends).filter(|l| !l.is_empty());
                            let dropped = |s: &str| s.is_empty() || (s.len() <= 64 && s.starts_with("<|")) || markup.clone().any(|l| s.starts_with(l.as_str()));
                            // Any place holding the content's first character,
                            // not only the first: that character may be inside
                            // the dropped marker (`n` of `<turn|>` before
                            // "nabled"). (The content is merged, so it may go
                            // on past more dropped markup: only its start is
                            // compared.)
                            let first = next.chars().next().unwrap_or(' ');
                            let resumes = rest.match_indices(first).any(|(k, _)| dropped(rest[..k].trim()));
                            if !resumes {
                                bad(f, R_BROKEN_TEXT, format!("the content after it, {next:?}, does not start where it ends"));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if finished {
        if let Some((named, at)) = open {
            f.add(R_EVENTS, &fx.label, input, chunking, format!("call started at event #{at} still open after finish() (named: {named})"));
        }
    }
}

/// Letters-and-digits words of the input that are not part of the grammar's
/// markup must all be found in the output (content, reasoning, names, ids,
/// arguments). A word may be split where a broken call ended: its start at
/// the end of the call's arguments, the rest at the start of the content
/// after it. `letters_only` splits at digits too and ignores one-letter
/// words (for mutated inputs, where numbers may be re-serialised).
/// The JSON spelling of a Python literal `w` (`None`, `True`, `False`) or
/// of its start (`No` → `nu`).
fn python_literal_as_json(w: &str) -> Option<&'static str> {
    [("None", "null"), ("True", "true"), ("False", "false")].into_iter().find(|(py, _)| py.starts_with(w)).map(|(_, json)| &json[..w.len()])
}

fn check_words(f: &mut Failures, fx: &Fixture, input: &[u8], chunking: &str, o: &Outcome, letters_only: bool) {
    let text = String::from_utf8_lossy(input);
    // The output's texts in event order, separated by NUL, except that the
    // content after a call's last arguments is glued to them.
    let mut out = String::new();
    let mut glue = false;
    for e in &o.events {
        match e {
            Ev::Content(t) if glue => out.push_str(t),
            Ev::Content(t) | Ev::Reasoning(t) | Ev::Name(t) | Ev::Id(t) | Ev::Args(t) => {
                out.push('\u{0}');
                out.push_str(t);
            }
            Ev::Start(_) => out.push('\u{0}'),
            Ev::End(_) | Ev::Broken(..) => {}
        }
        glue = matches!(e, Ev::Args(_)) || (glue && matches!(e, Ev::End(_) | Ev::Broken(..)));
    }
    let is_word = |c: char| if letters_only { c.is_alphabetic() } else { c.is_alphanumeric() };
    let mut missing = Vec::new();
    for w in text.split(|c: char| !is_word(c)).filter(|w| !w.is_empty()) {
        if letters_only && w.chars().count() < 2 {
            continue;
        }
        if fx.literals.iter().any(|l| l.contains(w)) || out.contains(w) || o.discarded.contains(w) {
            continue;
        }
        // A Python literal (or its start, where the value broke) is reported
        // as JSON's (`None` → `null`, `No` → `nu`), by design.
        if python_literal_as_json(w).is_some_and(|j| out.contains(j)) {
            continue;
        }
        // A word glued to markup (`<|channel>thoughtful`, the opener ending
        // in a letter): markup on one side, output on the other.
        let kept = |part: &str| {
            fx.literals.iter().any(|l| l.contains(part))
                || out.contains(part)
                || o.discarded.contains(part)
                || python_literal_as_json(part).is_some_and(|j| out.contains(j))
        };
        let glued = w.char_indices().skip(1).any(|(k, _)| {
            let (a, b) = w.split_at(k);
            kept(a) && kept(b)
        });
        if glued {
            continue;
        }
        missing.push(w.to_string());
    }
    if !missing.is_empty() {
        // KNOWN VIOLATION (reported): a partial `true`/`false`/`null` where
        // JSON breaks or ends is dropped; a declared name that starts a longer
        // written name swallows it.
        f.add(
            R_LOSS,
            &fx.label,
            input,
            chunking,
            format!("words of the input missing from the output: {missing:?}\n    output: {:?}", o.message),
        );
    }
}

/// `partial` (events of a prefix, without finish) must be a prefix of `full`.
fn is_prefix(partial: &[Ev], full: &[Ev]) -> bool {
    if partial.len() > full.len() {
        return false;
    }
    let Some((last, init)) = partial.split_last() else { return true };
    if init.iter().zip(full).any(|(a, b)| a != b) {
        return false;
    }
    match (last, &full[init.len()]) {
        (Ev::Content(a), Ev::Content(b)) | (Ev::Reasoning(a), Ev::Reasoning(b)) | (Ev::Id(a), Ev::Id(b)) | (Ev::Args(a), Ev::Args(b)) => {
            b.starts_with(a.as_str())
        }
        (a, b) => a == b,
    }
}

/// Parses `input` whole and in each other chunking (with finish); checks no
/// panic, same events and message in every chunking, the event contract.
/// Returns the whole parse.
fn parse_all(f: &mut Failures, fx: &Fixture, input: &[u8], chunkings: &[Chunking]) -> Option<Outcome> {
    let whole = match run(&fx.grammar, input, &Chunking::Whole, true) {
        Ok(o) => o,
        Err(p) => {
            f.add(R_PANIC, &fx.label, input, &Chunking::Whole.describe(), format!("panicked: {p}"));
            return None;
        }
    };
    check_events(f, fx, input, &Chunking::Whole.describe(), &whole.raw, true);
    for c in chunkings {
        match run(&fx.grammar, input, c, true) {
            Err(p) => f.add(R_PANIC, &fx.label, input, &c.describe(), format!("panicked: {p}")),
            Ok(o) => {
                if o.events != whole.events || o.message != whole.message {
                    f.add(
                        R_STREAM,
                        &fx.label,
                        input,
                        &c.describe(),
                        format!(
                            "chunked {:?}\n    whole   {:?}\n    chunked events {}\n    whole events   {}",
                            o.message,
                            whole.message,
                            short(&format!("{:?}", o.events)),
                            short(&format!("{:?}", whole.events))
                        ),
                    );
                } else {
                    check_events(f, fx, input, &c.describe(), &o.raw, true);
                }
            }
        }
    }
    Some(whole)
}

fn args_match(got: &str, want: &Value) -> bool {
    serde_json::from_str::<Value>(got).is_ok_and(|v| &v == want)
}

// ---------------------------------------------------------------------------
// Small deterministic RNG (xorshift64*).

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// Random chunk sizes covering `len` bytes (mostly small, some large).
    fn chunking(&mut self, len: usize) -> Chunking {
        let mut sizes = Vec::new();
        let mut total = 0;
        while total < len {
            let s = if self.chance(80) { 1 + self.below(4) } else { 1 + self.below(40) };
            sizes.push(s);
            total += s;
        }
        Chunking::Sizes(sizes)
    }
}

/// Bytes a mutation inserts: markup characters, whitespace, letters, and
/// bytes that are not valid UTF-8 on their own.
const PALETTE: &[u8] = b"<>/{}[]\":,=|_\\ \n\tazAZ09.-\x00\x80\xBF\xC3\xE2\xF0\xFF";

/// Garbage bytes: biased toward markup characters and broken UTF-8.
fn garbage(rng: &mut Rng, len: usize, markers: &[&str]) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    while out.len() < len {
        match rng.below(10) {
            0..=4 => out.push(*rng.pick(PALETTE)),
            5 | 6 => out.push((rng.next() & 0xFF) as u8),
            7 if !markers.is_empty() => {
                let m = rng.pick(markers).as_bytes();
                let cut = 1 + rng.below(m.len());
                out.extend_from_slice(&m[..cut]);
            }
            _ => out.extend_from_slice(b"word "),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// 0. The fixtures themselves: hand-written valid outputs parse as intended.

fn check_sample(f: &mut Failures, fx: &Fixture, sample: &Sample) {
    let Some(want) = &sample.expect else { return };
    let Ok(o) = run(&fx.grammar, &sample.text, &Chunking::Whole, true) else {
        f.add(R_PANIC, &fx.label, &sample.text, "whole (one feed)", "panicked on a valid output");
        return;
    };
    let m = &o.message;
    let ok_calls = m.tool_calls.len() == want.len()
        && m.tool_calls
            .iter()
            .zip(want)
            .all(|(g, w)| g.complete && g.name == w.name && w.expected_args().is_some_and(|a| args_match(&g.arguments, &a)));
    let lead_ok = match sample.lead.clone() {
        Some(r) => m.content.contains(String::from_utf8_lossy(&sample.text[r]).as_ref()),
        None => true,
    };
    if !ok_calls || !lead_ok {
        f.add(
            R_FIXTURE,
            &fx.label,
            &sample.text,
            "whole (one feed)",
            format!("{}: parsed as {m:?}, expected calls {want:?}", sample.origin),
        );
    }
}

#[test]
fn fixture_sanity() {
    let mut f = Failures::new("fixture_sanity");
    for fx in all_hand_fixtures("bad_output fixture_sanity") {
        for sample in &fx.samples {
            check_sample(&mut f, &fx, sample);
        }
        // The reasoning prefix leaves reasoning: what follows is content.
        let probe = format!("{}Hello", fx.rprefix);
        if let Ok(o) = run(&fx.grammar, probe.as_bytes(), &Chunking::Whole, true) {
            if o.message.content != format!("{}Hello", fx.base) {
                f.add(
                    R_FIXTURE,
                    &fx.label,
                    probe.as_bytes(),
                    "whole (one feed)",
                    format!("reasoning prefix does not lead to content: {:?}", o.message),
                );
            }
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------
// 1. Truncation at every byte of valid outputs.

/// For every prefix of every valid sample: parse it whole and 1 byte at a
/// time (with finish), and without finish.
fn truncation(f: &mut Failures, fx: &Fixture, sample: &Sample, stats: &mut TruncationStats) {
    let text = &sample.text;
    let Ok(full) = run(&fx.grammar, text, &Chunking::Whole, true) else {
        f.add(R_PANIC, &fx.label, text, "whole (one feed)", "panicked on the whole valid output");
        return;
    };
    for k in 0..=text.len() {
        let prefix = &text[..k];
        let what = format!("prefix of {k} of {} bytes ({})", text.len(), sample.origin);
        let chunk_desc = |c: &Chunking| format!("{}; input = {what}", c.describe());
        let Ok(whole) = run(&fx.grammar, prefix, &Chunking::Whole, true) else {
            f.add(R_PANIC, &fx.label, prefix, &chunk_desc(&Chunking::Whole), "panicked");
            continue;
        };
        check_events(f, fx, prefix, &chunk_desc(&Chunking::Whole), &whole.raw, true);
        match run(&fx.grammar, prefix, &Chunking::Every(1), true) {
            Err(p) => f.add(R_PANIC, &fx.label, prefix, &chunk_desc(&Chunking::Every(1)), format!("panicked: {p}")),
            Ok(bytes) => {
                if bytes.events != whole.events || bytes.message != whole.message {
                    f.add(
                        R_STREAM,
                        &fx.label,
                        prefix,
                        &chunk_desc(&Chunking::Every(1)),
                        format!("1-byte {:?}\n    whole  {:?}", bytes.message, whole.message),
                    );
                }
            }
        }
        // Append-only: what the prefix reports without finish is a prefix of
        // the events of the whole output.
        match run(&fx.grammar, prefix, &Chunking::Whole, false) {
            Err(p) => f.add(R_PANIC, &fx.label, prefix, "whole, no finish()", format!("panicked: {p}")),
            Ok(partial) => {
                if !is_prefix(&partial.events, &full.events) {
                    f.add(
                        R_APPEND,
                        &fx.label,
                        prefix,
                        &format!("whole, no finish(); input = {what}"),
                        format!(
                            "events of the prefix are not a prefix of the events of the whole output\n    prefix events {}\n    full events   {}",
                            short(&format!("{:?}", partial.events)),
                            short(&format!("{:?}", full.events))
                        ),
                    );
                }
            }
        }
        // No plain text lost: the lead content (as far as the prefix goes) is
        // in the content, and every word of the prefix is in the output.
        if let Some(lead) = &sample.lead {
            if k > lead.start {
                let mut end = k.min(lead.end);
                while end > lead.start && std::str::from_utf8(&text[lead.start..end]).is_err() {
                    end -= 1;
                }
                let want = String::from_utf8_lossy(&text[lead.start..end]);
                if !whole.message.content.contains(want.as_ref()) {
                    f.add(
                        R_LOSS,
                        &fx.label,
                        prefix,
                        &chunk_desc(&Chunking::Whole),
                        format!("content {:?} lacks the plain text before the call {want:?}", whole.message.content),
                    );
                }
            }
        }
        check_words(f, fx, prefix, &chunk_desc(&Chunking::Whole), &whole, false);
        // Calls of a prefix agree with the whole output's; a call reported
        // complete has all its arguments (a cut-off call is incomplete).
        for (i, c) in whole.message.tool_calls.iter().enumerate() {
            let Some(fc) = full.message.tool_calls.get(i) else {
                f.add(
                    R_APPEND,
                    &fx.label,
                    prefix,
                    &chunk_desc(&Chunking::Whole),
                    format!("call #{i} {c:?} is not in the whole output's {:?}", full.message.tool_calls),
                );
                continue;
            };
            // (Names are not compared: a prefix that ends right after a
            // declared name that starts a longer one is a different output.
            // Append-only is checked without finish(), above.)
            if c.complete && c != fc {
                // KNOWN VIOLATION (reported): GLM-4.7-Flash reports a call cut
                // between its arguments (or right after its name) complete.
                f.add(
                    R_CUTOFF,
                    &fx.label,
                    prefix,
                    &chunk_desc(&Chunking::Whole),
                    format!("call #{i} reported complete although cut off: {c:?}; whole output's call: {fc:?}"),
                );
            }
            if c.complete && k < text.len() && sample.expect.is_some() && i + 1 == full.message.tool_calls.len() {
                // Informational: complete before the call's closing markup
                // arrived (see the report; not asserted).
                stats.complete_before_close.entry(fx.label.clone()).or_insert_with(|| esc(prefix));
            }
        }
    }
}

#[derive(Default)]
struct TruncationStats {
    complete_before_close: BTreeMap<String, String>,
}

#[test]
fn truncated_valid_calls_own_templates() {
    let started = Instant::now();
    let mut f = Failures::new("truncated_valid_calls_own_templates");
    let mut stats = TruncationStats::default();
    let mut n = 0;
    for fx in own_fixtures() {
        for sample in &fx.samples {
            truncation(&mut f, &fx, sample, &mut stats);
            n += sample.text.len() + 1;
        }
    }
    print_stats(&stats);
    println!("truncated_valid_calls_own_templates: {n} prefixes in {:?}", started.elapsed());
    f.finish();
}

#[test]
fn truncated_valid_calls_corpus() {
    let started = Instant::now();
    let mut f = Failures::new("truncated_valid_calls_corpus");
    let mut stats = TruncationStats::default();
    let mut n = 0;
    let mut fixtures = corpus_hand_fixtures("bad_output truncation");
    fixtures.extend(vector_fixtures("bad_output truncation (vectors)"));
    for fx in &fixtures {
        for sample in &fx.samples {
            truncation(&mut f, fx, sample, &mut stats);
            n += sample.text.len() + 1;
        }
    }
    print_stats(&stats);
    println!("truncated_valid_calls_corpus: {} fixtures, {n} prefixes in {:?}", fixtures.len(), started.elapsed());
    f.finish();
}

fn print_stats(stats: &TruncationStats) {
    for (label, example) in &stats.complete_before_close {
        println!("note: {label}: a call is reported complete before its closing markup arrived, e.g. for {example}");
    }
}

// ---------------------------------------------------------------------------
// 2. Undeclared tool names: the markup is content.

const UNDECLARED: &[&str] = &["unknown_tool", "get_weatherX", "get_weather_v2", "get_weathe", "GET_WEATHER", "get time", ""];

#[test]
fn undeclared_tool_names_are_content() {
    let mut f = Failures::new("undeclared_tool_names_are_content");
    let chunkings = [Chunking::Every(1), Chunking::Every(3), Chunking::Every(7)];
    for fx in all_hand_fixtures("bad_output undeclared names") {
        if !fx.family.has_tools() {
            continue;
        }
        for bad in UNDECLARED {
            // A lone call with an undeclared name: all of it is content.
            let markup = fx.family.render(&[call(bad, IDS[0], &[("city", s("Paris"))])]);
            let text = format!("{}{LEAD}{markup}", fx.rprefix);
            if let Some(o) = parse_all(&mut f, &fx, text.as_bytes(), &chunkings) {
                let want = format!("{}{LEAD}{markup}", fx.base);
                if !o.message.tool_calls.is_empty() || o.message.content != want {
                    // KNOWN VIOLATION (reported): a declared name that is a
                    // prefix of the written one ("get_weatherX",
                    // "get_weather_v2") is taken as that tool; the call ends
                    // incomplete and its markup is lost.
                    f.add(
                        R_BEFORE_NAME,
                        &fx.label,
                        text.as_bytes(),
                        "whole (one feed)",
                        format!("undeclared name {bad:?}: expected no call and content {want:?}\n    got {:?}", o.message),
                    );
                }
                check_words(&mut f, &fx, text.as_bytes(), "whole (one feed)", &o, false);
            }
            // After a valid call in the same section: the valid call stays,
            // the second one's markup is content (parallel calls only).
            if fx.label.contains("parallel_tool_calls=true") {
                let calls = [call("get_time", IDS[0], &[("city", s("Oslo"))]), call(bad, IDS[1], &[("city", s("Paris"))])];
                let text = format!("{}{LEAD}{}", fx.rprefix, fx.family.render(&calls));
                if let Some(o) = parse_all(&mut f, &fx, text.as_bytes(), &chunkings) {
                    let calls_ok =
                        o.message.tool_calls.len() == 1 && o.message.tool_calls[0].name == "get_time" && o.message.tool_calls[0].complete;
                    if !calls_ok {
                        // KNOWN VIOLATION (reported) in formats with several
                        // calls in one section (DeepSeek, Apriel, Cohere,
                        // Mistral arrays): a second call with an unknown name
                        // is reported with an empty name.
                        f.add(
                            R_BEFORE_NAME,
                            &fx.label,
                            text.as_bytes(),
                            "whole (one feed)",
                            format!("second call named {bad:?}: expected only the get_time call, complete\n    got {:?}", o.message),
                        );
                    }
                    check_words(&mut f, &fx, text.as_bytes(), "whole (one feed)", &o, false);
                }
            }
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------
// 3. Broken arguments: the call ends there, incomplete; the rest is content.

/// Broken JSON arguments (all break before the object closes).
const BROKEN_JSON: &[(&str, &str)] = &[
    ("get_weather", "{\"city\": Paris}"),
    ("get_weather", "{\"city\" \"Paris\"}"),
    ("get_weather", "{\"city\": \"Paris\",}"),
    ("get_weather", "{\"city\": \"Pa\\qris\"}"),
    ("get_weather", "{\"city\": \"Par\nis\"}"),
    ("get_weather", "{\"city\": \"Paris\"]"),
    ("get_weather", "{\"days\": 3"),
    ("get_weather", "{\"days\": [1, 2}, \"city\": \"x\"}"),
    ("get_weather", "{\"city\": \"Paris\" \"days\": 3}"),
    ("toggle", "{\"enabled\": trux}"),
    ("toggle", "{\"enabled\": nul}"),
    ("toggle", "{\"enabled\": fals"),
    ("toggle", "{enabled: true}"),
    ("toggle", "{'enabled': true}"),
];

#[test]
fn broken_json_arguments_end_the_call() {
    let mut f = Failures::new("broken_json_arguments_end_the_call");
    let chunkings = [Chunking::Every(1), Chunking::Every(2), Chunking::Every(5)];
    for fx in all_hand_fixtures("bad_output broken JSON") {
        if !fx.family.json_args() {
            continue;
        }
        for (name, args) in BROKEN_JSON {
            let markup = fx.family.render(&[raw_call(name, IDS[0], args)]);
            let text = format!("{}{LEAD}{markup}", fx.rprefix);
            let Some(o) = parse_all(&mut f, &fx, text.as_bytes(), &chunkings) else { continue };
            let m = &o.message;
            let at = markup.find(args).unwrap_or(0);
            let (before_args, after_args) = (&markup[..at], &markup[at + args.len()..]);
            let _ = before_args;
            // Arguments missing only their `}` where the call object's `}`
            // follows read as complete arguments in a call object that lost
            // its `}` before the call's closer: a call complete by the rule
            // for missing closers (tests/data/real_outputs/missing_closers.jsonl).
            if !args.ends_with('}') && after_args.trim_start().starts_with('}') {
                continue;
            }
            let lead = format!("{}{LEAD}", fx.base);
            // The same where the call's own end marker follows: the
            // arguments' `}` is written for them, and the call is complete
            // with exactly those arguments.
            // Otherwise the call is broken, as below.
            let closed = format!("{args}}}");
            let repaired = serde_json::from_str::<serde_json::Value>(&closed).is_ok()
                && m.tool_calls.len() == 1
                && m.tool_calls[0].complete
                && m.tool_calls[0].name == *name
                && m.tool_calls[0].arguments == closed;
            if repaired {
                continue;
            }
            let Some(c) = m.tool_calls.first().filter(|_| m.tool_calls.len() == 1) else {
                f.add(R_BROKEN, &fx.label, text.as_bytes(), "whole (one feed)", format!("expected one call {name:?}, got {m:?}"));
                continue;
            };
            if c.name != *name || c.complete {
                f.add(
                    R_BROKEN,
                    &fx.label,
                    text.as_bytes(),
                    "whole (one feed)",
                    format!("expected call {name:?} with complete=false, got {c:?}"),
                );
            }
            // Arguments so far + content after the lead = arguments text +
            // the markup after it: nothing lost, the split is where the
            // arguments broke.
            let rest = m.content.strip_prefix(lead.as_str());
            let conserved = rest.is_some_and(|r| format!("{}{r}", c.arguments) == format!("{args}{after_args}"));
            if !format!("{args}{after_args}").starts_with(c.arguments.as_str()) || !conserved {
                // KNOWN VIOLATION (reported) for `tru`/`nul`/`fals` (a
                // partial literal word is dropped) and `\q` (a backslash
                // before a bad escape is dropped).
                f.add(
                    R_BROKEN,
                    &fx.label,
                    text.as_bytes(),
                    "whole (one feed)",
                    format!(
                        "expected arguments = a prefix of {:?} (arguments, then the markup after them) and content = {lead:?} + the rest of that\n    got arguments {:?}, content {:?}",
                        format!("{args}{after_args}"),
                        c.arguments, m.content
                    ),
                );
            }
            check_words(&mut f, &fx, text.as_bytes(), "whole (one feed)", &o, false);
        }
    }
    f.finish();
}

/// Broken values in tagged formats: `(call, the value, offset in the value
/// of the first byte the call cannot accept, or None = the next '<')`.
fn broken_tagged() -> Vec<(Call, (&'static str, Option<usize>))> {
    vec![
        (call("get_weather", IDS[0], &[("days", j("[1, 2"))]), ("[1, 2", None)),
        (call("get_weather", IDS[0], &[("days", j("{\"a\" 1}"))]), ("{\"a\" 1}", Some(5))),
    ]
}

/// Typed values that do not open like JSON (nor a Python literal): each is
/// the string the model wrote, and its call stays whole.
fn unparsable_typed() -> Vec<(Call, &'static str)> {
    vec![
        (call("get_weather", IDS[0], &[("city", s("Paris")), ("days", j("3x"))]), "3x"),
        (call("get_weather", IDS[0], &[("days", j("2026-01-15"))]), "2026-01-15"),
        (call("toggle", IDS[0], &[("enabled", j("yes"))]), "yes"),
        (call("toggle", IDS[0], &[("enabled", j("trux"))]), "trux"),
    ]
}

/// Each case's call, rendered after [`LEAD`] by every hand fixture of a
/// format with tagged (raw) arguments, parsed whole and in small chunks:
/// `check` gets the fixture, the case, the call's markup, the text and what
/// the parse gave.
fn for_tagged_calls<T>(f: &mut Failures, test: &str, cases: &[(Call, T)], mut check: impl FnMut(&mut Failures, &Fixture, &(Call, T), &str, &str, &Outcome)) {
    let chunkings = [Chunking::Every(1), Chunking::Every(2), Chunking::Every(5)];
    for fx in all_hand_fixtures(test) {
        if !fx.family.has_tools() || fx.family.json_args() {
            continue;
        }
        for case in cases {
            let markup = fx.family.render(std::slice::from_ref(&case.0));
            let text = format!("{}{LEAD}{markup}", fx.rprefix);
            let Some(o) = parse_all(f, &fx, text.as_bytes(), &chunkings) else { continue };
            check(f, &fx, case, &markup, &text, &o);
            check_words(f, &fx, text.as_bytes(), "whole (one feed)", &o, false);
        }
    }
}

#[test]
fn unparsable_typed_values_are_strings() {
    let mut f = Failures::new("unparsable_typed_values_are_strings");
    for_tagged_calls(&mut f, "bad_output unparsable typed values", &unparsable_typed(), |f, fx, (c, value), _, text, o| {
        let m = &o.message;
        let quoted = serde_json::to_string(value).unwrap_or_default();
        let whole = m.tool_calls.len() == 1 && m.tool_calls[0].name == c.name && m.tool_calls[0].complete;
        let args: Option<serde_json::Value> = m.tool_calls.first().and_then(|t| serde_json::from_str(&t.arguments).ok());
        let as_string = args.as_ref().and_then(|a| a.as_object()).is_some_and(|a| a.values().any(|v| v.as_str() == Some(*value)));
        let content = format!("{}{LEAD}", fx.base);
        if !whole || !as_string || m.content != content {
            f.add(R_TYPED, &fx.label, text.as_bytes(), "whole (one feed)", format!("expected one complete {:?} call with {quoted} and content {content:?}\n    got {m:?}", c.name));
        }
    });
    f.finish();
}

#[test]
fn broken_tagged_values_end_the_call() {
    let mut f = Failures::new("broken_tagged_values_end_the_call");
    for_tagged_calls(&mut f, "bad_output broken tagged values", &broken_tagged(), |f, fx, (c, (value, fail)), markup, text, o| {
        let m = &o.message;
        let at = markup.find(value).unwrap_or(0);
        let fail_at = match fail {
            Some(n) => at + n,
            None => at + markup[at..].find('<').unwrap_or(0),
        };
        let want_content = format!("{}{LEAD}{}", fx.base, &markup[fail_at..]);
        // The rest goes back to content from the end of the last piece the
        // call reported, which may be before the failing byte (markup such
        // as `<arg_value>` between a reported key and a broken value is
        // given back too): the content must end with the text from the
        // failure on, and what it adds must be markup of this call.
        let content_ok = m.content == want_content
            || (m.content.ends_with(&markup[fail_at..])
                && m.content.starts_with(&format!("{}{LEAD}", fx.base))
                && markup[..fail_at].ends_with(&m.content[format!("{}{LEAD}", fx.base).len()..m.content.len() - (markup.len() - fail_at)]));
        let one = m.tool_calls.len() == 1 && m.tool_calls[0].name == c.name && !m.tool_calls[0].complete;
        if !one || !content_ok {
            f.add(R_BROKEN, &fx.label, text.as_bytes(), "whole (one feed)", format!("expected one incomplete {:?} call and content {want_content:?}\n    got {m:?}", c.name));
        }
    });
    // A value whose closing tag is missing: generic checks only (the value
    // runs to the end of the output).
    let chunkings = [Chunking::Every(1), Chunking::Every(2), Chunking::Every(5)];
    for fx in all_hand_fixtures("bad_output broken tagged values") {
        if !fx.family.has_tools() || fx.family.json_args() {
            continue;
        }
        let c = call("get_weather", IDS[0], &[("city", s("Paris"))]);
        let markup = fx.family.render(std::slice::from_ref(&c));
        for closer in fx.family.closers() {
            if let Some(p) = markup.find(closer) {
                let text = format!("{}{LEAD}{}{}", fx.rprefix, &markup[..p], &markup[p + closer.len()..]);
                if let Some(o) = parse_all(&mut f, &fx, text.as_bytes(), &chunkings) {
                    check_words(&mut f, &fx, text.as_bytes(), "whole (one feed)", &o, false);
                }
            }
        }
    }
    f.finish();
}

/// Arguments that are not valid JSON are broken: the call must not be
/// reported complete (rule of the interp docs). Arguments that are JSON but
/// not an object break the runtime's `Event::ToolArgs` contract ("the
/// pieces of one call concatenate to a JSON object").
#[test]
fn complete_calls_have_valid_json_object_arguments() {
    let mut f = Failures::new("complete_calls_have_valid_json_object_arguments");
    let json_cases =
        ["{\"days\": 1-2}", "{\"days\": -}", "{\"days\": 1.2.3}", "{\"days\": 01}", "{\"days\": 1e}", "[1, 2]", "\"text\"", "42", "null"];
    let tagged_cases = ["1-2", "--", "1e", "+5"];
    for fx in all_hand_fixtures("bad_output JSON object arguments") {
        if !fx.family.has_tools() {
            continue;
        }
        let calls: Vec<Call> = if fx.family.json_args() {
            json_cases.iter().map(|a| raw_call("get_weather", IDS[0], a)).collect()
        } else {
            tagged_cases.iter().map(|v| call("get_weather", IDS[0], &[("days", j(v))])).collect()
        };
        for c in calls {
            let text = format!("{}{LEAD}{}", fx.rprefix, fx.family.render(&[c]));
            // check_events (inside parse_all) reports R_BROKEN / R_JSON.
            parse_all(&mut f, &fx, text.as_bytes(), &[Chunking::Every(1)]);
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------
// Parsing goes on after markup is given back.

#[test]
fn parsing_goes_on_after_markup_given_back() {
    let mut f = Failures::new("parsing_goes_on_after_markup_given_back");
    let chunkings = [Chunking::Every(1), Chunking::Every(4)];
    for fx in all_hand_fixtures("bad_output resume") {
        if !fx.family.has_tools() {
            continue;
        }
        let good = call("get_time", IDS[0], &[("city", s("Oslo"))]);
        let good_markup = fx.family.render(std::slice::from_ref(&good));
        let trigger = fx.family.trigger();
        let cases = [
            // Broken markup before the name, then a valid call.
            (format!("{LEAD}{}", fx.family.render(&[call("unknown_tool", IDS[1], &[("city", s("Paris"))])])), "unknown name"),
            (format!("{LEAD}{trigger}oops, no call here. "), "opener then prose"),
            // Doubled opener: the first one breaks at the second.
            (format!("{LEAD}{trigger}"), "doubled opener"),
            (format!("{LEAD}{}", &trigger[..trigger.len() - 1]), "opener missing its last byte"),
        ];
        for (before, what) in cases {
            let text = format!("{}{before}{good_markup}", fx.rprefix);
            let Some(o) = parse_all(&mut f, &fx, text.as_bytes(), &chunkings) else { continue };
            let m = &o.message;
            let want_content = format!("{}{before}", fx.base);
            let ok = m.tool_calls.len() == 1
                && m.tool_calls[0].name == "get_time"
                && m.tool_calls[0].complete
                && m.content.starts_with(&want_content);
            if !ok {
                // KNOWN VIOLATION (reported): after giving back a character
                // the parser never looks for markup again; everything after
                // the broken markup is content.
                f.add(
                    R_RESUME,
                    &fx.label,
                    text.as_bytes(),
                    "whole (one feed)",
                    format!("{what}: expected the get_time call to be parsed, content starting {want_content:?}\n    got {m:?}"),
                );
            }
            check_words(&mut f, &fx, text.as_bytes(), "whole (one feed)", &o, false);
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------
// 4. Markers in the wrong place, garbage, invalid UTF-8, huge inputs.

#[test]
fn markers_in_the_wrong_place() {
    let mut f = Failures::new("markers_in_the_wrong_place");
    let chunkings = [Chunking::Every(1), Chunking::Every(2), Chunking::Every(3), Chunking::Every(16)];
    let mut rng = Rng::new(0xBAD0_u64);
    for fx in all_hand_fixtures("bad_output wrong place") {
        let trigger = fx.family.trigger();
        // Inputs that contain no complete call: all of it must be content.
        let mut content_only: Vec<(String, &str)> = Vec::new();
        for closer in fx.family.closers() {
            content_only.push((format!("{LEAD}{closer} and more text"), "closing marker without opener"));
            content_only.push((format!("{closer}{closer}{LEAD}"), "closing markers first"));
        }
        content_only.push((format!("abc{trigger}def"), "opener mid-word"));
        content_only.push((format!("{LEAD}{trigger}"), "opener at the very end"));
        content_only.push((format!("{LEAD}{}", &trigger[..trigger.len() / 2]), "half an opener at the end"));
        content_only.push((format!("{LEAD}{trigger}{trigger}{trigger}"), "openers only"));
        content_only.push((format!("{LEAD}{trigger} {trigger}\n{trigger}}}]"), "openers and closers"));
        content_only.push((format!("{LEAD}<<<<tool_<tool_call<tool_call<<{{{{\"name\": "), "partial openers"));
        for (x, what) in &content_only {
            let text = format!("{}{x}", fx.rprefix);
            let Some(o) = parse_all(&mut f, &fx, text.as_bytes(), &chunkings) else { continue };
            // (The reasoning's end marker written again right after it is
            // markup: `marker_variants`' `twice` cases.)
            let x = fx.family.closers().iter().find(|c| fx.rprefix.ends_with(**c) && x.starts_with(**c)).map_or(x.as_str(), |c| &x[c.len()..]);
            let want = format!("{}{x}", fx.base);
            if o.message.content != want || !o.message.tool_calls.is_empty() {
                f.add(
                    R_BEFORE_NAME,
                    &fx.label,
                    text.as_bytes(),
                    "whole (one feed)",
                    format!("{what}: expected content {want:?} and no call\n    got {:?}", o.message),
                );
            }
        }
        // Markup inside markup, doubled and nested openers, garbage: no
        // panic, no text lost, same result in any chunking.
        let good = fx.family.render(&[call("get_time", IDS[0], &[("city", s("Oslo"))])]);
        let mut others: Vec<(Vec<u8>, &str)> = vec![
            (format!("{LEAD}{trigger}{good}").into_bytes(), "doubled opener"),
            (format!("{LEAD}{trigger}{trigger}{good}{good}").into_bytes(), "doubled openers, two calls"),
            (format!("{LEAD}{}", good.replacen("Oslo", &good, 1)).into_bytes(), "a call nested in an argument"),
            (format!("{LEAD}{}", good.replacen("get_time", &format!("{trigger}get_time"), 1)).into_bytes(), "opener inside the call"),
            (format!("{LEAD}{good}{good}{good}").into_bytes(), "three calls"),
        ];
        if fx.family.has_tools() {
            for closer in fx.family.closers() {
                if let Some(p) = good.find(closer) {
                    let mut t = format!("{LEAD}{good}").into_bytes();
                    let at = LEAD.len() + p;
                    t.splice(at..at, closer.bytes());
                    others.push((t, "closing marker doubled"));
                    others.push((format!("{LEAD}{}{}", &good[..p], &good[p + closer.len()..]).into_bytes(), "closing marker missing"));
                }
            }
        }
        let markers: Vec<&str> = fx.literals.iter().map(String::as_str).filter(|l| !l.is_empty()).collect();
        for _ in 0..8 {
            others.push((garbage(&mut rng, 2048, &markers), "garbage"));
        }
        for (x, what) in &others {
            let mut text = fx.rprefix.clone().into_bytes();
            text.extend_from_slice(x);
            let Some(o) = parse_all(&mut f, &fx, &text, &chunkings) else { continue };
            check_words(&mut f, &fx, &text, &format!("whole (one feed); case: {what}"), &o, false);
            // Without tools, garbage is all content (as U+FFFD where needed).
            if !fx.family.has_tools() && *what == "garbage" && fx.template == "plain" {
                let want = format!("{}{}", fx.base, without_turn_ends(&String::from_utf8_lossy(x), &fx.turn_ends));
                if o.message.content != want {
                    f.add(
                        R_UTF8,
                        &fx.label,
                        &text,
                        "whole (one feed)",
                        format!("garbage: content {:?} != lossy input", short(&o.message.content)),
                    );
                }
            }
        }
    }
    f.finish();
}

#[test]
fn invalid_utf8_becomes_replacement_character() {
    let mut f = Failures::new("invalid_utf8_becomes_replacement_character");
    let texts: &[&[u8]] = &[
        b"caf\xC3\xA9 na\xC3\xAFve \xE2\x82\xAC5 \xF0\x9F\x98\x80 ok",
        b"bad \xFF\xFE lone \x80 cont \xC3( trunc \xE2\x82X over \xC0\xAF sur \xED\xA0\x80 end",
        b"tail cut \xF0\x9F\x98",
        b"<tool\xFF_call> <\xC3tool_call> [TOOL\xE2\x82_CALLS] <\xEF\xBD\x9Ctool\xE2\x96 \xE2\x96\x81",
    ];
    for fx in all_hand_fixtures("bad_output UTF-8") {
        for x in texts {
            let mut text = fx.rprefix.clone().into_bytes();
            text.extend_from_slice(x);
            let want = format!("{}{}", fx.base, String::from_utf8_lossy(x));
            // Every split into two chunks, and 1-byte chunks.
            let mut chunkings: Vec<Chunking> = (1..text.len()).map(|k| Chunking::Sizes(vec![k])).collect();
            chunkings.push(Chunking::Every(1));
            let Some(o) = parse_all(&mut f, &fx, &text, &chunkings) else { continue };
            if o.message.content != want || !o.message.tool_calls.is_empty() {
                f.add(R_UTF8, &fx.label, &text, "whole (one feed)", format!("expected content {want:?}\n    got {:?}", o.message));
            }
        }
        // Invalid UTF-8 inside a string argument of a valid call.
        if fx.family.has_tools() {
            let markup = fx.family.render(&[call("get_time", IDS[0], &[("city", s("PLACEHOLDER"))])]);
            let value: &[u8] = b"Z\xC3\xBCrich \xFF\x80 \xE2\x82!";
            let mut text = format!("{}{LEAD}", fx.rprefix).into_bytes();
            let at = markup.find("PLACEHOLDER").unwrap_or(0);
            text.extend_from_slice(&markup.as_bytes()[..at]);
            text.extend_from_slice(value);
            text.extend_from_slice(&markup.as_bytes()[at + "PLACEHOLDER".len()..]);
            let mut chunkings: Vec<Chunking> = (1..text.len()).map(|k| Chunking::Sizes(vec![k])).collect();
            chunkings.push(Chunking::Every(1));
            let Some(o) = parse_all(&mut f, &fx, &text, &chunkings) else { continue };
            let want = json!({"city": String::from_utf8_lossy(value)});
            let ok = o.message.tool_calls.len() == 1
                && o.message.tool_calls[0].complete
                && args_match(&o.message.tool_calls[0].arguments, &want);
            if !ok {
                f.add(
                    R_UTF8,
                    &fx.label,
                    &text,
                    "whole (one feed)",
                    format!("expected one complete call with arguments {want}\n    got {:?}", o.message),
                );
            }
        }
    }
    f.finish();
}

/// Huge hostile inputs: no panic, nothing lost, and they finish quickly.
///
/// SMOKE CHECK: the wall-clock bounds are loose (1 s for one parse, 5 s for
/// the whole test, release mode) and only catch gross blow-ups such as time
/// quadratic in the input length.
#[test]
fn very_long_inputs_finish_quickly() {
    const MB: usize = 1 << 20;
    let started = Instant::now();
    let mut f = Failures::new("very_long_inputs_finish_quickly");
    let mut timings: Vec<(Duration, String)> = Vec::new();
    // One fixture per template (without parallel calls), to bound the time.
    let mut fixtures = all_hand_fixtures("bad_output long inputs");
    fixtures.retain(|fx| !fx.label.contains("parallel_tool_calls=true") && !fx.label.contains("reasoning_format=None"));
    fixtures.dedup_by(|a, b| a.template == b.template);
    let repeat_to = |unit: &str, len: usize| unit.repeat(len.div_ceil(unit.len().max(1)));
    let non_ws = |t: &str| t.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    for fx in &fixtures {
        let trigger = fx.family.trigger();
        // 1-byte feeding of 1 MB costs ~0.5 s: only for one template.
        let tiny = if fx.template == "json_tool_call" { Chunking::Every(1) } else { Chunking::Every(16) };
        let mut inputs: Vec<(String, Vec<u8>, Vec<Chunking>)> = vec![
            ("1 MB of '<'".into(), vec![b'<'; MB], vec![tiny.clone(), Chunking::Every(4096)]),
            ("1 MB of \"<tool_c\"".into(), repeat_to("<tool_c", MB).into_bytes(), vec![tiny.clone(), Chunking::Every(4096)]),
            (
                "1 MB of the opener minus its last byte".into(),
                repeat_to(&trigger[..trigger.len() - 1], MB).into_bytes(),
                vec![Chunking::Every(64), Chunking::Every(4096)],
            ),
            ("1 MB of the opener".into(), repeat_to(trigger, MB).into_bytes(), vec![Chunking::Every(64), Chunking::Every(4096)]),
            (
                "1 MB of '<' then a call".into(),
                {
                    let mut v = vec![b'<'; MB];
                    v.extend_from_slice(fx.family.render(&[call("get_time", IDS[0], &[("city", s("Oslo"))])]).as_bytes());
                    v
                },
                vec![Chunking::Every(4096)],
            ),
            ("1 MB of whitespace at the start".into(), repeat_to("\n ", MB).into_bytes(), vec![Chunking::Every(64)]),
        ];
        if fx.family.has_tools() {
            let good = fx.family.render(&[call("get_weather", IDS[0], &[("city", s("Paris")), ("days", j("3"))])]);
            let at = good.rfind('3').unwrap_or(0);
            let mut deep = good.as_bytes()[..at].to_vec();
            deep.extend(std::iter::repeat_n(b'[', MB));
            inputs.push(("a call whose argument is 1 MB of '['".into(), deep, vec![Chunking::Every(4096)]));
            let mut long_value = good.as_bytes()[..at].to_vec();
            long_value.extend(std::iter::repeat_n(b'7', MB));
            inputs.push(("a call whose argument is a 1 MB number".into(), long_value, vec![Chunking::Every(4096)]));
            // Whitespace after the name and after each '>' or '}' of a valid
            // call (where markup allows whitespace), in 64-byte chunks.
            let after_name = good.find("get_weather").map(|p| p + "get_weather".len() - 1);
            for (i, b) in good.bytes().enumerate() {
                if b == b'>' || b == b'}' || Some(i) == after_name {
                    let mut t = good.as_bytes()[..=i].to_vec();
                    t.extend(b"\n ".repeat(MB / 4));
                    t.extend_from_slice(&good.as_bytes()[i + 1..]);
                    inputs.push((format!("512 KB of whitespace after byte {i} of {good:?}"), t, vec![Chunking::Every(64)]));
                }
            }
        }
        // Whitespace before the reasoning prefix too (an optional reasoning
        // block's opener is guarded by whitespace).
        let mut before = repeat_to("\n ", MB / 2).into_bytes();
        before.extend_from_slice(fx.rprefix.as_bytes());
        before.extend_from_slice(LEAD.as_bytes());
        inputs.push(("512 KB of whitespace before the reasoning prefix".into(), before, vec![Chunking::Every(64)]));
        for (what, x, chunkings) in inputs {
            let mut text = if what.contains("before the reasoning prefix") { Vec::new() } else { fx.rprefix.clone().into_bytes() };
            text.extend_from_slice(&x);
            for c in std::iter::once(Chunking::Whole).chain(chunkings) {
                let t0 = Instant::now();
                let r = run(&fx.grammar, &text, &c, true);
                let dt = t0.elapsed();
                timings.push((dt, format!("{} | {what} | {}", fx.template, c.describe())));
                match r {
                    Err(p) => f.add(R_PANIC, &fx.label, &text, &c.describe(), format!("{what}: panicked: {p}")),
                    Ok(o) => {
                        // Nothing lost: apart from whitespace, the output is
                        // as long as the input minus the markup of a call.
                        let m = &o.message;
                        let out = non_ws(&m.content)
                            + non_ws(&m.reasoning_content)
                            + m.tool_calls.iter().map(|c| non_ws(&c.arguments) + c.name.len() + c.id.len()).sum::<usize>();
                        let inp = non_ws(&String::from_utf8_lossy(&x));
                        if out + 300 < inp {
                            f.add(R_LOSS, &fx.label, &text, &c.describe(), format!("{what}: {inp} non-space bytes in, {out} out"));
                        }
                        check_events(&mut f, fx, &text, &c.describe(), &o.raw, true);
                    }
                }
                // SMOKE CHECK (loose): one parse of ~1 MB well under a second.
                // KNOWN VIOLATION (reported): whitespace where a repeat's guard
                // starts with `space` is rescanned on every chunk (quadratic).
                // Not a speed target (benches/ measure speed): a bound loose
                // enough for a loaded CI machine that still catches quadratic
                // blow-ups, which take minutes on a megabyte.
                if dt > Duration::from_secs(10) {
                    f.add(R_TIME, &fx.label, &text, &c.describe(), format!("{what}: took {dt:?} (smoke bound: 10 s for one parse)"));
                }
            }
        }
    }
    let mut by_kind: BTreeMap<String, Duration> = BTreeMap::new();
    for (dt, what) in &timings {
        let kind = what.split(" | ").skip(1).map(|k| k.split(" after byte").next().unwrap_or(k)).collect::<Vec<_>>().join(" | ");
        *by_kind.entry(kind).or_default() += *dt;
    }
    println!("time by input kind: {by_kind:#?}");
    timings.sort_by_key(|t| std::cmp::Reverse(t.0));
    println!("slowest parses:");
    for (dt, what) in timings.iter().take(12) {
        println!("  {dt:>14?}  {}", short(what));
    }
    let total = started.elapsed();
    println!("very_long_inputs_finish_quickly: {} parses in {total:?}", timings.len());
    // SMOKE CHECK (loose): the whole test in well under a few seconds.
    if total > Duration::from_secs(120) {
        f.add(R_TIME, "(all fixtures)", b"", "(see the slowest parses above)", format!("the test took {total:?}; smoke bound 120 s"));
    }
    f.finish();
}

// ---------------------------------------------------------------------------
// 5. Fuzz: mutated valid outputs, random chunkings.

fn mutate(rng: &mut Rng, text: &mut Vec<u8>, markers: &[&str]) -> String {
    let len = text.len();
    let at = rng.below(len + 1);
    match rng.below(9) {
        0 => {
            text.insert(at, *rng.pick(PALETTE));
            format!("insert byte at {at}")
        }
        1 if len > 0 => {
            let n = (1 + rng.below(4)).min(len - at.min(len - 1));
            let at = at.min(len - 1);
            text.drain(at..(at + n).min(len));
            format!("delete {n} at {at}")
        }
        2 if len > 0 => {
            let at = at.min(len - 1);
            text[at] = *rng.pick(PALETTE);
            format!("replace byte at {at}")
        }
        3 | 4 if !markers.is_empty() => {
            let m = rng.pick(markers);
            let m = if rng.chance(30) {
                let mut cut = 1 + rng.below(m.len());
                while !m.is_char_boundary(cut) {
                    cut -= 1;
                }
                &m[..cut]
            } else {
                m
            };
            text.splice(at..at, m.bytes());
            format!("splice {m:?} at {at}")
        }
        5 if len > 0 => {
            let a = rng.below(len);
            let b = (a + 1 + rng.below(24)).min(len);
            let piece = text[a..b].to_vec();
            text.splice(at..at, piece);
            format!("duplicate {a}..{b} at {at}")
        }
        6 => {
            text.truncate(at);
            format!("truncate at {at}")
        }
        7 => {
            let seq: &[&[u8]] = &[b"\xFF", b"\xC3", b"\xE2\x82", b"\xF0\x9F\x98", b"\x80\x80", b"\xED\xA0\x80"];
            let s = rng.pick(seq);
            text.splice(at..at, s.iter().copied());
            format!("insert invalid UTF-8 at {at}")
        }
        _ => {
            // Remove one occurrence of a marker.
            let m = rng.pick(markers);
            if let Some(p) = text.windows(m.len().max(1)).position(|w| w == m.as_bytes()) {
                text.drain(p..p + m.len());
                format!("remove {m:?} at {p}")
            } else {
                "no-op".into()
            }
        }
    }
}

#[test]
fn fuzz_mutated_outputs() {
    let iterations: usize = std::env::var("BAD_OUTPUT_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let seed: u64 = std::env::var("BAD_OUTPUT_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5EED_2024);
    let started = Instant::now();
    let mut f = Failures::new("fuzz_mutated_outputs");
    let mut fixtures = all_hand_fixtures("bad_output fuzz");
    fixtures.extend(vector_fixtures("bad_output fuzz (vectors)"));
    fixtures.extend(real_output_fixtures("bad_output fuzz (real outputs)"));
    let mut cases = 0;
    for (fi, fx) in fixtures.iter().enumerate() {
        let mut markers: Vec<&str> = fx.literals.iter().map(String::as_str).filter(|l| !l.is_empty()).collect();
        markers.extend(["</think>", "<tool_call>", "\"", "{", "}", "\n"]);
        for (si, sample) in fx.samples.iter().enumerate() {
            for it in 0..iterations {
                let case_seed = seed ^ ((fi as u64) << 40) ^ ((si as u64) << 24) ^ it as u64;
                let mut rng = Rng::new(case_seed);
                let mut text = sample.text.clone();
                let mut log = Vec::new();
                for _ in 0..1 + rng.below(4) {
                    log.push(mutate(&mut rng, &mut text, &markers));
                }
                cases += 1;
                let chunkings = [Chunking::Every(1), rng.chunking(text.len()), rng.chunking(text.len())];
                let origin = format!("fuzz seed {case_seed:#x} from {}: {}", sample.origin, log.join(", "));
                let mut local = Failures::new("fuzz case");
                let Some(whole) = parse_all(&mut local, fx, &text, &chunkings) else {
                    f.absorb(local, &format!("mutation: {origin}"));
                    continue;
                };
                check_words(&mut local, fx, &text, "whole (one feed)", &whole, true);
                // Append-only at a random cut.
                let k = rng.below(text.len() + 1);
                match run(&fx.grammar, &text[..k], &Chunking::Whole, false) {
                    Err(p) => local.add(R_PANIC, &fx.label, &text[..k], "whole, no finish()", format!("panicked: {p}")),
                    Ok(partial) => {
                        if !is_prefix(&partial.events, &whole.events) {
                            local.add(
                                R_APPEND,
                                &fx.label,
                                &text,
                                &format!("first {k} bytes without finish() vs the whole input"),
                                format!(
                                    "prefix events {}\n    whole events  {}",
                                    short(&format!("{:?}", partial.events)),
                                    short(&format!("{:?}", whole.events))
                                ),
                            );
                        }
                    }
                }
                f.absorb(local, &format!("mutation: {origin}"));
            }
        }
    }
    println!("fuzz_mutated_outputs: {cases} cases over {} fixtures in {:?} (seed {seed:#x})", fixtures.len(), started.elapsed());
    f.finish();
}
