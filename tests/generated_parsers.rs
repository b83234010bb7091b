//! The parsers `build.rs` generates for `templates/` (through the build.rs
//! API) parse like the reference parser, whole and in any chunking.

#[path = "support/equivalence.rs"]
mod equivalence;

use chat_parser::parsers::AnyParser;
use chat_parser_generator::ir::build::{ParseOptions, ReasoningFormat};
use equivalence::*;
use serde_json::json;

fn spec(file: &str) -> chat_parser_generator::FormatSpec {
    let path = format!("{}/templates/{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap();
    chat_parser_generator::spec_from_source(file, &source).unwrap()
}

fn generated(file: &str, options: &ParseOptions, pieces: &[&[u8]]) -> Vec<Ev> {
    let tools = RuntimeTools::new(options);
    tools.with_options(options, |o| {
        let mut p = AnyParser::new(file, o).expect("parser for template");
        let mut ev = Events::default();
        for piece in pieces {
            p.feed(piece, &mut ev);
        }
        p.finish(&mut ev);
        ev.0
    })
}

fn tool() -> serde_json::Value {
    json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}})
}

const TEXTS: &[&str] = &[
    "Hello there.",
    "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
    "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"abc123def\"}]",
    "<tool_call>get_weather\n{\"city\": \"Rome\"}</tool_call> and <tool_call>nope{}</tool_call>",
    "text <tool_call>\n{\"name\": \"unknown\", \"arguments\": {}}\n</tool_call> more",
    "<think>unterminated reasoning <tool_call>",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
    "caf\u{e9} \u{1F600} <tool_call>\n<function=get_weather>\n<parameter=city>\n\u{1F600}\n</parameter>\n",
];

#[test]
fn generated_parsers_match_the_reference_parser() {
    let mut checked = 0;
    for file in chat_parser::parsers::TEMPLATES {
        let spec = spec(file);
        for tools in [vec![], vec![tool()]] {
            for enable_thinking in [true, false] {
                for reasoning_format in [ReasoningFormat::Auto, ReasoningFormat::None] {
                    for parallel_tool_calls in [false, true] {
                        let options = ParseOptions { enable_thinking, reasoning_format, parallel_tool_calls, tools: tools.clone(), ..Default::default() };
                        for text in TEXTS {
                            let whole = reference(&spec, &options, &[text.as_bytes()]);
                            for sizes in [&[usize::MAX][..], &[1], &[4], &[3, 7, 1, 13]] {
                                let pieces = chunks(text.as_bytes(), sizes);
                                let got = generated(file, &options, &pieces);
                                assert_eq!(got, whole, "{file} {options:?} chunks {sizes:?}\ntext: {text:?}");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    println!("generated parsers (own templates): {checked} parses equal to the reference parser");
}
