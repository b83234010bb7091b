//! Grammars over the corpus, judged by a real engine: every grammar emitted
//! for every corpus template (the reference's `get_weather` tool, the vector
//! tools, no tools, a reply schema) must compile in llguidance, in both its
//! GBNF form (through llguidance's own converter) and its Lark form; the text
//! each template renders for random tool calls (the round-trip set) must be
//! accepted from the trigger on, and corrupted variants rejected: a wrong
//! tool name, a missing required argument, a value of the wrong type, an
//! extra call when parallel calls are off, a call cut short.
//!
//! Two engines judge them, both llguidance: the Lark form is compiled and run
//! here by the `llguidance` crate (the text from the trigger on, found by the
//! trigger's rule written out in Rust); then all cases are written to a JSON
//! file and checked by `tests/grammar/check.py` with llguidance's Python
//! package, in both forms (GBNF through llguidance's own `gbnf_to_lark`),
//! finding the trigger with the emitted regular expressions. When the Python
//! package is not installed that half prints a skip line. Templates whose
//! grammar may fail are listed, with the cause, in
//! `tests/grammar/known-failures.txt`.

mod common;
#[path = "support/figures.rs"]
mod figures;
#[path = "support/roundtrip_texts.rs"]
mod roundtrip_texts;

use figures::figure;
use roundtrip_texts::*;

use chat_parser_generator::{
    analyze,
    grammar::{envelope, EnvelopeBuf},
    interp::StreamParser,
    ir::build::{build, ParseOptions, ReasoningFormat},
    jinja::ChatTemplate,
    spec::{FormatSpec, Prefill, ReasoningMode, ToolFormatMode},
};
use chat_parser_runtime::envelope::TriggerKind;
use chat_parser_runtime::grammar::request::{ReplyGrammar, ToolChoice};
use chat_parser_runtime::{Message, MessageBuilder};
use serde_json::{json, Value};

/// Round-trip messages per template.
const MESSAGES: usize = 12;

struct Case {
    template: String,
    name: String,
    grammar: ReplyGrammar,
    accept: Vec<String>,
    reject: Vec<String>,
    /// Where the grammar starts in a lazy text (None: no trigger).
    starts: Vec<Option<usize>>,
}

impl Case {
    fn to_json(&self) -> Value {
        let triggers: Vec<Value> = self
            .grammar
            .triggers
            .iter()
            .map(|t| json!({"type": match t.kind { TriggerKind::Word => "word", TriggerKind::PatternFull => "pattern_full" }, "value": t.value}))
            .collect();
        json!({
            "template": self.template,
            "name": self.name,
            "gbnf": self.grammar.grammar.to_gbnf(),
            "lark": self.grammar.grammar.to_lark(),
            "lazy": self.grammar.lazy,
            "triggers": triggers,
            "accept": self.accept,
            "reject": self.reject,
        })
    }
}

/// What the grammar of one request is built from.
struct Req<'a> {
    tools: &'a [Value],
    choice: ToolChoice,
    parallel: bool,
    schema: Option<&'a Value>,
}

/// `thinking`: the template's default (on, unless it ignores
/// `enable_thinking` and its own switch is off by default: GigaChat 3.5),
/// the thinking its rendered texts are written with.
fn grammar(env: &EnvelopeBuf, thinking: bool, req: &Req) -> Option<ReplyGrammar> {
    let tool_choice = match req.choice {
        ToolChoice::Auto => chat_parser_generator::ir::build::ToolChoice::Auto,
        ToolChoice::Required => chat_parser_generator::ir::build::ToolChoice::Required,
        ToolChoice::None => chat_parser_generator::ir::build::ToolChoice::None,
    };
    let options = ParseOptions {
        enable_thinking: thinking,
        parallel_tool_calls: req.parallel,
        tools: req.tools.to_vec(),
        tool_choice,
        json_schema: req.schema.cloned(),
        ..ParseOptions::default()
    };
    chat_parser_generator::grammar::envelope_request(env, &options)
}

fn parse(spec: &FormatSpec, tools: &[Value], text: &str) -> Message {
    let options = ParseOptions {
        enable_thinking: spec.generation_prompt.default_thinking.unwrap_or(true),
        reasoning_format: ReasoningFormat::Auto,
        parallel_tool_calls: true,
        tools: tools.to_vec(),
        ..ParseOptions::default()
    };
    let ir = build(spec, &options);
    let mut builder = MessageBuilder::new();
    let mut parser = StreamParser::new(&ir).with_tools(chat_parser_generator::ir::build::tool_signatures(&options));
    parser.feed(text.as_bytes(), &mut builder);
    parser.finish(&mut builder);
    builder.into_message()
}

