//! Renders every template of the shared corpus with a typical tool-calling conversation.
//!
//! The corpus lives in `$CHAT_PARSER_SHARED/templates` (default: `shared/` next to the
//! workspace). The test prints one line per template and fails if a template does not
//! compile, runs out of fuel, or fails to render, except for the templates listed in
//! [`FAILS_IN_PYTHON_TOO`], which fail on this conversation under Python jinja2 (HF
//! transformers) as well. `raise_exception` is accepted when the message comes from the
//! template itself.

use std::path::PathBuf;

use serde_json::{json, Value as Json};

use super::{ChatTemplate, TemplateErrorKind};

/// Templates that Python jinja2 also refuses for [`typical_conversation`], and why.
const FAILS_IN_PYTHON_TOO: &[(&str, &str)] = &[
    (
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        "expects legacy tools with a top-level `description`",
    ),
    (
        "MiroThinker-v1.jinja",
        "assigns an attribute of a dict (`set system_message.content`)",
    ),
    (
        "MiroThinker.jinja",
        "uses an undefined `tool` variable outside its loop",
    ),
    (
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        "expects a `functions` variable",
    ),
    (
        "meetkai-functionary-medium-v3.2.jinja",
        "expects tool-call arguments as a JSON string",
    ),
];

fn corpus_dir() -> PathBuf {
    let shared = std::env::var_os("CHAT_PARSER_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    shared.join("templates")
}

/// System, user, an assistant tool call (arguments as a JSON object), the tool's
/// answer and a follow-up question, with one tool; special tokens are empty, as
/// transformers passes them when the tokenizer defines none.
fn typical_conversation() -> Json {
    let weather_tool = json!({
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["location"]
            }
        }
    });
    json!({
        "bos_token": "",
        "eos_token": "",
        "add_generation_prompt": true,
        "tools": [weather_tool],
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [{
                "id": "abc123def",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}
            }]},
            {"role": "tool", "tool_call_id": "abc123def", "name": "get_weather",
             "content": "{\"temperature\": 22, \"condition\": \"sunny\"}"},
            {"role": "user", "content": "Thanks! And tomorrow?"}
        ]
    })
}

/// Whether `message` comes from the template: it, or the literal part before any
/// concatenated value, occurs in the source.
fn is_templates_own_message(source: &str, message: &str) -> bool {
    let literal_prefix: String = message.chars().take(24).collect();
    source.contains("raise_exception")
        && (source.contains(message) || source.contains(&literal_prefix))
}

#[test]
fn corpus_templates_render_a_typical_conversation() {
    let dir = corpus_dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("skipped: corpus not found at {}", dir.display());
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "jinja"))
        .collect();
    paths.sort();

    let ctx = typical_conversation();
    let mut failures = Vec::new();
    for path in &paths {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(source) = std::fs::read_to_string(path) else {
            failures.push(format!("{name}: unreadable"));
            continue;
        };
        let expected_failure = FAILS_IN_PYTHON_TOO.iter().find(|(n, _)| *n == name);
        match ChatTemplate::new(&name, &source).and_then(|t| t.render(&ctx)) {
            Ok(text) => {
                println!("{name}: ok ({} bytes)", text.len());
                if let Some((_, why)) = expected_failure {
                    failures.push(format!("{name}: rendered, but Python fails on it ({why})"));
                }
            }
            Err(err) if err.kind == TemplateErrorKind::Raised => {
                println!("{name}: raised: {}", err.message);
                if !is_templates_own_message(&source, &err.message) {
                    failures.push(format!(
                        "{name}: raised a message not in the template: {}",
                        err.message
                    ));
                }
            }
            Err(err) if err.kind == TemplateErrorKind::Render && expected_failure.is_some() => {
                println!("{name}: fails as in Python: {err}");
            }
            Err(err) => {
                println!("{name}: error: {err}");
                failures.push(err.to_string());
            }
        }
    }
    println!("{} templates", paths.len());
    assert!(
        failures.is_empty(),
        "corpus failures:\n{}",
        failures.join("\n")
    );
}
