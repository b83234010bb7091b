//! Outputs as models really write them, not as templates render them.
//!
//! Two kinds of check, both on the generated parser of every corpus
//! template and on the reference parser (the generator's interpreter of the
//! same IR), which must report the same events:
//!
//! - **Table-driven cases**, one file per class of real output under
//!   `tests/data/real_outputs/` (`<class>.jsonl`, in the shared vectors'
//!   format: template, options with tool keys of `vectors/tools.json`, the
//!   output as `input`, the `expected` message). Each case runs whole and in
//!   1-, 3-, 7-byte and random chunkings; the final message (a cut-off call
//!   as content, the default) must equal the expected one exactly, and the
//!   deltas of a holding [`DeltaBuilder`] must fold into it. The test prints
//!   `real outputs: <class>: N/N`.
//! - **Cut-off calls over the corpus**: every round-trip text (a message
//!   with calls rendered through its template) cut at every byte. Whatever
//!   the cut, the final message holds no incomplete call and keeps the
//!   complete calls before the cut as the whole text's parse has them; where
//!   the cut falls inside a call, the message is exactly the message of the
//!   text before that call plus the call's text as content (nothing lost or
//!   doubled, whitespace included).

#[path = "../../generator/tests/common/mod.rs"]
mod common;
#[path = "../../tests/support/equivalence.rs"]
mod equivalence;
#[path = "../../generator/tests/support/roundtrip_texts.rs"]
mod roundtrip_texts;
#[path = "../../generator/tests/support/figures.rs"]
mod figures;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use chat_parser_bench::parsers::{AnyParser, TEMPLATES};
use chat_parser_generator::interp::StreamParser;
use chat_parser_generator::ir::build::{build, tool_signatures, ParseOptions, ToolSignature};
use chat_parser_generator::ir::Node;
use chat_parser_generator::{analyze, jinja::ChatTemplate, FormatSpec};
use chat_parser_runtime::message::{CutOffCalls, Message, MessageBuilder};
use chat_parser_runtime::kwargs::Kwarg;
use chat_parser_runtime::{DeltaBuilder, Event, Sink};
use equivalence::{chunks, Ev, Events, RuntimeTools};

/// The corpus templates the bench crate generated parsers for, analysed.
fn specs() -> &'static BTreeMap<String, (ChatTemplate, FormatSpec)> {
    static SPECS: OnceLock<BTreeMap<String, (ChatTemplate, FormatSpec)>> = OnceLock::new();
    SPECS.get_or_init(|| {
        let mut specs = BTreeMap::new();
        let Some(shared) = common::shared_dir("real_outputs") else { return specs };
        for (name, _) in common::corpus_templates(&shared) {
            let file = format!("{name}.jinja");
            if !TEMPLATES.contains(&file.as_str()) {
                continue;
            }
            let Some(Ok(template)) = chat_parser_bench::template_file(&file).map(|t| t.compile()) else { continue };
            let Ok(analysis) = analyze(&template) else { continue };
            specs.insert(file, (template, analysis.spec));
        }
        specs
    })
}

/// What one parse of an output gave: its events, the message assembled
/// from them, and the deltas of a holding builder folded together.
struct Parse {
    events: Vec<Ev>,
    builder: MessageBuilder,
    held: Message,
}

impl Parse {
    /// The final message under the default policy.
    fn message(&self, output: &str) -> Message {
        self.builder.clone().finish(output, CutOffCalls::AsContent)
    }
}

/// Sends each event to the three collectors.
struct Collect {
    events: Events,
    builder: MessageBuilder,
    deltas: DeltaBuilder,
    held: Message,
}

impl Collect {
    fn new() -> Collect {
        Collect { events: Events::default(), builder: MessageBuilder::new(), deltas: DeltaBuilder::holding(), held: Message::default() }
    }

    /// Folds the deltas released so far.
    fn take(&mut self) {
        if let Some(delta) = self.deltas.take() {
            self.held.apply_delta(&delta);
        }
    }

    fn done(mut self, output: &str) -> Parse {
        if let Some(delta) = self.deltas.finish_output(output) {
            self.held.apply_delta(&delta);
        }
        Parse { events: self.events.0, builder: self.builder, held: self.held }
    }
}

