//! The checked-in parser modules (`generated/*.rs`) compile as they are and
//! parse like the parsers `build.rs` generates now.
//!
//! If they are missing or stale (this test then fails to compile or to
//! match), regenerate them with:
//! `CHAT_PARSER_BLESS=1 cargo test --release --test generated`

use chat_parser_runtime::{ArgType, Event, MessageBuilder, Options, Sink, Tool};

const BLESS: &str = "CHAT_PARSER_BLESS=1 cargo test --release --test generated";

/// The checked-in modules, compiled as they are.
#[allow(dead_code)]
#[path = "../generated"]
mod checked_in {
    #[path = "json_tool_call.rs"]
    pub mod json_tool_call;
    #[path = "mistral_tool_calls.rs"]
    pub mod mistral_tool_calls;
    #[path = "plain.rs"]
    pub mod plain;
    #[path = "tag_json_args.rs"]
    pub mod tag_json_args;
    #[path = "think.rs"]
    pub mod think;
    #[path = "xml_args.rs"]
    pub mod xml_args;
}

/// Every event as it came, unmerged.
#[derive(Default)]
struct Recorded(Vec<String>);

impl Sink for Recorded {
    fn event(&mut self, event: Event<'_>) {
        self.0.push(format!("{event:?}"));
    }
}

type Parse = fn(Options<'_>, &[&[u8]]) -> Vec<String>;

/// A `Parse` running one checked-in module's parser.
macro_rules! checked_in {
    ($module:ident) => {
        (concat!(stringify!($module), ".jinja"), |options: Options<'_>, pieces: &[&[u8]]| {
            let mut parser = checked_in::$module::Parser::new(options);
            let mut events = Recorded::default();
            for piece in pieces {
                parser.feed(piece, &mut events);
            }
            parser.finish(&mut events);
            events.0
        })
    };
}

const WEATHER: &[Tool<'static>] = &[Tool { name: "get_weather", args: &[("city", ArgType::String), ("days", ArgType::Json)] }];

#[test]
fn checked_in_parser_parses_a_tool_call() {
    let text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    let mut parser = checked_in::xml_args::Parser::new(Options { tools: WEATHER, ..Options::default() });
    let mut message = MessageBuilder::new();
    for chunk in text.as_bytes().chunks(3) {
        parser.feed(chunk, &mut message);
    }
    parser.finish(&mut message);
    let message = message.into_message();
    assert_eq!((message.content.as_str(), message.tool_calls.len()), ("", 1), "{message:?}");
    assert_eq!(message.tool_calls[0].name, "get_weather");
    let arguments: serde_json::Value = serde_json::from_str(&message.tool_calls[0].arguments).expect("JSON arguments");
    assert_eq!(arguments, serde_json::json!({"city": "Paris", "days": 3}));
    assert_eq!(checked_in::xml_args::TEMPLATE, "templates/xml_args.jinja");
}

/// The checked-in modules parse like the ones `build.rs` generates now.
#[test]
fn checked_in_parsers_match_the_build_script_parsers() {
    let parsers: [(&str, Parse); 6] = [
        checked_in!(json_tool_call),
        checked_in!(mistral_tool_calls),
        checked_in!(plain),
        checked_in!(tag_json_args),
        checked_in!(think),
        checked_in!(xml_args),
    ];
    let files: Vec<&str> = parsers.iter().map(|(file, _)| *file).collect();
    assert_eq!(files, chat_parser::parsers::TEMPLATES, "include every generated/*.rs in `checked_in`");
    let texts = [
        "Hello there.",
        "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
        "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"abc123def\"}]",
        "<tool_call>get_weather\n{\"city\": \"Rome\"}</tool_call>",
    ];
    for (file, parse) in parsers {
        for tools in [&[][..], WEATHER] {
            let options = Options { tools, ..Options::default() };
            for text in texts {
                for size in [1, 5, usize::MAX] {
                    let pieces: Vec<&[u8]> = text.as_bytes().chunks(size.min(text.len())).collect();
                    let mut built = chat_parser::parsers::AnyParser::new(file, options).expect("build.rs parser");
                    let mut expected = Recorded::default();
                    for piece in &pieces {
                        built.feed(piece, &mut expected);
                    }
                    built.finish(&mut expected);
                    assert_eq!(parse(options, &pieces), expected.0, "{file}: {text:?} in chunks of {size}; if generated/ is stale: {BLESS}");
                }
            }
        }
    }
}
