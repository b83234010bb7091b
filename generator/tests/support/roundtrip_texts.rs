//! Random assistant messages with tool calls, rendered through a template,
//! and the part the model writes cut out of the render: the round-trip
//! texts (used by the round-trip test and the generated-parser equivalence
//! test).
#![allow(dead_code)]

use chat_parser_generator::{
    jinja::ChatTemplate,
    spec::{FormatSpec, Prefill},
};
use chat_parser_runtime::Message;
use serde_json::{json, Value};

/// Messages per template.
pub const CASES: usize = 24;

/// A small deterministic generator (xorshift64*), so failures reproduce.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
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

pub struct Generated {
    pub message: Value,
    pub tools: Vec<Value>,
    pub expected: Message,
}

/// The namespace of the call ids the template's model family writes, if it
/// has that convention (`analysis::family::call_id_namespace`).
fn family_namespace(spec: &FormatSpec) -> Option<&'static str> {
    match &spec.family {
        chat_parser_generator::spec::Family::Dedicated(name) => chat_parser_generator::analysis::family::call_id_namespace(name),
        _ => None,
    }
}

pub fn generate(rng: &mut Rng, spec: &FormatSpec, case: usize) -> Generated {
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
        // Ids as the model writes them where its family has a convention
        // (Kimi K2's `functions.NAME:index`, which its servers also give).
        let id = match family_namespace(spec) {
            Some(namespace) => format!("{namespace}{name}:{i}"),
            None => format!("call{:05}", case * 10 + i),
        };
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

pub fn render(t: &ChatTemplate, messages: Value, tools: &[Value], add_generation_prompt: bool) -> Result<String, String> {
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
        "bos_token": t.special_tokens().bos_token,
        "eos_token": t.special_tokens().eos_token,
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
pub fn assistant_text(t: &ChatTemplate, spec: &FormatSpec, g: &Generated) -> Result<String, String> {
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
pub fn renders_content(t: &ChatTemplate, spec: &FormatSpec, g: &Generated, text: &str) -> Result<bool, String> {
    if g.expected.content.is_empty() {
        return Ok(true);
    }
    let mut without = Generated { message: g.message.clone(), tools: g.tools.clone(), expected: g.expected.clone() };
    without.message["content"] = json!("");
    Ok(assistant_text(t, spec, &without)? != text)
}

/// Text the generation prompt writes after opening the reasoning block.
pub fn prefilled_reasoning(spec: &FormatSpec) -> Option<String> {
    let start = spec.reasoning.start.trim();
    if spec.generation_prompt.thinking_prefill != Prefill::OpenReasoning || start.is_empty() {
        return None;
    }
    let prompt = &spec.generation_prompt.thinking;
    let extra = prompt[prompt.rfind(start)? + start.len()..].trim();
    (!extra.is_empty()).then(|| extra.to_string())
}