impl Sink for Collect {
    fn event(&mut self, e: Event<'_>) {
        self.events.event(e);
        self.builder.event(e);
        self.deltas.event(e);
    }
}

fn generated(file: &str, options: &ParseOptions, output: &str, pieces: &[&[u8]]) -> Parse {
    // `options.enable_thinking` is the thinking the reference parser is
    // built for: a template that ignores it gets it as its own switch.
    let mut kwargs = serde_json::Map::new();
    if let Some(variable) = specs().get(file).and_then(|(_, spec)| equivalence::own_switch(spec)) {
        kwargs.insert(variable.to_string(), serde_json::Value::Bool(options.enable_thinking));
    }
    generated_with(file, options, &kwargs, output, pieces)
}

/// `chat_template_kwargs` in the runtime's form (the values a switch can
/// compare; others as `Null`).
fn runtime_kwargs(kwargs: &serde_json::Map<String, serde_json::Value>) -> Vec<(&str, Kwarg<'_>)> {
    kwargs
        .iter()
        .map(|(k, v)| {
            let v = match v {
                serde_json::Value::Bool(b) => Kwarg::Bool(*b),
                serde_json::Value::Number(n) => n.as_i64().map_or(Kwarg::Null, Kwarg::Int),
                serde_json::Value::String(s) => Kwarg::Str(s),
                _ => Kwarg::Null,
            };
            (k.as_str(), v)
        })
        .collect()
}

/// The generated parser, with the request's `chat_template_kwargs` passed
/// in its options (the module's switch table reads them).
fn generated_with(file: &str, options: &ParseOptions, kwargs: &serde_json::Map<String, serde_json::Value>, output: &str, pieces: &[&[u8]]) -> Parse {
    let tools = RuntimeTools::new(options);
    let kwargs = runtime_kwargs(kwargs);
    tools.with_options(options, |o| {
        let o = chat_parser_runtime::Options { chat_template_kwargs: &kwargs, ..o };
        let mut parser = AnyParser::new(file, o).expect("a parser for every corpus template");
        run(output, pieces, |piece, collect| match piece {
            Some(piece) => parser.feed(piece, collect),
            None => parser.finish(collect),
        })
    })
}

/// Feeds `pieces` to a parser (`step(Some(piece))`), then finishes it
/// (`step(None)`), collecting what it reports for each piece.
fn run(output: &str, pieces: &[&[u8]], mut step: impl FnMut(Option<&[u8]>, &mut Collect)) -> Parse {
    let mut collect = Collect::new();
    for piece in pieces {
        step(Some(piece), &mut collect);
        collect.take();
    }
    step(None, &mut collect);
    collect.done(output)
}

/// The reference parser of one template for one request's options, built
/// once and run on many outputs: the IR for the options, and the
/// template's hold limit and pack table as the generated module has them
/// (each of those builds every variant of the IR, so building them per
/// output made the cut-off sweep rebuild the IR for every cut).
struct Reference {
    grammar: Node,
    tools: Vec<ToolSignature>,
    hold: usize,
    pack: Vec<String>,
}

impl Reference {
    fn new(spec: &FormatSpec, options: &ParseOptions) -> Reference {
        let (hold, pack) = chat_parser_generator::codegen::hold_limit_and_pack(spec);
        Reference { grammar: build(spec, options), tools: tool_signatures(options), hold, pack }
    }

    fn parse(&self, output: &str, pieces: &[&[u8]]) -> Parse {
        let mut parser = StreamParser::new(&self.grammar)
            .with_tools(self.tools.clone())
            .with_hold_limit(self.hold)
            .with_pack(self.pack.clone());
        run(output, pieces, |piece, collect| match piece {
            Some(piece) => parser.feed(piece, collect),
            None => parser.finish(collect),
        })
    }

    /// The whole output in one piece.
    fn whole(&self, output: &str) -> Parse {
        self.parse(output, &[output.as_bytes()])
    }
}

