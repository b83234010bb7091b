//! Round trip over the corpus: random assistant messages are rendered through
//! each template that supports tools, the assistant's part is cut out of the
//! render (what the model would write after the generation prompt), parsed
//! back, and compared with the original message.
//!
//! The model writes what its template taught it, so a parser that cannot read
//! back its own template's renders is wrong. Failures are either fixed or
//! listed with their cause in `docs/roundtrip-failures.md` (the test reads the
//! template names from that file's table).

#[path = "support/figures.rs"]
mod figures;
use figures::figure;
mod common;
#[path = "support/roundtrip_texts.rs"]
mod roundtrip_texts;

use roundtrip_texts::*;

use chat_parser_generator::{
    analyze,
    interp::StreamParser,
    ir::build::{build, ParseOptions, ReasoningFormat},
    jinja::ChatTemplate,
    spec::{CallIdPosition, Family, FormatSpec},
};
use chat_parser_runtime::{Message, MessageBuilder};
use serde_json::Value;

fn parse(spec: &FormatSpec, tools: &[Value], text: &str) -> Message {
    parse_chunked(spec, tools, text, usize::MAX)
}

fn parse_chunked(spec: &FormatSpec, tools: &[Value], text: &str, chunk: usize) -> Message {
    let options = ParseOptions {
        // The template's default: on, unless it ignores `enable_thinking`
        // and its own switch is off unless set (GigaChat 3.5), as the
        // texts are rendered.
        enable_thinking: spec.generation_prompt.default_thinking.unwrap_or(true),
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

/// Ok(whether content and reasoning are also equal untrimmed, or trimmed
/// as the template trims them: the template's layout around them was not
/// taken for text).
fn check(spec: &FormatSpec, got: &Message, want: &Message) -> Result<bool, String> {
    if got.content.trim() != want.content.trim() {
        return Err(format!("content {:?} != {:?}", got.content, want.content));
    }
    if got.reasoning_content.trim() != want.reasoning_content.trim() {
        return Err(format!("reasoning {:?} != {:?}", got.reasoning_content, want.reasoning_content));
    }
    if got.tool_calls.len() != want.tool_calls.len() {
        return Err(format!("{} calls != {}", got.tool_calls.len(), want.tool_calls.len()));
    }
    // A template that makes its ids out of the name (Kimi's
    // `functions.NAME:index`) does not render the message's ids.
    let ids_rendered = !spec.tools.format.id_field.is_empty()
        || !matches!(spec.tools.call_id.pos, CallIdPosition::None | CallIdPosition::NameInId);
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
    // The text as written, or trimmed where the template trims it.
    let same = |g: &str, w: &str| g == w || g == w.trim();
    Ok(same(&got.content, &want.content) && same(&got.reasoning_content, &want.reasoning_content))
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
    let (mut total_pass, mut total, mut total_exact) = (0, 0, 0);
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
        let (mut pass, mut exact) = (0, 0);
        let mut first_failure = None;
        let mut first_inexact = None;
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
                let inexact = format!("content {:?} / {:?}, reasoning {:?} / {:?}\n      text: {text:?}", got.content, want.content, got.reasoning_content, want.reasoning_content);
                check(&spec, &got, &want).map(|exact| (exact, inexact)).map_err(|e| format!("{e}\n      text: {text:?}"))
            });
            match outcome {
                Ok((true, _)) => {
                    pass += 1;
                    exact += 1;
                }
                Ok((false, inexact)) => {
                    pass += 1;
                    first_inexact.get_or_insert(inexact);
                }
                Err(e) => {
                    if first_failure.is_none() {
                        first_failure = Some(e);
                    }
                }
            }
        }
        total += CASES;
        total_pass += pass;
        total_exact += exact;
        let family = match &spec.family {
            Family::Generic => String::new(),
            Family::Dedicated(f) => format!(" [dedicated: {f}]"),
        };
        println!("roundtrip: {name}{family}: {pass}/{CASES} ({exact} exact)");
        if let (Some(e), true) = (first_inexact, std::env::var_os("ROUNDTRIP_INEXACT").is_some()) {
            println!("    first inexact: {e}");
        }
        if let Some(e) = first_failure {
            println!("    first failure: {e}");
            if !documented.contains(&name) {
                undocumented.push(name.clone());
            }
        }
    }
    // Exact: content and reasoning equal untrimmed too (whitespace the
    // template writes around them is layout, not text).
    figure(&format!("roundtrip: {total_pass}/{total} messages over {templates} templates with tool calls ({total_exact} exact)"));
    assert!(undocumented.is_empty(), "round-trip failures not listed in docs/roundtrip-failures.md: {undocumented:?}");
}