/// `tools` with every argument required.
fn all_required(tools: &[Value]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            let mut t = t.clone();
            let keys: Vec<Value> = t["function"]["parameters"]["properties"]
                .as_object()
                .map(|p| p.keys().map(|k| json!(k)).collect())
                .unwrap_or_default();
            t["function"]["parameters"]["required"] = Value::Array(keys);
            t
        })
        .collect()
}

/// A schema type the value does not have (for the wrong-type check).
fn other_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) | Value::Object(_) | Value::Array(_) => "integer",
        _ => "boolean",
    }
}

/// The reasoning block a model writes before its reply, as the template's
/// markers and generation prompt put it.
fn reasoning_prefix(spec: &FormatSpec) -> String {
    let (start, end) = (spec.reasoning.start.trim(), spec.reasoning.end.trim());
    if spec.reasoning.mode == ReasoningMode::None || end.is_empty() {
        return String::new();
    }
    let g = &spec.generation_prompt;
    match if g.default_thinking.unwrap_or(true) { g.thinking_prefill } else { g.no_thinking_prefill } {
        Prefill::OpenReasoning => format!("Let me think.\n{end}\n\n"),
        Prefill::ClosedReasoning => String::new(),
        Prefill::Nothing if start.is_empty() => format!("Let me think.\n{end}\n\n"),
        Prefill::Nothing => format!("{start}\nLet me think.\n{end}\n\n"),
    }
}