/// The chunkings every case runs in: whole, 1, 3 and 7 bytes, and three
/// random ones (seeded by the case, so failures reproduce).
fn chunkings(seed: u64, len: usize) -> Vec<Vec<usize>> {
    let mut out = vec![vec![usize::MAX], vec![1], vec![3], vec![7]];
    let mut rng = roundtrip_texts::Rng(seed | 1);
    for _ in 0..3 {
        out.push((0..len.max(1)).map(|_| 1 + rng.below(12)).collect());
    }
    out
}

/// Messages equal, calls by name, id and arguments (as JSON values when both
/// parse) and complete; `complete` too, so an incomplete call never passes.
fn same_message(got: &Message, want: &Message) -> Result<(), String> {
    if got.content != want.content || got.reasoning_content != want.reasoning_content {
        return Err(format!("content {:?} / reasoning {:?}, want {:?} / {:?}", got.content, got.reasoning_content, want.content, want.reasoning_content));
    }
    if got.tool_calls.len() != want.tool_calls.len() {
        return Err(format!("{} calls, want {}: {:?}", got.tool_calls.len(), want.tool_calls.len(), got.tool_calls));
    }
    for (g, w) in got.tool_calls.iter().zip(&want.tool_calls) {
        let args = |s: &str| serde_json::from_str::<serde_json::Value>(s).map(|v| v.to_string()).unwrap_or_else(|_| s.to_string());
        if g.name != w.name || g.id != w.id || args(&g.arguments) != args(&w.arguments) || g.complete != w.complete {
            return Err(format!("call {g:?}, want {w:?}"));
        }
    }
    Ok(())
}

/// The same message as folded deltas carry it (no `complete`).
fn same_as_deltas(message: &Message, held: &Message) -> Result<(), String> {
    let mut folded = held.clone();
    for (f, m) in folded.tool_calls.iter_mut().zip(&message.tool_calls) {
        f.complete = m.complete;
    }
    same_message(&folded, message).map_err(|e| format!("holding deltas: {e}"))
}

#[test]
fn table_driven_cases_per_class() {
    let specs = specs();
    let Some(shared) = common::shared_dir("real_outputs") else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/real_outputs");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("tests/data/real_outputs").filter_map(|e| e.ok()).map(|e| e.path()).collect();
    files.sort();
    let mut failures = Vec::new();
    let mut templates = std::collections::BTreeSet::new();
    for file in files.iter().filter(|f| f.extension().is_some_and(|e| e == "jsonl")) {
        let class = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let cases = common::vectors::load_file(&shared, file);
        let mut passed = 0;
        for case in &cases {
            let Some((_, spec)) = specs.get(&case.template) else {
                failures.push(format!("{class} {}: no generated parser for {}", case.id, case.template));
                continue;
            };
            templates.insert(case.template.clone());
            let Some(want) = &case.expected else { continue };
            // The reference parser is built for thinking as the template's
            // switch variables set it (what the CLI does); the generated one
            // reads them itself.
            let mut options = case.options.clone();
            if let Some(thinking) = spec.generation_prompt.thinking_from_kwargs(&case.kwargs) {
                options.enable_thinking = thinking;
            }
            let reference = Reference::new(spec, &options);
            let want_events = reference.whole(&case.input).events;
            let seed = case.id.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3));
            let mut failed = None;
            'runs: for sizes in chunkings(seed, case.input.len()) {
                let pieces = chunks(case.input.as_bytes(), &sizes);
                for (who, parse) in [
                    ("generated", generated_with(&case.template, &case.options, &case.kwargs, &case.input, &pieces)),
                    ("reference", reference.parse(&case.input, &pieces)),
                ] {
                    let message = parse.message(&case.input);
                    let problem = if parse.events != want_events {
                        Some(format!("events {:?}\n    differ from the reference parser's whole-text events {want_events:?}", parse.events))
                    } else {
                        same_message(&message, want).and_then(|()| same_as_deltas(&message, &parse.held)).err()
                    };
                    if let Some(problem) = problem {
                        failed = Some(format!("{class} {} ({}), {who}, chunks {:?}: {problem}\n    output: {:?}", case.id, case.template, &sizes[..sizes.len().min(8)], case.input));
                        break 'runs;
                    }
                }
            }
            match failed {
                Some(f) => failures.push(f),
                None => passed += 1,
            }
        }
        figures::figure(&format!("real outputs: {class}: {passed}/{}", cases.len()));
    }
    figures::figure(&format!("real outputs: {} templates", templates.len()));
    assert!(failures.is_empty(), "{} cases fail:\n{}", failures.len(), failures.join("\n\n"));
}

