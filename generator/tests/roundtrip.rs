//! Round trip over the corpus: random assistant messages are rendered through
//! each template that supports tools, the assistant's part is cut out of the
//! render (what the model would write after the generation prompt), parsed
//! back, and compared with the original message.
//!
//! The model writes what its template taught it, so a parser that cannot read
//! back its own template's renders is wrong. Failures are either fixed or
//! listed with their cause in `docs/roundtrip-failures.md` (the test reads the
//! template names from that file's table).

mod common;

use chat_parser_generator::{
    analyze,
    interp::StreamParser,
    ir::build::{build, ParseOptions, ReasoningFormat},
    jinja::ChatTemplate,
    spec::{CallIdPosition, Family, FormatSpec, Prefill},
};
use chat_parser_runtime::{Message, MessageBuilder};
use serde_json::{json, Value};

/// Messages per template.
const CASES: usize = 24;

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

const WORDS: &[&str] = &["alpha", "beta", "x", "42", "Paris", "naïve", "日本", "emoji 🙂", "a-b", "tab\there"];
const TRICKY: &[&str] = &["\"quoted\"", "back\\slash", "line1\nline2", "a < b", "<b>bold</b>", "it's", "{\"k\": 1}", "  padded  "];

fn text(rng: &mut Rng, tricky: bool) -> String {
    let n = 1 + rng.below(4);
    let mut parts = Vec::new();
    for _ in 0..n {
        if tricky && rng.chance(35) {
            parts.push(TRICKY[rng.below(TRICKY.len())].to_string());
        } else {
            parts.push(WORDS[rng.below(WORDS.len())].to_string());
        }
    }
    parts.join(" ")
}

/// A random argument value and its JSON-schema type.
fn value(rng: &mut Rng, depth: usize) -> (Value, Value) {
    match rng.below(if depth > 1 { 5 } else { 7 }) {
        0 | 1 => (json!(text(rng, true).trim().to_string()), json!({"type": "string"})),
        2 => (json!(rng.below(2000) as i64 - 1000), json!({"type": "integer"})),
        3 => (json!(rng.chance(50)), json!({"type": "boolean"})),
        4 => (json!((rng.below(10000) as f64) / 100.0 + 0.25), json!({"type": "number"})),
        5 => {
            let (a, _) = value(rng, depth + 1);
            let (b, _) = value(rng, depth + 1);
            (json!({"inner": a, "other": b, "none": null}), json!({"type": "object"}))
        }
        _ => {
            let (a, _) = value(rng, depth + 1);
            (json!([a, 1, "two"]), json!({"type": "array"}))
        }
    }
}

struct Generated {
    message: Value,
    tools: Vec<Value>,
    expected: Message,
}

fn generate(rng: &mut Rng, spec: &FormatSpec, case: usize) -> Generated {
    let caps = &spec.capabilities;
    let calls = 1 + if caps.supports_parallel_tool_calls { rng.below(3) } else { 0 };
    let mut tools = Vec::new();
    let mut tool_calls = Vec::new();
    let mut expected_calls = Vec::new();
    for i in 0..calls {
        let name = format!("tool_{}_{}", ["get", "run", "find"][rng.below(3)], i);
        let mut props = serde_json::Map::new();
        let mut args = serde_json::Map::new();
        for a in 0..(1 + rng.below(3)) {
            let (v, mut schema) = value(rng, 0);
            let key = format!("arg_{a}");
            schema["description"] = json!(format!("argument {a}"));
            props.insert(key.clone(), schema);
            args.insert(key, v);
        }
        tools.push(json!({"type": "function", "function": {"name": name, "description": "test tool", "parameters": {"type": "object", "properties": props, "required": []}}}));
        let id = format!("call{:05}", case * 10 + i);
        tool_calls.push(json!({"id": id, "type": "function", "function": {"name": name, "arguments": Value::Object(args.clone())}}));
        expected_calls.push(chat_parser_runtime::ToolCall { name, id, arguments: Value::Object(args).to_string(), complete: true });
    }
    let content = if rng.chance(50) { text(rng, true) } else { String::new() };
    let reasoning = if caps.supports_preserve_reasoning && spec.reasoning.mode != chat_parser_generator::spec::ReasoningMode::None && rng.chance(50) {
        text(rng, false)
    } else {
        String::new()
    };
    let mut message = json!({"role": "assistant", "content": content, "tool_calls": tool_calls});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    Generated { message, tools, expected: Message { content, reasoning_content: reasoning, tool_calls: expected_calls } }
}

fn render(t: &ChatTemplate, messages: Value, tools: &[Value], add_generation_prompt: bool) -> Result<String, String> {
    // The variables serving stacks pass (as the analysis does): firefunction
    // reads the tools as JSON text from `functions`, others print the date.
    let ctx = json!({
        "messages": messages,
        "tools": tools,
        "functions": Value::Array(tools.to_vec()).to_string(),
        "datetime": "Jan 01 2026",
        "date_string": "01 Jan 2026",
        "add_generation_prompt": add_generation_prompt,
        "enable_thinking": true,
        "bos_token": "",
        "eos_token": "",
    });
    t.render(&ctx).map_err(|e| e.to_string())
}

