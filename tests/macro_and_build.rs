//! The two ways to bring a template's parser into a crate agree: the
//! `chat_parser!` macro and the build.rs API (used by this crate's build
//! script, exposed as `chat_parser::parsers`).

use chat_parser_runtime::{ArgType, Event, MessageBuilder, Options, ReasoningFormat, Sink, Tool};

chat_parser_macros::chat_parser!("templates/think.jinja");
chat_parser_macros::chat_parser!("templates/xml_args.jinja");
chat_parser_macros::chat_parser!("templates/xml_args.jinja", module = qwen_coder);
chat_parser_macros::chat_parser!("templates/xml_args.jinja", module = qwen_weather, tools = "tests/data/weather_tools.json");
chat_parser_macros::chat_parser!("templates/mistral_tool_calls.jinja", module = mistral_eos, bos_token = "<s>", eos_token = "</s>");
chat_parser_macros::chat_parser!("tests/data/mistral_tokenizer_config.json", module = mistral_config);

#[test]
fn macro_and_build_script_agree() {
    let built = chat_parser::templates::THINK;
    assert_eq!(think::GENERATION_PROMPT, built.generation_prompt);
    assert_eq!(think::REASONING_START, built.reasoning_start);
    assert_eq!(think::REASONING_END, built.reasoning_end);
    assert_eq!(think::PRESERVED_TOKENS, built.preserved_tokens);
    assert_eq!(think::SPEC_JSON, built.spec_json);
    assert_eq!(think::REASONING_END.trim(), "</think>");
}

#[test]
fn macro_embeds_the_spec() {
    let spec: chat_parser_generator::FormatSpec = serde_json::from_str(xml_args::SPEC_JSON).expect("spec JSON");
    assert_eq!(spec.tools.format.per_call_start, "<tool_call>\n");
    assert_eq!(spec.tools.function.name_prefix, "<function=");
    assert!(xml_args::PRESERVED_TOKENS.contains(&"<parameter="));
}

#[test]
fn macro_and_build_script_modules_have_the_same_constants() {
    use chat_parser::parsers::xml_args as built;
    assert_eq!(qwen_coder::TEMPLATE, "templates/xml_args.jinja");
    assert_eq!(built::TEMPLATE, "xml_args.jinja");
    assert_eq!(qwen_coder::GENERATION_PROMPT, built::GENERATION_PROMPT);
    assert_eq!(qwen_coder::GENERATION_PROMPT_NO_THINKING, built::GENERATION_PROMPT_NO_THINKING);
    assert_eq!((qwen_coder::REASONING_START, qwen_coder::REASONING_END), (built::REASONING_START, built::REASONING_END));
    assert_eq!(qwen_coder::PRESERVED_TOKENS, built::PRESERVED_TOKENS);
    assert_eq!(qwen_coder::GRAMMAR_TRIGGERS, built::GRAMMAR_TRIGGERS);
    assert_eq!(qwen_coder::STOP_STRINGS, built::STOP_STRINGS);
    assert_eq!((qwen_coder::GBNF, qwen_coder::LARK), (built::GBNF, built::LARK));
    assert_eq!((qwen_coder::HOLD_LIMIT, qwen_coder::WINDOW_BYTES), (built::HOLD_LIMIT, built::WINDOW_BYTES));
}

