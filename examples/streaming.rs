//! Streams a model's output through a parser generated at build time from a
//! bundled template, printing each OpenAI-style delta as it arrives.
//!
//! ```sh
//! cargo run --release --example streaming            # templates/xml_args.jinja
//! cargo run --release --example streaming -- think   # any template in templates/
//! ```
//!
//! The parser (`chat_parser::parsers::xml_args`, made by `build.rs` with the
//! generator's build API) keeps fixed-size state and allocates nothing; the
//! `DeltaBuilder` sink is what turns its borrowed events into owned deltas.

use chat_parser::parsers::AnyParser;
use chat_parser::{ArgType, DeltaBuilder, Event, MessageBuilder, Options, Sink, Tool};

/// What a model might write after each template's generation prompt.
fn sample_output(template: &str) -> &'static str {
    match template {
        "think" => "Two and two.\n</think>\n\nThe answer is 4.",
        "json_tool_call" => "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
        "tag_json_args" => "<tool_call>get_weather\n{\"city\": \"Paris\", \"days\": 3}</tool_call>",
        "mistral_tool_calls" => "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}, \"id\": \"a1b2c3d4e\"}]",
        "plain" => "Hello! How can I help you today?",
        _ => "I'll look that up.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    }
}

fn main() {
    let template = std::env::args().nth(1).unwrap_or_else(|| "xml_args".to_string());
    let file = format!("{}.jinja", template.trim_end_matches(".jinja"));
    // The request's tools: names are checked and arguments typed at run time.
    let tools = [Tool { name: "get_weather", args: &[("city", ArgType::String), ("days", ArgType::Json)] }];
    let options = Options { tools: &tools, ..Options::default() };
    let Some(mut parser) = AnyParser::new(&file, options) else {
        eprintln!("no bundled template {file:?}; one of: {}", chat_parser::parsers::TEMPLATES.join(", "));
        std::process::exit(2);
    };
    let output = sample_output(template.trim_end_matches(".jinja"));
    println!("template: templates/{file}  (parser state: {} bytes)", parser.state_bytes());
    // Each event goes to the delta builder (what a server streams) and to
    // the message builder (the final message, with each call's completion).
    let mut deltas = DeltaBuilder::new();
    let mut message = MessageBuilder::new();
    // Tokens arrive a few bytes at a time; a marker may be split anywhere.
    for chunk in output.as_bytes().chunks(5) {
        parser.feed(chunk, &mut |e: Event<'_>| {
            deltas.event(e);
            message.event(e);
        });
        if let Some(delta) = deltas.take() {
            println!("delta: {}", serde_json::to_string(&delta).unwrap_or_default());
        }
    }
    parser.finish(&mut |e: Event<'_>| {
        deltas.event(e);
        message.event(e);
    });
    if let Some(delta) = deltas.finish() {
        println!("delta: {}", serde_json::to_string(&delta).unwrap_or_default());
    }
    println!("message: {}", serde_json::to_string(&message.into_message()).unwrap_or_default());
}
