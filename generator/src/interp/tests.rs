use chat_parser_runtime::{Message, MessageBuilder};

use super::StreamParser;
use crate::ir::{build::*, Node};
use crate::spec::*;

fn parse_chunked(g: &Node, opts: &ParseOptions, text: &str, chunk: usize) -> Message {
    let mut b = MessageBuilder::new();
    let mut p = StreamParser::new(g).with_tools(tool_signatures(opts));
    for piece in text.as_bytes().chunks(chunk.max(1)) {
        p.feed(piece, &mut b);
    }
    p.finish(&mut b);
    b.into_message()
}

fn qwen_coder_spec() -> FormatSpec {
    let mut s = FormatSpec::default();
    s.tools.format.mode = ToolFormatMode::TagWithTagged;
    s.tools.format.per_call_start = "<tool_call>\n".into();
    s.tools.format.per_call_end = "</tool_call>".into();
    s.tools.function = FunctionMarkers { name_prefix: "<function=".into(), name_suffix: ">\n".into(), close: "</function>\n".into(), ..Default::default() };
    s.tools.arguments.name_prefix = "<parameter=".into();
    s.tools.arguments.name_suffix = ">\n".into();
    s.tools.arguments.value_suffix = "</parameter>\n".into();
    s
}

fn tool(name: &str, props: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}})
}

#[test]
fn tagged_arguments_are_typed_by_schema_in_any_chunking() {
    let opts = ParseOptions {
        tools: vec![tool("f", serde_json::json!({"n": {"type": "integer"}, "s": {"type": "string"}}))],
        ..ParseOptions::default()
    };
    let g = build(&qwen_coder_spec(), &opts);
    let text = "Sure.\n<tool_call>\n<function=f>\n<parameter=n>\n12\n</parameter>\n<parameter=s>\nline 1\n\"two\"\n</parameter>\n</function>\n</tool_call>";
    for chunk in [1, 2, 3, 7, 1000] {
        let m = parse_chunked(&g, &opts, text, chunk);
        assert_eq!(m.content, "Sure.\n", "chunk {chunk}");
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.tool_calls[0].name, "f");
        assert_eq!(m.tool_calls[0].arguments, "{\"n\": 12, \"s\": \"line 1\\n\\\"two\\\"\"}");
        assert!(m.tool_calls[0].complete);
    }
}

#[test]
fn broken_markup_before_the_name_is_content() {
    let opts = ParseOptions { tools: vec![tool("f", serde_json::json!({}))], ..ParseOptions::default() };
    let g = build(&qwen_coder_spec(), &opts);
    let text = "a <tool_call>\n<function=nope>\n</function></tool_call> b";
    for chunk in [1, 5, 1000] {
        let m = parse_chunked(&g, &opts, text, chunk);
        assert_eq!(m.content, text, "chunk {chunk}");
        assert!(m.tool_calls.is_empty());
    }
}

#[test]
fn a_call_cut_off_keeps_its_arguments_and_is_incomplete() {
    let opts = ParseOptions { tools: vec![tool("f", serde_json::json!({"s": {"type": "string"}}))], ..ParseOptions::default() };
    let g = build(&qwen_coder_spec(), &opts);
    let m = parse_chunked(&g, &opts, "<tool_call>\n<function=f>\n<parameter=s>\nhel", 3);
    assert_eq!(m.tool_calls.len(), 1);
    assert_eq!(m.tool_calls[0].name, "f");
    assert!(!m.tool_calls[0].complete);
    assert!(m.tool_calls[0].arguments.starts_with("{\"s\": \"hel"));
}

#[test]
fn memory_stays_bounded_by_what_is_held_back() {
    let opts = ParseOptions { tools: vec![tool("f", serde_json::json!({"s": {"type": "string"}}))], ..ParseOptions::default() };
    let g = build(&qwen_coder_spec(), &opts);
    let mut sink = |_: chat_parser_runtime::Event<'_>| {};
    let mut p = StreamParser::new(&g);
    let chunk = "plain content without markers, ".repeat(8);
    let mut peak = 0;
    for _ in 0..4096 {
        p.feed(chunk.as_bytes(), &mut sink);
        peak = peak.max(p.text.len());
    }
    p.finish(&mut sink);
    // About 1 MB went through; the parser never kept more than a few KB of it.
    assert!(peak < 16 * 1024, "peak retained text {peak} bytes");
}