const WEATHER: &[Tool<'static>] = &[Tool { name: "get_weather", args: &[("city", ArgType::String), ("days", ArgType::Json)] }];

/// A Qwen3-Coder-style reply: text, then one call with a string and a JSON argument.
const QWEN_CODER_CALL: &str = "Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco, \"CA\"\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";

#[test]
fn macro_parser_assembles_a_streamed_tool_call() {
    for size in [1, 2, 5, 17, usize::MAX] {
        let mut parser = qwen_coder::Parser::new(Options { tools: WEATHER, ..Options::default() });
        let mut message = MessageBuilder::new();
        for chunk in QWEN_CODER_CALL.as_bytes().chunks(size.min(QWEN_CODER_CALL.len())) {
            parser.feed(chunk, &mut message);
        }
        parser.finish(&mut message);
        let message = message.into_message();
        // The newline before the call is content, as in the reference parser.
        assert_eq!(message.content, "Let me check.\n", "chunks of {size}");
        assert_eq!(message.reasoning_content, "");
        assert_eq!(message.tool_calls.len(), 1, "chunks of {size}: {message:?}");
        let call = &message.tool_calls[0];
        assert_eq!((call.name.as_str(), call.id.as_str(), call.complete), ("get_weather", "", true));
        let arguments: serde_json::Value = serde_json::from_str(&call.arguments).expect("arguments are JSON");
        assert_eq!(arguments, serde_json::json!({"city": "San Francisco, \"CA\"", "days": 3}), "chunks of {size}");
    }
}

/// Every event as it came (text events are not merged: the two parsers are
/// the same code, so even the pieces must agree).
#[derive(Default)]
struct Recorded(Vec<String>);

impl Sink for Recorded {
    fn event(&mut self, event: Event<'_>) {
        self.0.push(format!("{event:?}"));
    }
}

#[test]
fn macro_and_build_script_parsers_give_identical_events() {
    let texts = [
        QWEN_CODER_CALL,
        "Hello there.",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=unknown_tool>\n</function>\n</tool_call> stays content",
        "cut off <tool_call>\n<function=get_weather>\n<parameter=days>\n1",
        "caf\u{e9} \u{1F600} <tool_call>\n<function=get_weather>\n<parameter=city>\n\u{1F600}\n</parameter>\n",
    ];
    let mut compared = 0;
    for tools in [&[][..], WEATHER] {
        for parallel_tool_calls in [false, true] {
            for reasoning_format in [ReasoningFormat::Auto, ReasoningFormat::None] {
                let options = Options { tools, parallel_tool_calls, reasoning_format, ..Options::default() };
                for text in texts {
                    for size in [1, 3, 8, usize::MAX] {
                        let (mut from_macro, mut from_build) = (Recorded::default(), Recorded::default());
                        let mut a = qwen_coder::Parser::new(options);
                        let mut b = chat_parser::parsers::xml_args::Parser::new(options);
                        for chunk in text.as_bytes().chunks(size.min(text.len())) {
                            a.feed(chunk, &mut from_macro);
                            b.feed(chunk, &mut from_build);
                        }
                        a.finish(&mut from_macro);
                        b.finish(&mut from_build);
                        assert_eq!(from_macro.0, from_build.0, "{text:?} in chunks of {size}, tools {}", tools.len());
                        assert!(!from_macro.0.is_empty());
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(compared, 2 * 2 * 2 * texts.len() * 4);
}

#[test]
fn build_script_covers_every_template() {
    let files: Vec<&str> = chat_parser::templates::ALL.iter().map(|t| t.file).collect();
    assert_eq!(files, ["json_tool_call.jinja", "mistral_tool_calls.jinja", "plain.jinja", "tag_json_args.jinja", "think.jinja", "xml_args.jinja"]);
    assert!(chat_parser::templates::ALL.iter().all(|t| t.handler == "autoparser"));
}

/// Tools declared at build time give the grammar the runtime builds for the
/// same tools from the module's envelope.
#[test]
fn tools_declared_at_build_time() {
    use chat_parser_runtime::grammar::request::{build, Request, ToolChoice, ToolSchema};
    use chat_parser_runtime::grammar::value::Value;
    assert_eq!(qwen_weather::tools::NAMES, &["get_weather"]);
    assert!(qwen_weather::tools::GBNF.contains("\"get_weather\""), "{}", qwen_weather::tools::GBNF);
    let file: serde_json::Value = serde_json::from_str(include_str!("data/weather_tools.json")).expect("tools");
    let params = Value::parse(&file[0]["function"]["parameters"].to_string()).expect("schema");
    let tools = [ToolSchema { name: "get_weather", parameters: Some(&params) }];
    let lazy = build(&qwen_weather::ENVELOPE, &Request { tools: &tools, parallel_tool_calls: true, ..Request::default() }).expect("grammar");
    assert!(lazy.lazy);
    assert_eq!(lazy.grammar.to_gbnf(), qwen_weather::tools::GBNF);
    assert_eq!(lazy.grammar.to_lark(), qwen_weather::tools::LARK);
    let required = Request { tools: &tools, parallel_tool_calls: true, tool_choice: ToolChoice::Required, ..Request::default() };
    assert_eq!(build(&qwen_weather::ENVELOPE, &required).expect("grammar").grammar.to_gbnf(), qwen_weather::tools::GBNF_REQUIRED);
    // Without tools: the module's static grammar, the same in both paths.
    assert_eq!(qwen_weather::GBNF, chat_parser::parsers::xml_args::GBNF);
    let generic = build(&qwen_weather::ENVELOPE, &Request { parallel_tool_calls: true, ..Request::default() }).expect("grammar");
    assert_eq!(generic.grammar.to_gbnf(), qwen_weather::GBNF);
}

/// The build.rs API declares tools for every template of a directory.
#[test]
fn builder_declares_tools() {
    let out = std::env::temp_dir().join(format!("chat-parser-builder-tools-{}.rs", std::process::id()));
    chat_parser_generator::build::Builder::new(concat!(env!("CARGO_MANIFEST_DIR"), "/templates"))
        .cargo_directives(false)
        .tools(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/weather_tools.json"))
        .write_parser_modules(&out)
        .expect("modules");
    let code = std::fs::read_to_string(&out).expect("written");
    let _ = std::fs::remove_file(&out);
    assert!(code.matches("pub mod tools").count() >= 5, "a tools module per template with tool calls");
    assert!(code.contains("get_weather"));
}

/// Content of `text` parsed whole by `parser`.
fn content_of(mut feed: impl FnMut(&[u8], &mut MessageBuilder), text: &str) -> String {
    let mut message = MessageBuilder::new();
    feed(text.as_bytes(), &mut message);
    message.into_message().content
}

/// A template that ends a turn with `{{ eos_token }}` knows its end marker
/// only from the tokenizer's token: given `</s>` (as a macro option, or in
/// a tokenizer config), a `</s>` the server left in the output ends the
/// reply; without it, it is text.
#[test]
fn special_tokens_give_the_end_of_turn() {
    let text = "Hello</s>";
    let given = content_of(|b, m| { let mut p = mistral_eos::Parser::new(Options::default()); p.feed(b, m); p.finish(m) }, text);
    let config = content_of(|b, m| { let mut p = mistral_config::Parser::new(Options::default()); p.feed(b, m); p.finish(m) }, text);
    let without = content_of(|b, m| { let mut p = chat_parser::parsers::mistral_tool_calls::Parser::new(Options::default()); p.feed(b, m); p.finish(m) }, text);
    assert_eq!((given.as_str(), config.as_str(), without.as_str()), ("Hello", "Hello", "Hello</s>"));
    assert_eq!(mistral_eos::SPEC_JSON, mistral_config::SPEC_JSON.replace("tests/data/mistral_tokenizer_config.json#chat_template", "templates/mistral_tool_calls.jinja"));
}

/// The build.rs API takes the special tokens of a directory's templates from a file.
#[test]
fn builder_takes_special_tokens() {
    let dir = std::env::temp_dir().join(format!("chat-parser-builder-tokens-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tokens = dir.join("special_tokens.json");
    std::fs::write(&tokens, r#"{"mistral_tool_calls.jinja": {"bos_token": "<s>", "eos_token": "</s>"}}"#).expect("written");
    let out = dir.join("templates.rs");
    chat_parser_generator::build::Builder::new(concat!(env!("CARGO_MANIFEST_DIR"), "/templates"))
        .cargo_directives(false)
        .special_tokens(&tokens)
        .write_info_module(&out)
        .expect("info module");
    let code = std::fs::read_to_string(&out).expect("written");
    let _ = std::fs::remove_dir_all(&dir);
    let mistral = code.lines().find(|l| l.contains("MISTRAL_TOOL_CALLS")).expect("the Mistral template");
    assert!(mistral.contains(r#"\"end_of_turn\":[\"</s>\"]"#), "{mistral}");
    let think = code.lines().find(|l| l.contains("pub const THINK")).expect("think");
    assert!(!think.contains("</s>"), "templates not named get no tokens");
}
