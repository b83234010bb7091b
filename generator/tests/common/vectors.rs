//! The shared parse vectors (`vectors/parse_cases.jsonl`) as requests for our
//! parser, and the comparison rule of `vectors/README.md`.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use chat_parser_generator::ir::build::{ParseOptions, ReasoningFormat, ToolChoice};
use chat_parser_runtime::Message;
use serde_json::Value;

pub struct Case {
    pub id: String,
    pub template: String,
    pub options: ParseOptions,
    pub is_partial: bool,
    pub input: String,
    pub expected: Option<Message>,
    pub generic: bool,
    /// The request's `chat_template_kwargs` (our own cases), applied by
    /// the test to each parser as a server would.
    pub kwargs: serde_json::Map<String, Value>,
}

pub fn load(shared: &Path) -> Vec<Case> {
    load_file(shared, &shared.join("vectors/parse_cases.jsonl"))
}

/// The project's own cases in the vectors' format
/// (`tests/data/described_outputs.jsonl`): outputs of families whose
/// templates cannot render a call (MiroThinker), written from the template
/// source. Their tools are keys of the shared `vectors/tools.json`.
pub fn described(shared: &Path) -> Vec<Case> {
    load_file(shared, &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/described_outputs.jsonl"))
}

pub fn load_file(shared: &Path, file: &Path) -> Vec<Case> {
    let tools: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(shared.join("vectors/tools.json")).expect("tools.json")).expect("tools JSON");
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let c: Value = serde_json::from_str(line).expect("case JSON");
        let o = &c["options"];
        let template = c["template"].as_str().unwrap_or_default().to_string();
        let stem = template.trim_end_matches(".jinja");
        let analysis: Value = std::fs::read_to_string(shared.join("reference/analysis").join(format!("{stem}.json")))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        let options = ParseOptions {
            enable_thinking: o["enable_thinking"].as_bool().unwrap_or(true),
            reasoning_format: match o["reasoning_format"].as_str() {
                Some("none") => ReasoningFormat::None,
                Some("deepseek") => ReasoningFormat::Deepseek,
                _ => ReasoningFormat::Auto,
            },
            parallel_tool_calls: o["parallel_tool_calls"].as_bool().unwrap_or(false),
            tools: o["tools"]
                .as_array()
                .map(|ts| {
                    // A key of tools.json, or a tool object written inline
                    // (cases of our own that need other schemas).
                    ts.iter().filter_map(|k| if k.is_object() { Some(k.clone()) } else { k.as_str().and_then(|k| tools.get(k)).cloned() }).collect()
                })
                .unwrap_or_default(),
            tool_choice: match o["tool_choice"].as_str() {
                Some("required") => ToolChoice::Required,
                Some("none") => ToolChoice::None,
                _ => ToolChoice::Auto,
            },
            json_schema: o.get("json_schema").filter(|s| !s.is_null()).cloned(),
        };
        let expected = c.get("expected").filter(|e| !e.is_null()).map(|e| Message {
            content: e["content"].as_str().unwrap_or_default().to_string(),
            reasoning_content: e["reasoning_content"].as_str().unwrap_or_default().to_string(),
            tool_calls: e["tool_calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|t| chat_parser_runtime::ToolCall {
                            name: t["name"].as_str().unwrap_or_default().to_string(),
                            id: t["id"].as_str().unwrap_or_default().to_string(),
                            arguments: t["arguments"].as_str().unwrap_or_default().to_string(),
                            // (Real-output cases mark a call that ends broken.)
                            complete: t["complete"].as_bool().unwrap_or(true),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        });
        out.push(Case {
            id: c["id"].as_str().unwrap_or_default().to_string(),
            generic: analysis["handler"] == "autoparser",
            template,
            options,
            is_partial: o["is_partial"].as_bool().unwrap_or(false),
            input: c["input"].as_str().unwrap_or_default().to_string(),
            expected,
            kwargs: o["chat_template_kwargs"].as_object().cloned().unwrap_or_default(),
        });
    }
    out
}

/// Arguments compared after parsing and re-serialising (unparseable → "").
pub fn normalize_args(s: &str) -> String {
    serde_json::from_str::<Value>(s).map(|v| v.to_string()).unwrap_or_default()
}

/// `Ok(exact)` when the messages agree under the vectors' rule; `exact` when
/// the text also agrees untrimmed. `Err` says what differs.
pub fn compare(got: &Message, want: &Message) -> Result<bool, String> {
    if got.content.trim() != want.content.trim() {
        return Err(format!("content {:?} != {:?}", got.content, want.content));
    }
    if got.reasoning_content.trim() != want.reasoning_content.trim() {
        return Err(format!("reasoning {:?} != {:?}", got.reasoning_content, want.reasoning_content));
    }
    if got.tool_calls.len() != want.tool_calls.len() {
        return Err(format!("{} tool calls != {}: {:?}", got.tool_calls.len(), want.tool_calls.len(), got.tool_calls));
    }
    for (g, w) in got.tool_calls.iter().zip(&want.tool_calls) {
        if g.name != w.name || g.id != w.id {
            return Err(format!("call {:?}/{:?} != {:?}/{:?}", g.name, g.id, w.name, w.id));
        }
        if normalize_args(&g.arguments) != normalize_args(&w.arguments) {
            return Err(format!("arguments {:?} != {:?}", g.arguments, w.arguments));
        }
    }
    Ok(got.content == want.content && got.reasoning_content == want.reasoning_content)
}