/// Checks the calls of the message of a cut text: none incomplete, and the
/// first ones of the whole text's message (`whole`), at least as many as
/// the previous cut kept (`kept`).
fn check_cut(got: &Message, whole: &Message, kept: usize) -> Result<usize, String> {
    if let Some(call) = got.tool_calls.iter().find(|c| !c.complete) {
        return Err(format!("incomplete call in the message: {call:?}"));
    }
    let n = got.tool_calls.len();
    if n < kept || n > whole.tool_calls.len() {
        return Err(format!("{n} calls kept, {kept} at the cut before, {} in the whole text", whole.tool_calls.len()));
    }
    for (g, w) in got.tool_calls.iter().zip(&whole.tool_calls) {
        if g.name != w.name || g.arguments != w.arguments {
            return Err(format!("call {g:?} differs from the whole text's {w:?}"));
        }
    }
    Ok(n)
}

/// Where the output cut a call off, its text is exactly what the text
/// before the call does not account for: the message equals the message of
/// the text before the call's start, plus that text as content (nothing
/// lost or doubled, whitespace included).
fn check_tail(reference: &Reference, prefix: &str, parse: &Parse, got: &Message) -> Result<(), String> {
    let Some(tail) = parse.events.iter().find_map(|e| if let Ev::Cut(t) = e { Some(*t) } else { None }) else { return Ok(()) };
    let Some(before) = prefix.len().checked_sub(tail).filter(|&b| prefix.is_char_boundary(b)).map(|b| &prefix[..b]) else {
        return Err(format!("cut call's text of {tail} bytes is not a piece of the output"));
    };
    let mut want = reference.whole(before).message(before);
    want.content.push_str(&prefix[before.len()..]);
    same_message(got, &want).map_err(|e| format!("not the text before the call ({before:?}) plus the call's text: {e}"))
}