/// The model's part of a render: what follows the generation prompt, up to
/// the end-of-turn markup.
///
/// Templates that open a reasoning block in the generation prompt often
/// render past turns without it (they drop reasoning from history); the model
/// itself writes its reasoning and closes the block before the calls, so that
/// is what the text gets.
fn assistant_text(t: &ChatTemplate, spec: &FormatSpec, g: &Generated) -> Result<String, String> {
    let user = json!({"role": "user", "content": "Please help."});
    let full = render(t, json!([user, g.message]), &g.tools, false)?;
    let prompt = render(t, json!([user]), &g.tools, true)?;
    let start = spec.reasoning.start.trim();
    let end = spec.reasoning.end.trim();
    let open_reasoning = spec.generation_prompt.thinking_prefill == Prefill::OpenReasoning && !start.is_empty();
    let mut turn = if full.starts_with(&prompt) {
        full[prompt.len()..].to_string()
    } else if open_reasoning {
        // The prompt without the opened block must still be a prefix.
        let base = prompt.rfind(start).map(|p| &prompt[..p]).unwrap_or(&prompt);
        let Some(history) = full.strip_prefix(base) else {
            return Err(format!("the history turn does not start with the generation prompt {:?}", &prompt[base.len().min(prompt.len())..]));
        };
        let history = history.strip_prefix(start).unwrap_or(history);
        if history.contains(end) {
            history.to_string()
        } else {
            format!("{}{end}\n{history}", g.expected.reasoning_content)
        }
    } else {
        let common = chat_parser_generator::diff::common_prefix_len(&full, &prompt);
        let near: String = full[common..].chars().take(40).collect();
        return Err(format!("the history turn does not start with the generation prompt (they part at {near:?} / {:?})", &prompt[common..]));
    };
    // The end-of-turn markup: what follows a plain content turn's text. The
    // model stops at it (some templates render content after it, in a turn
    // of its own).
    let probe = render(t, json!([user, {"role": "assistant", "content": "END_PROBE_7"}]), &g.tools, false)?;
    if let Some(pos) = probe.rfind("END_PROBE_7") {
        // The markers after a content turn's text end the turn: the model
        // stops at the first of them it writes.
        let after = &probe[pos + "END_PROBE_7".len()..];
        let mut markers: Vec<String> = chat_parser_generator::diff::segments(after)
            .into_iter()
            .filter(|s| s.kind == chat_parser_generator::diff::SegmentKind::Marker)
            .map(|s| s.text.to_string())
            .collect();
        if markers.is_empty() && !after.trim().is_empty() {
            // Not bracketed (MiniMax ends turns with `[e~[`).
            markers.push(after.trim().to_string());
        }
        let cut = markers.iter().filter_map(|m| turn.find(m.as_str())).min();
        if let Some(cut) = cut {
            turn.truncate(cut);
        }
    }
    // A special token closing the turn that is not part of the call format
    // (Llama 3's `<|eom_id|>` after calls) is an end-of-message token: the
    // server stops there.
    let t = &spec.tools;
    let format_markers = [&t.format.per_call_end, &t.format.section_end, &t.function.close, &t.arguments.end, &t.arguments.value_suffix];
    let trimmed = turn.trim_end();
    if let Some(last) = chat_parser_generator::diff::segments(trimmed).last() {
        if last.kind == chat_parser_generator::diff::SegmentKind::Marker
            && last.text.starts_with("<|")
            && !format_markers.iter().any(|m| m.trim().ends_with(last.text))
        {
            let keep = trimmed.len() - last.text.len();
            turn.truncate(keep);
        }
    }
    Ok(turn)
}

/// Whether the template writes an assistant turn's content next to its tool
/// calls, in the part the model writes (many drop it or move it elsewhere).
fn renders_content(t: &ChatTemplate, spec: &FormatSpec, g: &Generated, text: &str) -> Result<bool, String> {
    if g.expected.content.is_empty() {
        return Ok(true);
    }
    let mut without = Generated { message: g.message.clone(), tools: g.tools.clone(), expected: g.expected.clone() };
    without.message["content"] = json!("");
    Ok(assistant_text(t, spec, &without)? != text)
}

/// Text the generation prompt writes after opening the reasoning block.
fn prefilled_reasoning(spec: &FormatSpec) -> Option<String> {
    let start = spec.reasoning.start.trim();
    if spec.generation_prompt.thinking_prefill != Prefill::OpenReasoning || start.is_empty() {
        return None;
    }
    let prompt = &spec.generation_prompt.thinking;
    let extra = prompt[prompt.rfind(start)? + start.len()..].trim();
    (!extra.is_empty()).then(|| extra.to_string())
}

fn parse(spec: &FormatSpec, tools: &[Value], text: &str) -> Message {
    parse_chunked(spec, tools, text, usize::MAX)
}

