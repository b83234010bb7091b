//! Streaming equivalence: any chunking of any vector's input gives the same
//! final message as the whole input, and the deltas a client receives fold
//! into that message (they never take anything back).
//!
//! Every vector of the corpus is used (the 115 of dedicated formats too: the
//! property holds for whatever the generic grammar makes of them).

#[path = "support/figures.rs"]
mod figures;
use figures::figure;
mod common;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use chat_parser_generator::{analyze, interp::StreamParser, ir::build::build, ir::Node, jinja::ChatTemplate};
use chat_parser_runtime::{DeltaBuilder, Event, Message, MessageBuilder, Sink};
use proptest::prelude::*;

struct Prepared {
    id: String,
    grammar: Node,
    tools: Vec<chat_parser_generator::ir::build::ToolSignature>,
    input: Vec<u8>,
    partial: bool,
}

fn prepared() -> &'static [Prepared] {
    static CASES: OnceLock<Vec<Prepared>> = OnceLock::new();
    CASES.get_or_init(|| {
        let Some(shared) = common::shared_dir("streaming") else { return Vec::new() };
        let mut specs = BTreeMap::new();
        common::vectors::load(&shared)
            .into_iter()
            .filter_map(|case| {
                let spec = specs
                    .entry(case.template.clone())
                    .or_insert_with(|| {
                        let source = std::fs::read_to_string(shared.join("templates").join(&case.template)).ok()?;
                        analyze(&ChatTemplate::new(&case.template, &source).ok()?).ok().map(|a| a.spec)
                    })
                    .clone()?;
                Some(Prepared { id: case.id.clone(), grammar: build(&spec, &case.options), tools: chat_parser_generator::ir::build::tool_signatures(&case.options), input: case.input.into_bytes(), partial: case.is_partial })
            })
            .collect()
    })
}

/// Feeds `chunks` (sizes, cycled) and returns the final message, the folded
/// deltas and the events as text.
fn run(p: &Prepared, chunks: &[usize]) -> (Message, Message, Vec<String>) {
    struct Both<'a>(&'a mut MessageBuilder, &'a mut DeltaBuilder, &'a mut Vec<String>);
    impl Sink for Both<'_> {
        fn event(&mut self, e: Event<'_>) {
            self.2.push(format!("{e:?}"));
            self.0.event(e);
            self.1.event(e);
        }
    }
    let (mut m, mut d, mut events) = (MessageBuilder::new(), DeltaBuilder::new(), Vec::new());
    let mut folded = Message::default();
    let mut parser = StreamParser::new(&p.grammar).with_tools(p.tools.clone());
    let mut at = 0;
    let mut i = 0;
    while at < p.input.len() {
        let n = chunks[i % chunks.len()].max(1).min(p.input.len() - at);
        parser.feed(&p.input[at..at + n], &mut Both(&mut m, &mut d, &mut events));
        if let Some(delta) = d.take() {
            folded.apply_delta(&delta);
        }
        at += n;
        i += 1;
    }
    if !p.partial {
        parser.finish(&mut Both(&mut m, &mut d, &mut events));
    }
    if let Some(delta) = d.finish() {
        folded.apply_delta(&delta);
    }
    let mut message = m.into_message();
    // Deltas carry no completeness flag.
    for c in &mut message.tool_calls {
        c.complete = true;
    }
    for c in &mut folded.tool_calls {
        c.complete = true;
    }
    (message, folded, events)
}

fn whole(p: &Prepared) -> (Message, Vec<String>) {
    let (m, _, events) = run(p, &[usize::MAX]);
    // Text events may be split differently; compare their concatenation per kind.
    (m, events)
}

#[test]
fn one_byte_chunks_match_whole_input_for_every_vector() {
    let cases = prepared();
    if cases.is_empty() {
        return;
    }
    for p in cases {
        let (want, _) = whole(p);
        let (got, folded, _) = run(p, &[1]);
        assert_eq!(got, want, "{}: 1-byte chunks", p.id);
        assert_eq!(folded, want, "{}: folded deltas", p.id);
    }
    figure(&format!("streaming: {} vectors, 1-byte chunks equal whole input", cases.len()));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    #[test]
    fn random_chunkings_match_whole_input(index in 0usize..10_000, chunks in proptest::collection::vec(1usize..24, 1..12)) {
        let cases = prepared();
        if !cases.is_empty() {
            let p = &cases[index % cases.len()];
            let (want, _) = whole(p);
            let (got, folded, _) = run(p, &chunks);
            prop_assert_eq!(&got, &want, "{}: chunks {:?}", p.id, chunks);
            prop_assert_eq!(&folded, &want, "{}: folded deltas, chunks {:?}", p.id, chunks);
        }
    }
}

/// Every corpus template, including those without vectors or tool calls:
/// texts built from its own reasoning and content markers, parsed whole, in
/// 1-byte chunks and in 5-byte chunks.
#[test]
fn every_corpus_template_streams_like_whole_input() {
    let Some(shared) = common::shared_dir("streaming (corpus)") else { return };
    let mut templates = 0;
    for (name, path) in common::corpus_templates(&shared) {
        let Ok(source) = std::fs::read_to_string(&path) else { continue };
        let Ok(template) = ChatTemplate::new(&name, &source) else { continue };
        let Ok(analysis) = analyze(&template) else { continue };
        let spec = analysis.spec;
        templates += 1;
        let (start, end) = (spec.reasoning.start.as_str(), spec.reasoning.end.as_str());
        let (open, close) = (spec.content.start.as_str(), spec.content.end.as_str());
        let texts = [
            "Plain answer, naïve 日本 text.".to_string(),
            format!("{start}Thinking <b>hard</b>{end}{open}The answer.{close}"),
            format!("Thinking{end}Answer{close} trailing"),
            format!("{start}cut off in reaso"),
        ];
        for options in [
            chat_parser_generator::ir::build::ParseOptions::default(),
            chat_parser_generator::ir::build::ParseOptions {
                reasoning_format: chat_parser_generator::ir::build::ReasoningFormat::None,
                enable_thinking: false,
                ..Default::default()
            },
        ] {
            let grammar = build(&spec, &options);
            for text in &texts {
                let p = Prepared { id: name.clone(), grammar: grammar.clone(), tools: chat_parser_generator::ir::build::tool_signatures(&options), input: text.clone().into_bytes(), partial: false };
                let (want, _) = whole(&p);
                for chunks in [[1usize], [5]] {
                    let (got, folded, _) = run(&p, &chunks);
                    assert_eq!(got, want, "{name}: {text:?} in {chunks:?}-byte chunks");
                    assert_eq!(folded, want, "{name}: {text:?} folded deltas");
                }
            }
        }
    }
    figure(&format!("streaming: {templates} corpus templates, own-marker texts stream like whole input"));
}