fn get_weather() -> Value {
    json!({"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}})
}

/// The tool sets the template's vectors use.
fn vector_tool_sets(shared: &std::path::Path, template: &str) -> Vec<Vec<Value>> {
    let tools: Value = std::fs::read_to_string(shared.join("vectors/tools.json"))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let mut sets: Vec<Vec<Value>> = Vec::new();
    let cases = std::fs::read_to_string(shared.join("vectors/parse_cases.jsonl")).unwrap_or_default();
    for line in cases.lines() {
        let Ok(case) = serde_json::from_str::<Value>(line) else { continue };
        if case["template"].as_str() != Some(&format!("{template}.jinja")) {
            continue;
        }
        let set: Vec<Value> = case["options"]["tools"]
            .as_array()
            .map(|ks| ks.iter().filter_map(|k| tools.get(k.as_str()?).cloned()).collect())
            .unwrap_or_default();
        if !set.is_empty() && !sets.contains(&set) {
            sets.push(set);
        }
    }
    sets
}

/// Every case of one template.
fn template_cases(shared: &std::path::Path, name: &str, template: &ChatTemplate, spec: &FormatSpec) -> Vec<Case> {
    let env = envelope(spec);
    let thinking = spec.generation_prompt.default_thinking.unwrap_or(true);
    let mut cases = Vec::new();
    let mut push = |case_name: String, g: Option<ReplyGrammar>, accept: Vec<String>, reject: Vec<String>| {
        if let Some(grammar) = g {
            let starts = accept.iter().chain(&reject).map(|t| if grammar.lazy { constrained_start(spec, t) } else { Some(0) }).collect();
            cases.push(Case { template: name.to_string(), name: case_name, grammar, accept, reject, starts });
        }
    };

    // Structured output: the reasoning block, then JSON matching the schema.
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}, "n": {"type": "integer"}}, "required": ["answer", "n"]});
    let prefix = reasoning_prefix(spec);
    push(
        "json_schema".into(),
        grammar(&env, thinking, &Req { tools: &[], choice: ToolChoice::Auto, parallel: false, schema: Some(&schema) }),
        vec![format!("{prefix}{{\"answer\": \"yes\", \"n\": 3}}")],
        vec![format!("{prefix}{{\"answer\": 3, \"n\": 3}}"), format!("{prefix}{{\"answer\": \"yes\"}}")],
    );
    if env.calls[1].is_empty() {
        return cases;
    }

    // Grammars that must compile: get_weather, the vector tools, no tools.
    let weather = [get_weather()];
    for (label, tools) in [("get_weather".to_string(), weather.to_vec()), ("no tools".to_string(), Vec::new())]
        .into_iter()
        .chain(vector_tool_sets(shared, name).into_iter().enumerate().map(|(i, s)| (format!("vector tools {i}"), s)))
    {
        for (mode, choice, parallel) in [("lazy", ToolChoice::Auto, false), ("lazy parallel", ToolChoice::Auto, true), ("required", ToolChoice::Required, true)] {
            push(format!("{label}/{mode}"), grammar(&env, thinking, &Req { tools: &tools, choice, parallel, schema: None }), Vec::new(), Vec::new());
        }
    }

    // get_weather with a closed set of cities: the rendered call is
    // accepted, another city or a word for `days` is not.
    let call = |city: Value, days: Value| {
        let message = json!({"role": "assistant", "content": "", "tool_calls": [{"id": "call00001", "type": "function",
            "function": {"name": "get_weather", "arguments": {"city": city, "days": days}}}]});
        let expected = Message { content: String::new(), reasoning_content: String::new(), tool_calls: Vec::new() };
        assistant_text(template, spec, &Generated { message, tools: weather.to_vec(), expected }).ok()
    };
    let mut cities = get_weather();
    cities["function"]["parameters"]["properties"]["city"]["enum"] = json!(["Paris", "Rome"]);
    if let (Some(good), Some(city), Some(days)) = (call(json!("Paris"), json!(3)), call(json!("Berlin"), json!(3)), call(json!("Paris"), json!("three"))) {
        let parsed = parse(spec, &[cities.clone()], &good);
        if parsed.tool_calls.len() == 1 && parsed.tool_calls[0].complete {
            push(
                "get_weather enum/lazy".into(),
                grammar(&env, thinking, &Req { tools: &[cities], choice: ToolChoice::Auto, parallel: false, schema: None }),
                vec![good],
                vec![city, days],
            );
        }
    }

    // Python literal values (the template renders few of them): strings in
    // both quote styles with escapes, `True`/`False`/`None`, nested lists
    // and dicts, each typed by its schema.
    if spec.tools.format.mode == ToolFormatMode::PythonCalls {
        let tool = json!({"type": "function", "function": {"name": "py_values", "parameters": {"type": "object", "properties": {
            "s": {"type": "string"}, "q": {"type": "string"}, "flag": {"type": "boolean"}, "nothing": {"type": "null"},
            "items": {"type": "array"}, "opts": {"type": "object"}}, "required": ["s", "flag"]}}});
        let f = &spec.tools.format;
        let call = |args: &str| format!("{prefix}{}[py_values({args})]{}", f.section_start.trim(), f.section_end.trim());
        let accept: Vec<String> = [
            r#"s='it\'s', q="say \"hi\"\n", flag=True, nothing=None, items=[1, 'a', [2, 3.5], None], opts={'k': 'v', 'inner': {'m': None, "n": [True]}}"#,
            r#"s="double", flag=False"#,
            "s='', flag=True, items=[]",
        ]
        .iter()
        .map(|a| call(a))
        .collect();
        let reject: Vec<String> =
            ["flag=True", "s='x', flag='yes'", "s='x', flag=True, items=5", "s=3, flag=True", "s='x', flag=True, opts=[1]"].iter().map(|a| call(a)).collect();
        let tools = [tool];
        if accept.iter().all(|t| parse(spec, &tools, t).tool_calls.iter().filter(|c| c.complete).count() == 1) {
            push("python values/lazy".into(), grammar(&env, thinking, &Req { tools: &tools, choice: ToolChoice::Auto, parallel: false, schema: None }), accept, reject);
        } else {
            panic!("{name}: the parser does not read the Python-literal calls");
        }
    }

    // The round-trip set.
    let mut rng = Rng(0x51ED_2701_u64 ^ (name.len() as u64) << 9);
    let mut generic_accept = Vec::new();
    let mut generic_reject = Vec::new();
    for case in 0..MESSAGES {
        let g = generate(&mut rng, spec, case);
        let text = match assistant_text(template, spec, &g) {
            Ok(text) => text,
            Err(e) => {
                if std::env::var_os("GRAMMAR_DEBUG").is_some() {
                    eprintln!("{name} case {case}: no text: {e}");
                }
                continue;
            }
        };
        // Only texts the parser reads back as the calls they render: the
        // grammar must allow what the parser accepts.
        // (Some templates drop some calls from the render: what the text
        // holds is what counts.)
        let got = parse(spec, &g.tools, &text);
        let names: Vec<&str> = got.tool_calls.iter().map(|c| c.name.as_str()).collect();
        let want: Vec<&str> = g.expected.tool_calls.iter().map(|c| c.name.as_str()).filter(|n| text.contains(n)).collect();
        if want.is_empty() || names != want || got.tool_calls.iter().any(|c| !c.complete) {
            if std::env::var_os("GRAMMAR_DEBUG").is_some() {
                eprintln!("{name} case {case}: parsed {names:?}, rendered {want:?}: {text:?}");
            }
            continue;
        }
        let tools = all_required(&g.tools);
        let calls = got.tool_calls.len();
        let label = format!("roundtrip {case}");
        let mut reject = Vec::new();
        // A name the tools do not declare.
        let first = &got.tool_calls[0].name;
        // The rendered call that comes first in the text.
        let idx = g.message["tool_calls"].as_array().and_then(|cs| cs.iter().position(|c| c["function"]["name"] == first.as_str())).unwrap_or(0);
        reject.push(text.replacen(first.as_str(), &format!("{first}x"), 1));
        // A required argument left out.
        let mut missing = Generated { message: g.message.clone(), tools: g.tools.clone(), expected: g.expected.clone() };
        if let Some(args) = missing.message["tool_calls"][idx]["function"]["arguments"].as_object_mut() {
            let key = args.keys().next().cloned();
            if let Some(key) = key {
                args.remove(&key);
                if let Ok(t) = assistant_text(template, spec, &missing) {
                    if t != text {
                        reject.push(t);
                    }
                }
            }
        }
        // Cut off inside the last call's name.
        let last = &got.tool_calls[calls - 1].name;
        if let Some(at) = text.rfind(last.as_str()) {
            generic_reject.push(text[..at + 3].to_string());
        }
        push(format!("{label}/lazy parallel"), grammar(&env, thinking, &Req { tools: &tools, choice: ToolChoice::Auto, parallel: true, schema: None }), vec![text.clone()], reject);
        let single = grammar(&env, thinking, &Req { tools: &tools, choice: ToolChoice::Auto, parallel: false, schema: None });
        if calls == 1 {
            push(format!("{label}/lazy one call"), single, vec![text.clone()], Vec::new());
        } else {
            push(format!("{label}/lazy one call"), single, Vec::new(), vec![text.clone()]);
        }
        // A value of another type than the schema's.
        let call = &g.message["tool_calls"][idx]["function"];
        let fname = call["name"].as_str().unwrap_or("");
        if let Some((key, value)) = call["arguments"].as_object().and_then(|a| a.iter().next()) {
            let mut wrong = tools.clone();
            for t in &mut wrong {
                if t["function"]["name"] == fname {
                    t["function"]["parameters"]["properties"][key] = json!({"type": other_type(value)});
                }
            }
            push(format!("{label}/wrong type"), grammar(&env, thinking, &Req { tools: &wrong, choice: ToolChoice::Auto, parallel: true, schema: None }), Vec::new(), vec![text.clone()]);
        }
        // Required calls: the whole reply must be reasoning and calls.
        if got.content.trim().is_empty() {
            push(format!("{label}/required"), grammar(&env, thinking, &Req { tools: &tools, choice: ToolChoice::Required, parallel: true, schema: None }), vec![text.clone()], Vec::new());
        }
        generic_accept.push(text);
    }
    push("roundtrip/no tools".into(), grammar(&env, thinking, &Req { tools: &[], choice: ToolChoice::Auto, parallel: true, schema: None }), generic_accept, generic_reject);
    cases
}

