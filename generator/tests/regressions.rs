//! One case per fixed parser bug (found by review), so it stays fixed.

mod common;

use chat_parser_generator::{analyze, interp::StreamParser, ir::build::*, jinja::ChatTemplate, FormatSpec};
use chat_parser_runtime::{Message, MessageBuilder};
use serde_json::json;

fn spec_of(path: &std::path::Path) -> FormatSpec {
    let source = std::fs::read_to_string(path).expect("template");
    analyze(&ChatTemplate::new("t.jinja", &source).expect("compiles")).expect("analyses").spec
}

fn parse(spec: &FormatSpec, options: &ParseOptions, text: &str) -> Message {
    let grammar = build(spec, options);
    for chunk in [usize::MAX, 1] {
        let mut b = MessageBuilder::new();
        let mut p = StreamParser::new(&grammar).with_tools(tool_signatures(options));
        for piece in text.as_bytes().chunks(chunk) {
            p.feed(piece, &mut b);
        }
        p.finish(&mut b);
        if chunk == 1 {
            return b.into_message();
        }
    }
    unreachable!("the loop returns on its last round")
}

fn tool(name: &str, props: serde_json::Value) -> serde_json::Value {
    json!({"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}})
}

#[test]
fn structured_output_keeps_trailing_text() {
    let spec = spec_of(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates/plain.jinja"));
    let options = ParseOptions { json_schema: Some(json!({"type": "object"})), ..ParseOptions::default() };
    assert_eq!(parse(&spec, &options, "{\"a\": 1}  trailing").content, "{\"a\": 1}  trailing");
}

#[test]
fn corpus_regressions() {
    let Some(shared) = common::shared_dir("regressions") else { return };
    let t = |name: &str| spec_of(&shared.join("templates").join(format!("{name}.jinja")));
    let get_time = tool("get_time", json!({"city": {"type": "string"}}));
    let opts = ParseOptions { tools: vec![get_time.clone()], parallel_tool_calls: true, ..ParseOptions::default() };

    // A finished call's closing marker is not content when the section end is missing.
    let m = parse(
        &t("deepseek-ai-DeepSeek-V3.1"),
        &opts,
        "hmm</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜>Done.",
    );
    assert_eq!((m.content.as_str(), m.tool_calls.len()), ("Done.", 1));
    assert!(m.tool_calls[0].complete);

    // Call ids are optional: Mistral's `[CALL_ID]`, JSON `"id"` and Cohere's `tool_call_id`.
    let m = parse(&t("Mistral-Small-3.2-24B-Instruct-2506"), &opts, "[TOOL_CALLS]get_time[ARGS]{\"city\": \"Paris\"}");
    assert_eq!((m.content.as_str(), m.tool_calls[0].name.as_str(), m.tool_calls[0].id.as_str()), ("", "get_time", ""));
    let m = parse(&t("mistralai-Mistral-Nemo-Instruct-2407"), &opts, "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"city\": \"X\"}}]");
    assert_eq!((m.content.as_str(), m.tool_calls.len()), ("", 1));
    assert!(m.tool_calls[0].complete);
    let m = parse(
        &t("CohereForAI-c4ai-command-r7b-12-2024-tool_use"),
        &opts,
        "<|START_ACTION|>[{\"tool_name\": \"get_time\", \"parameters\": {\"city\": \"X\"}}]<|END_ACTION|>",
    );
    assert_eq!((m.content.as_str(), m.tool_calls.len()), ("", 1));

    // Ids are JSON string content: reported unescaped.
    let m = parse(
        &t("mistralai-Mistral-Nemo-Instruct-2407"),
        &opts,
        "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {\"city\": \"X\"}, \"id\": \"12\\\"3\"}]",
    );
    assert_eq!(m.tool_calls[0].id, "12\"3");

    // An argument name cut off by the end of the output is not a key.
    let m = parse(&t("Qwen3-Coder"), &opts, "<tool_call>\n<function=get_time>\n<parameter=ci");
    assert_eq!((m.tool_calls.len(), m.tool_calls[0].complete), (1, false));
    assert!(!m.tool_calls[0].arguments.contains("\"ci\""), "{:?}", m.tool_calls[0].arguments);

    // Layout newlines around reasoning are not reasoning.
    let m = parse(&t("Qwen3.5-4B"), &ParseOptions::default(), "hm\n</think>\n\nHi");
    assert_eq!((m.reasoning_content.as_str(), m.content.as_str()), ("hm", "Hi"));
}