fn parse_chunked(spec: &FormatSpec, tools: &[Value], text: &str, chunk: usize) -> Message {
    let options = ParseOptions {
        enable_thinking: true,
        reasoning_format: ReasoningFormat::Auto,
        parallel_tool_calls: true,
        tools: tools.to_vec(),
        ..ParseOptions::default()
    };
    let grammar = build(spec, &options);
    let mut builder = MessageBuilder::new();
    let mut parser = StreamParser::new(&grammar).with_tools(chat_parser_generator::ir::build::tool_signatures(&options));
    for piece in text.as_bytes().chunks(chunk) {
        parser.feed(piece, &mut builder);
    }
    parser.finish(&mut builder);
    builder.into_message()
}

fn check(spec: &FormatSpec, got: &Message, want: &Message) -> Result<(), String> {
    if got.content.trim() != want.content.trim() {
        return Err(format!("content {:?} != {:?}", got.content, want.content));
    }
    if got.reasoning_content.trim() != want.reasoning_content.trim() {
        return Err(format!("reasoning {:?} != {:?}", got.reasoning_content, want.reasoning_content));
    }
    if got.tool_calls.len() != want.tool_calls.len() {
        return Err(format!("{} calls != {}", got.tool_calls.len(), want.tool_calls.len()));
    }
    let ids_rendered = !spec.tools.format.id_field.is_empty() || spec.tools.call_id.pos != CallIdPosition::None;
    for (g, w) in got.tool_calls.iter().zip(&want.tool_calls) {
        if g.name != w.name {
            return Err(format!("name {:?} != {:?}", g.name, w.name));
        }
        if ids_rendered && g.id != w.id {
            return Err(format!("id {:?} != {:?}", g.id, w.id));
        }
        let (ga, wa) = (serde_json::from_str::<Value>(&g.arguments), serde_json::from_str::<Value>(&w.arguments));
        if ga.as_ref().ok() != wa.as_ref().ok() {
            return Err(format!("arguments {} != {}", g.arguments, w.arguments));
        }
    }
    Ok(())
}

/// Templates listed in the failures document (first table column).
fn documented() -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/roundtrip-failures.md")).unwrap_or_default();
    doc.lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('|').nth(1).map(|c| c.trim().trim_matches('`').to_string()))
        .collect()
}

#[test]
fn rendered_messages_parse_back() {
    let Some(shared) = common::shared_dir("roundtrip") else { return };
    let documented = documented();
    let mut undocumented = Vec::new();
    let (mut total_pass, mut total) = (0, 0);
    let mut templates = 0;
    let only = std::env::var("ROUNDTRIP_ONLY").ok();
    for (name, path) in common::corpus_templates(&shared) {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("template");
        let Ok(template) = ChatTemplate::new(&name, &source) else { continue };
        let Ok(analysis) = analyze(&template) else { continue };
        let spec = analysis.spec;
        if !spec.capabilities.supports_tool_calls {
            continue;
        }
        templates += 1;
        let mut rng = Rng(0x9E3779B97F4A7C15 ^ (name.len() as u64) << 7);
        let mut pass = 0;
        let mut first_failure = None;
        for case in 0..CASES {
            let g = generate(&mut rng, &spec, case);
            let chunk = 1 + rng.below(16);
            let outcome = assistant_text(&template, &spec, &g).and_then(|text| {
                let got = parse(&spec, &g.tools, &text);
                // Streaming in random chunks must give the same message.
                let streamed = parse_chunked(&spec, &g.tools, &text, chunk);
                if streamed != got {
                    return Err(format!("{chunk}-byte chunks give {streamed:?}, whole input {got:?}\n      text: {text:?}"));
                }
                // Templates that do not render content (or reasoning) next to
                // tool calls never teach the model to write it.
                let mut want = g.expected.clone();
                if !renders_content(&template, &spec, &g, &text)? {
                    want.content.clear();
                }
                // Templates that drop calls next to content never teach it.
                if want.tool_calls.iter().any(|c| !text.contains(c.name.as_str())) {
                    want.tool_calls.clear();
                }
                if !text.contains(want.reasoning_content.trim()) {
                    want.reasoning_content.clear();
                }
                // Boilerplate the generation prompt writes inside the
                // reasoning block (Apriel) is part of the reasoning.
                if let Some(extra) = prefilled_reasoning(&spec) {
                    want.reasoning_content = format!("{extra}\n{}", want.reasoning_content).trim().to_string();
                }
                check(&spec, &got, &want).map_err(|e| format!("{e}\n      text: {text:?}"))
            });
            match outcome {
                Ok(()) => pass += 1,
                Err(e) => {
                    if first_failure.is_none() {
                        first_failure = Some(e);
                    }
                }
            }
        }
        total += CASES;
        total_pass += pass;
        let family = match &spec.family {
            Family::Generic => String::new(),
            Family::Dedicated(f) => format!(" [dedicated: {f}]"),
        };
        println!("roundtrip: {name}{family}: {pass}/{CASES}");
        if let Some(e) = first_failure {
            println!("    first failure: {e}");
            if !documented.contains(&name) {
                undocumented.push(name.clone());
            }
        }
    }
    println!("roundtrip: {total_pass}/{total} messages over {templates} templates with tool calls");
    assert!(undocumented.is_empty(), "round-trip failures not listed in docs/roundtrip-failures.md: {undocumented:?}");
}