/// Where a lazy grammar starts in `text` (thinking on), by the trigger's
/// rule: the first trigger word, after the reasoning block when there is one
/// (the emitted `pattern_full` regex says the same; the Python check uses it).
fn constrained_start(spec: &FormatSpec, text: &str) -> Option<usize> {
    let words = chat_parser_generator::ir::build::tool_triggers(spec);
    let (start, end) = (spec.reasoning.start.trim(), spec.reasoning.end.trim());
    let prefill = if spec.generation_prompt.default_thinking.unwrap_or(true) {
        spec.generation_prompt.thinking_prefill
    } else {
        spec.generation_prompt.no_thinking_prefill
    };
    let reasoning = spec.reasoning.mode != ReasoningMode::None && !end.is_empty() && prefill != Prefill::ClosedReasoning;
    let from = if !reasoning {
        0
    } else if prefill == Prefill::OpenReasoning || start.is_empty() || text.trim_start().starts_with(start) {
        text.find(end)? + end.len()
    } else {
        0
    };
    words.iter().filter_map(|w| text[from..].find(w.trim()).map(|p| p + from)).min()
}

/// Runs every case's Lark form through the llguidance crate: accept texts
/// must be accepted, reject texts rejected, from where the grammar starts.
/// Returns the templates with a failure, and one message for each.
fn crate_check(cases: &[Case]) -> Vec<(String, String)> {
    use llguidance::{api::TopLevelGrammar, toktrie::ApproximateTokEnv, Matcher, ParserFactory};
    let env = ApproximateTokEnv::single_byte_env();
    let mut factory = ParserFactory::new_simple(&env).expect("llguidance parser factory");
    factory.quiet();
    let mut failures: Vec<(String, String)> = Vec::new();
    for case in cases {
        if failures.iter().any(|(t, _)| *t == case.template) {
            continue;
        }
        let lark = case.grammar.grammar.to_lark();
        let parser = match factory.create_parser(TopLevelGrammar::from_lark(lark)) {
            Ok(p) => p,
            Err(e) => {
                failures.push((case.template.clone(), format!("{}: does not compile: {e}", case.name)));
                continue;
            }
        };
        let texts = case.accept.iter().map(|t| (t, true)).chain(case.reject.iter().map(|t| (t, false)));
        for ((text, want), start) in texts.zip(&case.starts) {
            let Some(start) = *start else {
                failures.push((case.template.clone(), format!("{}: no trigger in {text:?}", case.name)));
                break;
            };
            let mut m = Matcher::new(Ok(parser.deep_clone()));
            let fed = text.as_bytes()[start..].iter().all(|&b| m.consume_token(u32::from(b)).is_ok());
            let accepted = fed && m.is_accepting().unwrap_or(false);
            if accepted != want {
                let what = if want { "rejected" } else { "accepted" };
                failures.push((case.template.clone(), format!("{}: {what} {:?}", case.name, &text[start..])));
                break;
            }
        }
    }
    failures
}