#[test]
fn a_name_too_long_for_its_room_breaks_where_a_wide_character_straddles_the_limit() {
    // The name's 64 bytes end inside a three-byte character: the name cannot
    // fit, so the markup breaks at once. (The window used to be cut back to a
    // character boundary below the limit, and then to nothing: the parser
    // waited for more text that could never help, holding all that followed
    // until the end of the output.)
    let opts = ParseOptions { tools: vec![tool("f", serde_json::json!({"s": {"type": "string"}}))], ..ParseOptions::default() };
    let g = build(&qwen_coder_spec(), &opts);
    let broken = format!("<tool_call>\n<function=a{}", "名".repeat(30));
    let call = "<tool_call>\n<function=f>\n<parameter=s>\nx\n</parameter>\n</function>\n</tool_call>";
    for chunk in [1, 4, 1000] {
        let mut content = String::new();
        let mut sink = |e: chat_parser_runtime::Event<'_>| {
            if let chat_parser_runtime::Event::Content(t) = e {
                content.push_str(t);
            }
        };
        let mut p = StreamParser::new(&g).with_tools(tool_signatures(&opts));
        for piece in broken.as_bytes().chunks(chunk) {
            p.feed(piece, &mut sink);
        }
        for _ in 0..256 {
            p.feed(" more content".as_bytes(), &mut sink);
        }
        assert!(p.text.len() < 1024, "chunk {chunk}: {} bytes held", p.text.len());
        assert!(content.starts_with(&broken), "chunk {chunk}: {content:?}");
        let m = parse_chunked(&g, &opts, &format!("{broken}{call}"), chunk);
        assert_eq!(m.content, broken, "chunk {chunk}");
        assert_eq!(m.tool_calls.len(), 1);
        assert!(m.tool_calls[0].complete);
    }
}

#[test]
fn by_tool_name_branches_on_the_declared_tools() {
    use crate::ir::{Alt, TextKind};
    // `@NAME: ` then either a call to NAME (declared) or text dropped.
    let call = Node::seq(vec![
        Node::Mark(crate::ir::Mark::ToolOpen),
        Node::until(&[":"], TextKind::ToolName),
        Node::lit(": "),
        Node::Mark(crate::ir::Mark::ArgsOpen),
        Node::Mark(crate::ir::Mark::ArgsClose),
        Node::Mark(crate::ir::Mark::ToolClose),
    ]);
    let other = Node::seq(vec![Node::until(&[":"], TextKind::Discard), Node::lit(": ")]);
    let g = Node::seq(vec![
        Node::Choice(vec![Alt { guard: Node::lit("@"), body: Node::ByToolName { stops: vec![":".into()], declared: Box::new(call), other: Box::new(other) } }]),
        Node::rest(TextKind::Content),
    ]);
    let opts = ParseOptions { tools: vec![tool("f", serde_json::json!({}))], ..ParseOptions::default() };
    for chunk in [1, 2, 1000] {
        let m = parse_chunked(&g, &opts, "@f: after", chunk);
        assert_eq!((m.content.as_str(), m.tool_calls.len()), ("after", 1), "chunk {chunk}");
        assert_eq!(m.tool_calls[0].name, "f");
        let m = parse_chunked(&g, &opts, "@g: after", chunk);
        assert_eq!((m.content.as_str(), m.tool_calls.len()), ("after", 0), "chunk {chunk}");
    }
    // Without declared tools no name is one.
    let m = parse_chunked(&g, &ParseOptions::default(), "@f: after", 1);
    assert_eq!((m.content.as_str(), m.tool_calls.len()), ("after", 0));
}

#[test]
fn sole_arg_makes_a_raw_body_the_value_of_the_one_string_argument() {
    use crate::ir::{Alt, Mark, TextKind};
    // `@NAME: ` then the raw body up to `;`, as the tool's one argument.
    let call = Node::seq(vec![
        Node::Mark(Mark::ToolOpen),
        Node::until(&[":"], TextKind::ToolName),
        Node::lit(": "),
        Node::Mark(Mark::SoleArg),
        Node::until(&[";"], TextKind::ArgString),
        Node::lit(";"),
        Node::Mark(Mark::ArgsClose),
        Node::Mark(Mark::ToolClose),
    ]);
    let g = Node::seq(vec![
        Node::Repeat { alts: vec![Alt { guard: Node::lit("@"), body: call }], limits: vec![None], recover: Some(Box::new(Node::until(&["@"], TextKind::Content))) },
        Node::End,
    ]);
    let python = tool("python", serde_json::json!({"code": {"type": "string"}}));
    let two = tool("edit", serde_json::json!({"path": {"type": "string"}, "text": {"type": "string"}}));
    let number = tool("wait", serde_json::json!({"seconds": {"type": "integer"}}));
    let opts = ParseOptions { tools: vec![python, two, number], ..ParseOptions::default() };
    for chunk in [1, 2, 1000] {
        let m = parse_chunked(&g, &opts, "@python: print(\"a\")\n;", chunk);
        assert_eq!(m.tool_calls.len(), 1, "chunk {chunk}");
        assert_eq!(m.tool_calls[0].arguments, r#"{"code": "print(\"a\")\n"}"#, "chunk {chunk}");
        // A tool with two arguments, or one that is not a string: no call.
        for text in ["@edit: x;", "@wait: 5;"] {
            let m = parse_chunked(&g, &opts, text, chunk);
            assert!(m.tool_calls.iter().all(|c| !c.complete), "{text} in {chunk}: {m:?}");
        }
    }
}