#[test]
fn cut_off_calls_over_the_corpus() {
    let specs = specs();
    if specs.is_empty() {
        return;
    }
    let mut failures = Vec::new();
    let (mut texts, mut cuts, mut inside, mut templates) = (0, 0, 0, 0);
    for (file, (template, spec)) in specs {
        if !spec.capabilities.supports_tool_calls {
            continue;
        }
        let mut rng = roundtrip_texts::Rng(0x5DEECE66D ^ (file.len() as u64) << 9);
        let mut any = false;
        for case in 0..roundtrip_texts::CASES {
            let g = roundtrip_texts::generate(&mut rng, spec, case);
            let Ok(text) = roundtrip_texts::assistant_text(template, spec, &g) else { continue };
            let options = ParseOptions { tools: g.tools.clone(), parallel_tool_calls: true, ..ParseOptions::default() };
            let reference = Reference::new(spec, &options);
            let whole = reference.whole(&text).message(&text);
            if whole.tool_calls.is_empty() {
                continue;
            }
            any = true;
            texts += 1;
            let mut kept = 0;
            for cut in (1..=text.len()).filter(|&c| text.is_char_boundary(c)) {
                let prefix = &text[..cut];
                cuts += 1;
                let want = reference.whole(prefix);
                inside += usize::from(want.events.iter().any(|e| matches!(e, Ev::Cut(_))));
                let sizes = [1 + (cut % 5), 2, 7];
                let got = generated(file, &options, prefix, &chunks(prefix.as_bytes(), &sizes));
                let message = want.message(prefix);
                let problem = if got.events != want.events {
                    Err(format!("generated events {:?}\n    reference {:?}", got.events, want.events))
                } else {
                    check_cut(&message, &whole, kept)
                        .and_then(|n| same_as_deltas(&message, &got.held).map(|()| n))
                        .and_then(|n| check_tail(&reference, prefix, &want, &message).map(|()| n))
                };
                match problem {
                    Ok(n) => kept = n,
                    Err(e) => {
                        failures.push(format!("{file} #{case} cut at {cut}: {e}\n    text: {prefix:?}\n    message: {message:?}"));
                        break;
                    }
                }
            }
        }
        templates += usize::from(any);
    }
    figures::figure(&format!("cut-off calls: {texts} round-trip texts over {templates} templates cut at every byte: {cuts} cuts, {inside} inside a call, {} failing texts", failures.len()));
    if let Ok(path) = std::env::var("REAL_OUTPUTS_DUMP") {
        let _ = std::fs::write(path, failures.join("\n\n"));
    }
    assert!(failures.is_empty(), "{} texts fail:\n{}", failures.len(), failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n\n"));
}

/// Class 8 over the corpus: each template's own end-of-turn markup
/// (`ContentSpec::end_of_turn`) appended to a content-only reply and to
/// every round-trip text never reaches content: the message is the message
/// of the text without it, and the generated parser reports what the
/// reference parser does, in chunks.
#[test]
fn end_of_turn_over_the_corpus() {
    let specs = specs();
    if specs.is_empty() {
        return;
    }
    let mut failures = Vec::new();
    let (mut texts, mut parses, mut templates) = (0, 0, 0);
    for (file, (template, spec)) in specs {
        // Each marker as the template writes it (whitespace before it
        // included) and bare.
        let mut ends: Vec<&str> = Vec::new();
        for e in &spec.content.end_of_turn {
            for form in [e.as_str(), e.trim()] {
                if !ends.contains(&form) {
                    ends.push(form);
                }
            }
        }
        if ends.is_empty() {
            continue;
        }
        templates += 1;
        // A content-only reply after the prompt's own prefill (thinking off,
        // so the reply starts in content), and the round-trip texts.
        let mut cases: Vec<(String, ParseOptions)> =
            vec![("Hello there. How can I help?".to_string(), ParseOptions { enable_thinking: false, ..ParseOptions::default() })];
        if spec.capabilities.supports_tool_calls {
            let mut rng = roundtrip_texts::Rng(0x5DEECE66D ^ (file.len() as u64) << 9);
            for case in 0..roundtrip_texts::CASES {
                let g = roundtrip_texts::generate(&mut rng, spec, case);
                let Ok(text) = roundtrip_texts::assistant_text(template, spec, &g) else { continue };
                cases.push((text, ParseOptions { tools: g.tools.clone(), parallel_tool_calls: true, ..ParseOptions::default() }));
            }
        }
        // Longest first: the whitespace a template writes before its marker
        // belongs to the turn's end wherever it stands.
        let mut longest_first = ends.clone();
        longest_first.sort_by_key(|e| std::cmp::Reverse(e.len()));
        for (text, options) in &cases {
            texts += 1;
            let reference = Reference::new(spec, options);
            for &end in &ends {
                let marked = format!("{text}{end}");
                let before = longest_first.iter().find_map(|e| marked.strip_suffix(e)).unwrap_or(text);
                let want = reference.whole(before).message(before);
                for tail in ["", "\n"] {
                    let output = format!("{marked}{tail}");
                    parses += 1;
                    let reference_parse = reference.whole(&output);
                    let got = reference_parse.message(&output);
                    let generated_parse = generated(file, options, &output, &chunks(output.as_bytes(), &[3, 1, 7]));
                    let problem = if generated_parse.events != reference_parse.events {
                        Some(format!("generated events {:?}\n    reference {:?}", generated_parse.events, reference_parse.events))
                    } else if got.content.contains(end.trim()) || got.reasoning_content.contains(end.trim()) {
                        Some(format!("{end:?} reached the message: {got:?}"))
                    } else {
                        same_message(&got, &want).err().map(|e| format!("not the message without {end:?}: {e}"))
                    };
                    if let Some(p) = problem {
                        failures.push(format!("{file}: {p}\n    output: {output:?}"));
                    }
                }
            }
        }
    }
    figures::figure(&format!(
        "end of turn: {texts} texts over {templates} templates with each end-of-turn marker appended: {parses} parses, {} failing",
        failures.len()
    ));
    assert!(failures.is_empty(), "{} parses fail:\n{}", failures.len(), failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n\n"));
}