#[test]
fn corpus_grammars_pass_llguidance() {
    let Some(shared) = common::shared_dir("grammar") else { return };
    let mut all = Vec::new();
    let mut templates = 0;
    let only = std::env::var("GRAMMAR_ONLY").ok();
    for (name, path) in common::corpus_templates(&shared) {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("template");
        let Ok(template) = ChatTemplate::new(&name, &source) else { continue };
        let Ok(analysis) = analyze(&template) else { continue };
        templates += 1;
        all.extend(template_cases(&shared, &name, &template, &analysis.spec));
    }
    let texts: usize = all.iter().map(|c| c.accept.len() + c.reject.len()).sum();
    figure(&format!("grammar: {} grammars over {templates} templates, {texts} texts", all.len()));
    // Templates whose rendered calls the parser reads back give the
    // round-trip texts; the others (no tool calls in the format, or a round
    // trip that fails: docs/roundtrip-failures.md) are checked on the
    // grammars alone.
    let mut with_texts: Vec<&str> = all.iter().filter(|c| c.name.starts_with("roundtrip ") && !c.accept.is_empty()).map(|c| c.template.as_str()).collect();
    with_texts.dedup();
    let rendered: usize = all.iter().filter(|c| c.name.ends_with("/lazy parallel") && c.name.starts_with("roundtrip ")).map(|c| c.accept.len()).sum();
    figure(&format!("grammar: {} templates with round-trip texts ({rendered} rendered replies)", with_texts.len()));
    let known: Vec<String> = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/grammar/known-failures.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    let failures = crate_check(&all);
    for (template, message) in &failures {
        let mut message = message.clone();
        message.truncate(300);
        println!("  FAIL {template} [lark, llguidance crate] {message}");
    }
    figure(&format!("grammar (llguidance crate, Lark form): {}/{templates} templates accept all, reject all", templates - failures.len()));
    let unexpected: Vec<&String> = failures.iter().map(|(t, _)| t).filter(|t| !known.contains(t)).collect();
    assert!(unexpected.is_empty(), "grammar failures not in tests/grammar/known-failures.txt: {unexpected:?}");

    let file = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("grammar_cases.json");
    let cases: Vec<Value> = all.iter().map(Case::to_json).collect();
    std::fs::write(&file, serde_json::to_string(&json!({ "cases": cases })).expect("json")).expect("write cases");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::process::Command::new("python3")
        .current_dir(&root)
        .arg("tests/grammar/check.py")
        .arg(&file)
        .arg("--known-failures")
        .arg("tests/grammar/known-failures.txt")
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => {
            figure(&format!("grammar: SKIP (python3 not runnable: {e})"));
            return;
        }
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.starts_with("grammar") {
            figure(line);
        } else {
            println!("{line}");
        }
    }
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    match out.status.code() {
        Some(0) => {}
        Some(3) => figure("grammar: SKIP (llguidance not installed: pip install llguidance)"),
        other => panic!("grammar check failed ({other:?}); cases in {}", file.display()),
    }
}

