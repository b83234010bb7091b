//! Builders: from a [`FormatSpec`] and the request's [`ParseOptions`] to the
//! format IR.
//!
//! The output grammar has one skeleton for every generic format:
//!
//! ```text
//! reply     = prefill? reasoning? body $
//! reasoning = START reasoning-text END space           (when reasoning is extracted)
//! body      = content { TOOL-TRIGGER tools content | CONTENT-START wrapped content }*
//! ```
//!
//! Markers are matched without their surrounding whitespace, and whitespace
//! is allowed between markup pieces: templates write `"\n"` around markers,
//! models often do and sometimes don't.
//!
//! Argument values in tagged formats are typed from the tool's JSON schema:
//! a value whose schema type is `string` is taken raw (one newline next to
//! each tag is the template's layout, not the value); a value of any other
//! single type is JSON. **Without a schema type** (no tools given, an
//! argument the schema does not declare, or a type list mixing string and
//! other types) a value is JSON when the whole raw text parses as JSON, and a
//! string otherwise.

use serde_json::Value;

use super::{Alt, JsonKind, Mark, Node, TextKind};
use crate::spec::*;

/// How reasoning is reported (the server's `reasoning_format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReasoningFormat {
    /// Reasoning stays in the content, markers included.
    None,
    /// Reasoning is extracted into `reasoning_content`.
    #[default]
    Auto,
    /// Same as `Auto` (the name DeepSeek's API uses).
    Deepseek,
}

/// The request's `tool_choice`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolChoice {
    #[default]
    Auto,
    Required,
    None,
}

/// The request options that shape the output grammar.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseOptions {
    pub enable_thinking: bool,
    pub reasoning_format: ReasoningFormat,
    pub parallel_tool_calls: bool,
    /// OpenAI tool definitions (`{"type": "function", "function": {...}}`).
    pub tools: Vec<Value>,
    pub tool_choice: ToolChoice,
    /// Structured output: the reply is one JSON value matching this schema.
    pub json_schema: Option<Value>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            enable_thinking: true,
            reasoning_format: ReasoningFormat::Auto,
            parallel_tool_calls: false,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            json_schema: None,
        }
    }
}

/// A declared tool: its name and argument types. The grammar does not
/// contain tool names; a parser checks a call's name and types its arguments
/// against these at run time (so one generated parser serves any tool list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSignature {
    pub name: String,
    /// `(argument name, value type)` in schema order.
    pub args: Vec<(String, ValueKind)>,
}

impl ToolSignature {
    /// The declared type of an argument (`Auto` when it is not declared).
    pub fn arg_type(&self, arg: &str) -> ValueKind {
        self.args.iter().find(|(name, _)| name == arg).map(|(_, t)| *t).unwrap_or(ValueKind::Auto)
    }

    /// The one argument, where the tool declares exactly one and of type
    /// string ([`chat_parser_runtime::Tool::sole_string_arg`]).
    pub fn sole_string_arg(&self) -> Option<&str> {
        chat_parser_runtime::sole_string_arg(self.args.iter().map(|(name, t)| (name.as_str(), *t)))
    }
}

/// How an argument value is read (the runtime's type, by schema).
pub use chat_parser_runtime::ArgType as ValueKind;

/// The tools of a request, as parsers check names and type arguments.
pub fn tool_signatures(options: &ParseOptions) -> Vec<ToolSignature> {
    tools_of(options)
}

fn value_kind(schema: &Value) -> ValueKind {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
        _ => {
            if schema.get("enum").and_then(Value::as_array).is_some_and(|e| !e.is_empty() && e.iter().all(Value::is_string)) {
                return ValueKind::String;
            }
            return ValueKind::Auto;
        }
    };
    let nullable = matches!(schema.get("type"), Some(Value::Array(ts)) if ts.iter().any(|t| t == "null"));
    match types.as_slice() {
        ["string"] if nullable => ValueKind::StringOrNull,
        ["string"] => ValueKind::String,
        [] => ValueKind::Auto,
        ts if ts.contains(&"string") => ValueKind::Auto,
        _ => ValueKind::Json,
    }
}

fn tools_of(options: &ParseOptions) -> Vec<ToolSignature> {
    let tools: Vec<ToolSignature> = options
        .tools
        .iter()
        .filter_map(|t| {
            let f = t.get("function").unwrap_or(t);
            let name = f.get("name")?.as_str()?.to_string();
            let args = f
                .get("parameters")
                .and_then(|p| p.get("properties"))
                .and_then(Value::as_object)
                .map(|props| props.iter().map(|(k, v)| (k.clone(), value_kind(v))).collect())
                .unwrap_or_default();
            Some(ToolSignature { name, args })
        })
        .collect();
    tools
}

fn lit(s: &str) -> Node {
    Node::lit(s.trim())
}

/// `space MARKER` if the marker is not empty.
fn marker(s: &str) -> Node {
    if s.trim().is_empty() {
        Node::Empty
    } else {
        Node::seq(vec![Node::Space, lit(s)])
    }
}

/// `space MARKER`, or nothing where the output leaves the marker out (GLM
/// 4.7 drops `<arg_value>` under load, vLLM #49248: `k</arg_key>v</arg_value>`);
/// for parsers only, grammars write the marker.
fn marker_or_missing(s: &str) -> Node {
    marker_or_missing_before(s, Node::Empty)
}

/// [`marker_or_missing`], left out only where `next` follows (a lookahead;
/// `Node::Empty`: anywhere): Mistral's `[ARGS]` where the arguments' `{`
/// comes right after the name.
fn marker_or_missing_before(s: &str, next: Node) -> Node {
    if s.trim().is_empty() {
        return Node::Empty;
    }
    let guard = if next == Node::Empty { Node::Empty } else { Node::Peek(Box::new(next)) };
    Node::Choice(vec![Alt { guard: Node::seq(vec![Node::Space, lit(s)]), body: Node::Empty }, Alt::lenient(guard, Node::Empty)])
}

/// `space MARKER` where the output writes the marker; where it leaves it
/// out, nothing, but only when one of `outer` (the closers of what encloses
/// it) comes next: a value or call whose own closer is missing ends at its
/// enclosing closer (`</parameter>` missing before `</function>`). At the
/// end of the output nothing comes next, so a call cut off there stays cut
/// off. The leniency is for parsers only ([`Alt::lenient`]): grammars write
/// the marker.
fn closer(s: &str, outer: &[String]) -> Node {
    closer_after(Node::Space, s, outer)
}

/// [`closer`] after `before` (whitespace, or nothing where the text before
/// runs up to the marker: a raw value, whose grammar must not meet
/// whitespace it could also end with).
fn closer_after(before: Node, s: &str, outer: &[String]) -> Node {
    let m = s.trim();
    let outer: Vec<&String> = outer.iter().filter(|o| !o.is_empty() && o.as_str() != m).collect();
    if m.is_empty() {
        return Node::Empty;
    }
    if outer.is_empty() {
        return Node::seq(vec![before, Node::lit(m)]);
    }
    let mut alts = vec![Alt { guard: Node::seq(vec![before.clone(), Node::lit(m)]), body: Node::Empty }];
    for o in outer {
        alts.push(Alt::lenient(Node::Peek(Box::new(Node::seq(vec![before.clone(), Node::lit(o.clone())]))), Node::Empty));
    }
    Node::Choice(alts)
}

/// The closers of a call and its section, innermost first (what a value's
/// or a call's own closer may be missing before).
fn call_closers(spec: &FormatSpec, with_function_close: bool) -> Vec<String> {
    let t = &spec.tools;
    let mut out: Vec<String> = Vec::new();
    let candidates = [with_function_close.then_some(&t.function.close), Some(&t.format.per_call_end), Some(&t.format.section_end)];
    for c in candidates.into_iter().flatten() {
        let c = c.trim();
        if !c.is_empty() && !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
    out
}

/// `first` (the arguments' own end marker), then the call's closers: what
/// may follow arguments whose last closers are missing.
fn closers_from(first: &str, spec: &FormatSpec) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in std::iter::once(first.trim().to_string()).chain(call_closers(spec, true)) {
        if !m.is_empty() && !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// Builds the output grammar for a spec and request.
pub fn build(spec: &FormatSpec, options: &ParseOptions) -> Node {
    let node = build_reply(spec, options);
    match tool_namespace(spec) {
        Some(ns) => {
            let spellings = other_spellings(&ns, &spec.tools.format.namespace_bars);
            namespace_optional(node, &ns, &spellings)
        }
        None => node,
    }
}

/// The namespace every tool marker of a tag format writes right after its
/// `<` or `</`, as a special token between two bars: DeepSeek V3.2's
/// `｜DSML｜` (`<｜DSML｜invoke name="…">`, `</｜DSML｜parameter>`). `None`
/// when the markers share none (DeepSeek V3.1's `<｜tool▁call▁begin｜>` and
/// `<｜tool▁sep｜>` share only a bar).
fn tool_namespace(spec: &FormatSpec) -> Option<String> {
    let tails: Vec<&str> = spec.tools.markers().iter().filter_map(|m| m.trim().strip_prefix("</").or_else(|| m.trim().strip_prefix('<'))).collect();
    let first = *tails.first()?;
    let bar = first.chars().next().filter(|c| matches!(c, '｜' | '|'))?;
    let shared = tails.iter().fold(first.len(), |n, t| n.min(crate::diff::common_prefix_len(first, t)));
    // Up to the bar that closes the token (not one inside a marker's name).
    let end = first[..shared].rfind(bar)?;
    let ns = &first[..end + bar.len_utf8()];
    (tails.len() >= 3 && ns.chars().count() > 2).then(|| ns.to_string())
}

/// One way a model writes a tool namespace besides the template's.
#[derive(Debug, Clone, PartialEq)]
struct Spelling {
    ns: String,
    /// The namespace between other bars ([`ToolFormat::namespace_bars`]),
    /// which is markup anywhere: content and reasoning end there too, and
    /// only the template's own forms are read so spelled (not a lenient
    /// form as well, such as a misspelled closer: the two at once are not
    /// seen, and each spelling of a form costs states). Without the
    /// namespace, a marker (`<function_calls>`) is a word prose may hold.
    ///
    /// [`ToolFormat::namespace_bars`]: crate::spec::ToolFormat::namespace_bars
    bars: bool,
}

/// The other spellings of `ns`, a token between two bars: without it, and
/// between each of `bars` (`｜DSML｜` with `["|"]`: `""`, `|DSML|`).
fn other_spellings(ns: &str, bars: &[String]) -> Vec<Spelling> {
    let bar = ns.chars().next().map_or(0, char::len_utf8);
    let word = ns.get(bar..ns.len().saturating_sub(bar)).unwrap_or(ns);
    let mut out = vec![Spelling { ns: String::new(), bars: false }];
    out.extend(bars.iter().map(|b| format!("{b}{word}{b}")).filter(|s| s != ns).map(|ns| Spelling { ns, bars: true }));
    out
}

/// `node` with every marker that holds `ns` also read in its other
/// `spellings` (for parsers only). Without the namespace, as models of
/// DeepSeek V3.2 and V4 write some tags
/// (`<parameter name="city">Seoul</｜DSML｜parameter>`, the whole section
/// as `<function_calls>…`): sglang's DSML detector reads either on any
/// tag. Between other bars (`<|DSML|invoke name="…">`): see
/// [`Spelling::bars`]. A guard that ends with such a marker looks for any
/// form and its body reads it; markup in a body is any form; text inside
/// a call (a value, a name) and JSON values end at markers in any form.
/// Content and reasoning end at the spellings between other bars only: a
/// bare `<function_calls>` in prose is text, and so is a whole section
/// written without the namespace (its opener is the one marker the output
/// has nothing but prose to tell by).
fn namespace_optional(node: Node, ns: &str, spellings: &[Spelling]) -> Node {
    let again = |n: Node| namespace_optional(n, ns, spellings);
    match node {
        Node::Literal(m) if m.contains(ns) => {
            let others = spellings.iter().map(|s| Alt::lenient(Node::Literal(m.replace(ns, &s.ns)), Node::Empty));
            Node::Choice(std::iter::once(Alt { guard: Node::Literal(m.clone()), body: Node::Empty }).chain(others).collect())
        }
        Node::Seq(items) => Node::Seq(items.into_iter().map(again).collect()),
        Node::Choice(alts) => Node::Choice(alts.into_iter().map(|a| with_spelled_guard(a, ns, spellings)).collect()),
        Node::Repeat { alts, limits, recover } => Node::Repeat {
            alts: alts.into_iter().map(|a| with_spelled_guard(a, ns, spellings)).collect(),
            limits,
            recover: recover.map(|r| Box::new(again(*r))),
        },
        Node::Until { stops, kind, trim_newlines, closers } => {
            let prose = matches!(kind, TextKind::Content | TextKind::Reasoning);
            let respell = |markers: &[String]| respelled(markers, ns, spellings, prose, &closers);
            Node::Until { stops: respell(&stops), kind, trim_newlines, closers: respell(&closers) }
        }
        Node::Json { kind, schema, python, marker, ends } => {
            let ends = respelled(&ends, ns, spellings, false, &[]);
            Node::Json { kind, schema, python, marker, ends }
        }
        Node::ByToolName { stops, declared, other } => {
            Node::ByToolName { stops, declared: Box::new(again(*declared)), other: Box::new(again(*other)) }
        }
        Node::ByArgType { string, json, auto } => Node::ByArgType {
            string: Box::new(again(*string)),
            json: Box::new(again(*json)),
            auto: Box::new(again(*auto)),
        },
        other => other,
    }
}

/// `stops` and, after them, the other spellings of those that hold `ns`:
/// in `prose` (content, reasoning) only between other bars; between other
/// bars, not a misspelling of one of the text's `closers` (its stem then
/// another byte: `</｜DSML｜parameter/`), which only the template's bars
/// and none are read in ([`Spelling::bars`]).
fn respelled(stops: &[String], ns: &str, spellings: &[Spelling], prose: bool, closers: &[String]) -> Vec<String> {
    let misspelled = |m: &str| closers.iter().filter_map(|c| c.strip_suffix('>')).any(|stem| m.starts_with(stem) && !closers.iter().any(|c| c == m));
    let mut out = stops.to_vec();
    for m in stops.iter().filter(|m| m.contains(ns)) {
        for s in spellings.iter().filter(|s| if s.bars { !misspelled(m) } else { !prose }) {
            let other = m.replace(ns, &s.ns);
            if !out.contains(&other) {
                out.push(other);
            }
        }
    }
    out
}

/// An alternative of a choice or loop with its body's markup read in every
/// spelling of the namespace. A guard that ends with a marker holding `ns`
/// (`Space` then `<｜DSML｜parameter name="`) only looks for it, in any
/// form, and the body reads it (the other forms lenient): the body is not
/// written once per form, and grammars keep the template's marker. A
/// lenient alternative's marker is not read between other bars
/// ([`Spelling::bars`]).
fn with_spelled_guard(alt: Alt, ns: &str, spellings: &[Spelling]) -> Alt {
    let lenient = alt.is_lenient();
    let body = namespace_optional(alt.body, ns, spellings);
    let mut items = match alt.guard {
        Node::Seq(items) => items,
        other => vec![other],
    };
    match items.last() {
        Some(Node::Literal(m)) if m.contains(ns) && !items[..items.len() - 1].iter().any(|n| holds(n, ns)) => {
            let m = m.clone();
            let own: Vec<Spelling> = spellings.iter().filter(|s| !(lenient && s.bars)).cloned().collect();
            let forms = std::iter::once(m.clone()).chain(own.iter().map(|s| m.replace(ns, &s.ns)));
            items.pop();
            items.push(Node::Peek(Box::new(Node::one_of(forms))));
            Alt { guard: Node::seq(items), body: Node::seq(vec![namespace_optional(Node::Literal(m), ns, &own), body]) }
        }
        _ => Alt { guard: Node::seq(items), body },
    }
}

/// Whether a literal in `node` holds `ns`.
fn holds(node: &Node, ns: &str) -> bool {
    match node {
        Node::Literal(m) => m.contains(ns),
        Node::Seq(items) => items.iter().any(|n| holds(n, ns)),
        Node::Choice(alts) | Node::Repeat { alts, .. } => alts.iter().any(|a| holds(&a.guard, ns) || holds(&a.body, ns)),
        Node::Peek(inner) => holds(inner, ns),
        _ => false,
    }
}

fn build_reply(spec: &FormatSpec, options: &ParseOptions) -> Node {
    let extract = options.reasoning_format != ReasoningFormat::None && spec.reasoning.mode != ReasoningMode::None;
    let (prompt, prefill) = if options.enable_thinking {
        (&spec.generation_prompt.thinking, spec.generation_prompt.thinking_prefill)
    } else {
        (&spec.generation_prompt.no_thinking, spec.generation_prompt.no_thinking_prefill)
    };
    let start = spec.reasoning.start.trim();
    let end = spec.reasoning.end.trim();
    let layout = spec.reasoning.start.ends_with('\n') || spec.reasoning.end.starts_with('\n');
    let tools_active =
        options.tool_choice != ToolChoice::None && !options.tools.is_empty() && spec.tools.format.mode != ToolFormatMode::None;
    if spec.channels.is_used() {
        // Harmony: the reply is channel messages (a structured reply is the
        // final channel's body).
        return super::channels::reply(spec, options.reasoning_format != ReasoningFormat::None, tools_active);
    }
    if !spec.tools.format.content_recipient.is_empty() && options.json_schema.is_none() {
        return addressed_blocks(spec, tools_active);
    }
    // Where reasoning ends: its end marker, and for families whose models
    // start calling tools inside an open block, where calls start.
    let mut reasoning_ends = vec![end.to_string()];
    // What opens calls, where they end reasoning.
    let mut call_openers: Vec<String> = Vec::new();
    // Where they end it: a marker written like text only at a line's start.
    let mut call_ends: Vec<String> = Vec::new();
    if spec.reasoning.ended_by_calls && tools_active && options.json_schema.is_none() {
        call_openers.extend(tool_triggers(spec));
        call_openers.extend(spec.tools.format.section_aliases.iter().map(|(start, _)| start.trim().to_string()).filter(|s| !s.is_empty()));
        call_openers.extend(bare_call_opener(spec).map(str::to_string));
        // A marker written like a special token opens a call wherever it
        // is; one written like text (`<tool_call>`) only at the start of a
        // line, as templates write calls: inside a sentence it is the
        // reasoning mentioning a call.
        call_ends.extend(call_openers.iter().map(|o| if written_like_a_token(o) { o.clone() } else { format!("\n{o}") }));
        reasoning_ends.extend(call_ends.iter().cloned());
    }
    // A turn's end closes an open block too (the reply ended in it).
    let end_of_turn = end_of_turn(spec);
    reasoning_ends.extend(end_of_turn.iter().filter(|e| **e != end).cloned());
    let mut block_rest = reasoning_block_rest(&reasoning_ends, layout);
    if !call_openers.is_empty() {
        // The line break before a call that ended the block is layout.
        block_rest = Node::seq(vec![block_rest, Node::Space]);
    }
    if let Some(call) = call_after_block(spec, options.parallel_tool_calls).filter(|_| tools_active && options.json_schema.is_none()) {
        block_rest = Node::seq(vec![block_rest, call]);
    }
    let mut items = Vec::new();

    match prefill {
        Prefill::OpenReasoning => {
            // The prompt opened the block: the output starts inside it.
            let from_start = if start.is_empty() { "" } else { prompt.rfind(start).map(|p| &prompt[p..]).unwrap_or("") };
            if extract {
                let boilerplate = from_start.get(start.len()..).unwrap_or("").trim();
                if !boilerplate.is_empty() {
                    items.push(Node::Mark(Mark::Prefilled(TextKind::Reasoning, format!("{boilerplate}\n"))));
                }
                // Models echo the opener the prompt already wrote
                // (`<think>\n<think>\n…`, Qwen3.5; vLLM's reasoning
                // parsers drop it): markup, not reasoning.
                items.push(opener_again(start));
                items.push(block_unless_calling(&block_rest, &call_openers));
            } else if !from_start.is_empty() {
                // Reasoning stays content, so the content starts with what the prompt opened.
                items.push(Node::Mark(Mark::Prefilled(TextKind::Content, from_start.to_string())));
            }
        }
        Prefill::ClosedReasoning => {}
        Prefill::Nothing => {
            if extract && !start.is_empty() && !end.is_empty() {
                // The opener written twice (`<think>\n<think>\n…`: GLM-4.5
                // in an OpenHands trajectory, zai-org/GLM-4.5 #60): the
                // second is markup too.
                let block = Node::seq(vec![opener_again(start), block_rest.clone()]);
                let mut alts: Vec<Alt> = reasoning_openers(start)
                    .into_iter()
                    .map(|opener| Alt { guard: Node::seq(vec![Node::Space, Node::lit(opener)]), body: block.clone() })
                    .collect();
                alts.push(Alt { guard: Node::Empty, body: Node::Empty });
                items.push(Node::Choice(alts));
            } else if extract && start.is_empty() && !end.is_empty() {
                // Delimiter style: no start marker, the reply begins with its
                // reasoning and only the end marker closes it. A streaming
                // parser cannot wait for a marker that may never come, so a
                // reply without the end marker is all reasoning.
                items.push(block_unless_calling(&block_rest, &call_openers));
            }
        }
    }

    if let Some(schema) = &options.json_schema {
        // Models often fence the JSON as a Markdown code block (```json ... ```):
        // the fence is markup, not the reply.
        let fence = FENCE;
        items.push(Node::Space);
        items.push(Node::optional(Node::lit(fence), Node::seq(vec![Node::optional(Node::lit("json"), Node::Empty), Node::Space])));
        items.push(Node::Json { kind: JsonKind::Content, schema: Some(schema.clone()), python: false, marker: String::new(), ends: Vec::new() });
        items.push(Node::Space);
        items.push(Node::optional(Node::lit(fence), Node::Space));
        if !end_of_turn.is_empty() {
            let mut ends: Vec<Alt> = end_of_turn.iter().map(|e| Alt::lenient(Node::lit(e.clone()), Node::Space)).collect();
            ends.push(Alt { guard: Node::Empty, body: Node::Empty });
            items.push(Node::Choice(ends));
        }
        items.push(Node::End);
        return Node::seq(items);
    }

    let wrapper = (spec.content.mode != ContentMode::Plain && !spec.content.start.trim().is_empty())
        .then(|| (spec.content.start.trim().to_string(), spec.content.end.trim().to_string()));

    let mut stops = Vec::new();
    let mut alts = Vec::new();
    let mut limits = Vec::new();
    // A format without any marker in front of its calls cannot be told from
    // content: it needs a dedicated parser (Gemma 4's `call:` syntax).
    let section = tools_active.then(|| tool_section(spec, options.parallel_tool_calls)).filter(|(t, _, _)| !t.trim().is_empty());
    // Calls can end the block the prompt opened, and the model then closes
    // the block right after them (GLM-4.7: `…<tool_call>…</tool_call>
    // </think>`, opencode #6883): that end marker is markup. (Whatever the
    // request: the grammar's variants then share one loop, where a
    // condition on the options would copy it into each; after calls the
    // marker is markup in any variant.)
    let closes_block = spec.reasoning.ended_by_calls && !spec.reasoning.interleaved && !end.is_empty();
    let section = section.map(|(trigger, guard, calls)| {
        if !closes_block {
            return (trigger, guard, calls);
        }
        let block_end = Node::lenient_optional(Node::seq(vec![Node::Space, Node::lit(end)]), Node::Space);
        (trigger, guard, Node::seq(vec![calls, block_end]))
    });
    if let Some((trigger, guard, calls)) = section {
        stops.push(trigger);
        // The same calls after a token models write before them.
        let prefix = spec.tools.format.call_prefix.trim();
        let prefixed = (!prefix.is_empty()).then(|| Node::seq(vec![Node::Space, calls.clone()]));
        let typed = bare_json_calls(spec).then(|| calls.clone());
        // Calls with no markup around them, fenced as a Markdown code block
        // (Llama 3.2: "```json\n{\"name\": …}\n```"; llama.cpp's
        // parser takes the fence as the call's opener, vLLM's Llama parser
        // reports no content beside calls): the fence is markup. Only where
        // a call starts right after the fence's first line: other code
        // blocks stay content.
        // (Not for the call objects of `unwrapped_call_object`: a
        // fence as a stop of their content makes every Markdown code span
        // leave the streaming fast path, +50% instructions on QwQ's text.)
        let fenced = match &guard {
            Node::Peek(start) => Some(fenced_calls(start, &calls)),
            _ => None,
        };
        // The calls after the opener, where the model left it out: the
        // same node as the opener's body (one copy of its states).
        let unwrapped = unwrapped_call_object(spec)
            .or_else(|| unwrapped_call_list(spec))
            .map(|start| (start.clone(), Node::Peek(Box::new(Node::lit(start))), calls.clone()));
        alts.push(Alt { guard, body: calls });
        // One call (or one section of calls) unless parallel calls are on.
        limits.push((!options.parallel_tool_calls).then_some(1));
        if let Some((trigger, guard, body)) = unwrapped {
            stops.push(trigger);
            alts.push(Alt::lenient(guard, body));
            limits.push((!options.parallel_tool_calls).then_some(1));
        }
        if let Some(fenced) = fenced {
            stops.push(FENCE.to_string());
            alts.push(fenced);
            limits.push((!options.parallel_tool_calls).then_some(1));
        }
        // The same section under the other markers models write for it
        // (`section_aliases`): read, never written by grammars.
        for (start, end) in &spec.tools.format.section_aliases {
            let mut alias = spec.clone();
            (alias.tools.format.section_start, alias.tools.format.section_end) = (start.clone(), end.clone());
            let (trigger, guard, calls) = tool_section(&alias, options.parallel_tool_calls);
            if !trigger.trim().is_empty() && !stops.contains(&trigger) {
                stops.push(trigger);
                alts.push(Alt::lenient(guard, calls));
                limits.push((!options.parallel_tool_calls).then_some(1));
            }
        }
        if let Some(body) = typed {
            // The same calls with the tool's type first (see `json_call`).
            stops.push(TYPED_CALL.to_string());
            alts.push(Alt::lenient(Node::Peek(Box::new(Node::lit(TYPED_CALL))), body));
            limits.push((!options.parallel_tool_calls).then_some(1));
        }
        if let Some(body) = prefixed {
            stops.push(prefix.to_string());
            alts.push(Alt::lenient(Node::lit(prefix), body));
            limits.push((!options.parallel_tool_calls).then_some(1));
        }
        if let Some(opener) = bare_call_opener(spec) {
            stops.push(opener.to_string());
            alts.push(Alt { guard: Node::lit(opener), body: bare_calls(spec, options.parallel_tool_calls) });
            limits.push((!options.parallel_tool_calls).then_some(1));
        }
        for (opener, body) in unwrapped_calls(spec, &stops) {
            stops.push(opener.clone());
            alts.push(Alt::lenient(Node::lit(opener), body));
            limits.push((!options.parallel_tool_calls).then_some(1));
        }
    }
    if let Some((open, close)) = &wrapper {
        stops.push(open.clone());
        let body = if close.is_empty() {
            Node::rest(TextKind::Content)
        } else {
            let mut ends = vec![close.clone()];
            ends.extend(end_of_turn.iter().filter(|e| *e != close).cloned());
            Node::seq(vec![
                Node::Until { stops: ends, kind: TextKind::Content, trim_newlines: false, closers: Vec::new() },
                Node::optional(Node::lit(close.clone()), Node::Empty),
            ])
        };
        alts.push(Alt { guard: Node::lit(open.clone()), body: Node::seq(vec![Node::Mark(Mark::Commit), body]) });
        limits.push(None);
    }
    if spec.content.mode == ContentMode::EndDelimited && !spec.content.end.trim().is_empty() {
        // Content ends at a marker (which is not content); text may follow.
        let end = spec.content.end.trim().to_string();
        stops.push(end.clone());
        alts.push(Alt { guard: Node::lit(end), body: Node::seq(vec![Node::Mark(Mark::Commit), Node::Space]) });
        limits.push(None);
    }
    if spec.reasoning.interleaved && extract && !start.is_empty() && !end.is_empty() {
        // Thinking again after content; a lone end marker is markup. A
        // call ends this block too where calls end the first one.
        let mut ends = vec![end.to_string()];
        ends.extend(call_ends.iter().cloned());
        stops.push(start.to_string());
        alts.push(Alt { guard: Node::lit(start), body: Node::seq(vec![Node::Mark(Mark::Commit), reasoning_block_rest(&ends, layout)]) });
        limits.push(None);
        stops.push(end.to_string());
        alts.push(Alt { guard: Node::lit(end), body: Node::seq(vec![Node::Mark(Mark::Commit), Node::Space]) });
        limits.push(None);
    }
    // The turn's end (a server that does not strip stop tokens passes it
    // on) is markup: it and the whitespace after it are dropped. Text a
    // model writes after it stays content, so nothing is lost. Grammars
    // leave it to the engine's stop tokens.
    for eot in end_of_turn.iter().filter(|e| !stops.contains(e)).collect::<Vec<_>>() {
        stops.push(eot.clone());
        alts.push(Alt::lenient(Node::lit(eot.clone()), Node::seq(vec![Node::Mark(Mark::Commit), Node::Space])));
        limits.push(None);
    }
    let content = Node::Until { stops: stops.clone(), kind: TextKind::Content, trim_newlines: false, closers: Vec::new() };
    items.push(content.clone());
    if !alts.is_empty() {
        // Every round ends with the content that follows it.
        for alt in &mut alts {
            alt.body = Node::seq(vec![std::mem::replace(&mut alt.body, Node::Empty), content.clone()]);
        }
        items.push(Node::Repeat { alts, limits, recover: Some(Box::new(content)) });
    }
    items.push(Node::End);
    Node::seq(items)
}

/// A call written right after the reasoning block without its opener,
/// where the format's name prefix is a word after a token opener: Gemma 4
/// "frequently" goes from `<channel|>` straight to `call:bash{…}` (vLLM
/// #54256). The prefix opens the call there, and only there: elsewhere the
/// word is prose (and a stop on its first letter would take every chunk of
/// text off the streaming fast path). The call is then read as one after
/// its opener: its name is checked against the declared tools (a body that
/// fails before it is content), and once named, the call is committed, so
/// text after it without the closer is content after a call, while an
/// output that ends inside it is cut off. For parsers only; `None` for
/// other formats.
fn call_after_block(spec: &FormatSpec, parallel: bool) -> Option<Node> {
    word_prefix_tail(spec)?;
    let prefix = spec.tools.function.name_prefix.trim();
    let (_, _, calls) = tool_section(spec, parallel);
    let at_prefix = Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::lit(prefix)])));
    Some(Node::Repeat { alts: vec![Alt::lenient(at_prefix, calls)], limits: vec![Some(1)], recover: Some(Box::new(Node::Empty)) })
}

/// The reasoning block the reply starts in (`block`), unless a call starts
/// the reply (where calls end the block: `call_openers`); the block ended
/// the line before it.
fn block_unless_calling(block: &Node, call_openers: &[String]) -> Node {
    if call_openers.is_empty() {
        return block.clone();
    }
    let openers = Node::one_of(call_openers.iter().cloned());
    let at_once = Node::Peek(Box::new(Node::seq(vec![Node::Space, openers])));
    Node::Choice(vec![Alt { guard: at_once, body: Node::Space }, Alt { guard: Node::Empty, body: block.clone() }])
}

/// The template's end-of-turn markers ([`crate::spec::ContentSpec::end_of_turn`]):
/// each as the template writes it, whitespace before it included (that
/// whitespace is layout, not the reply's), and bare, as a model may write
/// it.
fn end_of_turn(spec: &FormatSpec) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in &spec.content.end_of_turn {
        for form in [e.trim_end(), e.trim()] {
            if !form.is_empty() && !out.iter().any(|o| o == form) {
                out.push(form.to_string());
            }
        }
    }
    out
}

/// A reply of addressed blocks (Functionary v3.2): `>>>all\nTEXT` is
/// content and `>>>NAME\n{json}` a call. The generation prompt wrote the
/// first opener, so the reply starts inside the first block; a block whose
/// recipient is neither the content recipient nor a declared tool is
/// content as written.
fn addressed_blocks(spec: &FormatSpec, tools_active: bool) -> Node {
    let f = &spec.tools.format;
    let opener = f.per_call_start.trim().to_string();
    let after_recipient = spec.tools.function.name_suffix.clone();
    let end_of_turn = end_of_turn(spec);
    let mut stops = vec![opener.clone()];
    stops.extend(end_of_turn.iter().cloned());
    let content = Node::Until { stops, kind: TextKind::Content, trim_newlines: false, closers: Vec::new() };
    let mut kinds = vec![Alt {
        guard: Node::lit(format!("{}{after_recipient}", f.content_recipient)),
        body: Node::seq(vec![Node::Mark(Mark::Commit), content.clone()]),
    }];
    if tools_active {
        let call = Node::seq(vec![
            Node::Mark(Mark::ToolOpen),
            Node::Until { stops: vec![after_recipient.clone()], kind: TextKind::ToolName, trim_newlines: false, closers: Vec::new() },
            Node::lit(after_recipient.clone()),
            Node::Space,
            Node::Json { kind: JsonKind::ToolArgs, schema: None, python: f.python_dict_arguments, marker: String::new(), ends: Vec::new() },
        ]);
        kinds.push(Alt { guard: Node::Empty, body: Node::seq(vec![closed(spec, call), content.clone()]) });
    }
    let block = Node::Choice(kinds);
    let prefilled = spec.generation_prompt.thinking.trim_end().ends_with(opener.as_str());
    let mut alts = vec![Alt { guard: Node::lit(opener), body: block.clone() }];
    let mut limits = vec![None];
    // The turn's end is markup (as in `build`).
    for eot in end_of_turn {
        alts.push(Alt::lenient(Node::lit(eot), Node::seq(vec![Node::Mark(Mark::Commit), Node::Space, content.clone()])));
        limits.push(None);
    }
    if prefilled {
        alts.push(Alt { guard: Node::Empty, body: block });
        limits.push(Some(1));
    }
    Node::seq(vec![Node::Repeat { alts, limits, recover: Some(Box::new(content)) }, Node::End])
}

/// The text that starts tool calls in this format (what switches a lazy
/// grammar on); empty when the format has no tool calls or no marker.
pub fn tool_triggers(spec: &FormatSpec) -> Vec<String> {
    if spec.tools.format.mode == ToolFormatMode::None {
        return Vec::new();
    }
    if spec.channels.is_used() {
        return vec![super::channels::trigger(spec)];
    }
    let (trigger, _, _) = tool_section(spec, false);
    if trigger.trim().is_empty() {
        Vec::new()
    } else {
        vec![trigger]
    }
}

/// The tool calls from their trigger on, for a grammar: the section (or
/// the first call), the content after it and, for formats whose every call
/// starts with the trigger, further calls when parallel calls are on. `None` when the format
/// has no tool calls or nothing marks them.
pub fn tool_calls(spec: &FormatSpec, parallel: bool) -> Option<Node> {
    if spec.tools.format.mode == ToolFormatMode::None {
        return None;
    }
    if spec.channels.is_used() {
        // Each call is a message of its own, after any reasoning or content.
        let call = super::channels::calls(spec);
        let content = Node::Until { stops: vec![super::channels::trigger(spec)], kind: TextKind::Content, trim_newlines: false, closers: Vec::new() };
        let again = Alt { guard: Node::Empty, body: Node::seq(vec![content, call.clone()]) };
        return Some(if parallel { Node::seq(vec![call, Node::Repeat { alts: vec![again], limits: vec![None], recover: None }]) } else { call });
    }
    let (trigger, guard, body) = tool_section(spec, parallel);
    if trigger.trim().is_empty() {
        return None;
    }
    // The content after the calls, as the parser reads it (some templates
    // write content after them): up to the next trigger or content marker.
    let mut stops = vec![trigger.clone()];
    if spec.content.mode != ContentMode::Plain && !spec.content.start.trim().is_empty() {
        stops.push(spec.content.start.trim().to_string());
    }
    if spec.content.mode == ContentMode::EndDelimited && !spec.content.end.trim().is_empty() {
        stops.push(spec.content.end.trim().to_string());
    }
    let content = Node::Until { stops, kind: TextKind::Content, trim_newlines: false, closers: Vec::new() };
    let body = Node::seq(vec![body, content]);
    let one = Node::seq(vec![guard.clone(), body.clone()]);
    if !parallel || !spec.tools.format.section_start.trim().is_empty() {
        return Some(one);
    }
    let again = Alt { guard, body };
    Some(Node::seq(vec![one, Node::Repeat { alts: vec![again], limits: vec![None], recover: None }]))
}

/// The texts that open a reasoning block at the start of the reply: its
/// start marker and, when the marker is a special token followed by a word
/// (Gemma 4's `<|channel>thought`), the marker with that token written
/// twice, as models do (`<|channel><|channel>thought`): the stray token is
/// markup, not content.
fn reasoning_openers(start: &str) -> Vec<String> {
    let mut openers = vec![start.to_string()];
    let close = match start.as_bytes().first() {
        Some(b'<') => '>',
        Some(b'[') => ']',
        _ => return openers,
    };
    if let Some(end) = start.find(close) {
        let (token, word) = start.split_at(end + 1);
        if !word.trim().is_empty() {
            openers.push(format!("{token}{start}"));
        }
    }
    openers
}

/// The reasoning block's opener written again right after the first (or
/// after the one the prompt wrote), a newline at most before it: markup,
/// and the newline after it layout. Lenient: grammars never write it.
/// Nothing without an opener. (Only a newline: a guard that reads any
/// whitespace holds all of it, and a long run of it would outgrow a
/// streaming parser's window where the interpreter has none.)
fn opener_again(start: &str) -> Node {
    if start.is_empty() {
        return Node::Empty;
    }
    let mut again: Vec<Alt> =
        reasoning_openers(start).into_iter().map(|o| Alt::lenient(Node::seq(vec![Node::OptionalNewline, Node::lit(o)]), Node::OptionalNewline)).collect();
    again.push(Alt { guard: Node::Empty, body: Node::Empty });
    Node::Choice(again)
}

/// Reasoning text up to the end marker, the marker and the space after it.
/// The end marker written again right after it (only whitespace between:
/// MiniMax-M2 re-emits `</think>`, which vLLM's MiniMax reasoning parser
/// strips, vLLM #43133) is markup too.
/// When the template's markers carry newlines (`<think>\n`, `\n</think>`),
/// one newline at each side of the text is layout, not reasoning.
/// `ends[0]` is the end marker; further stops end the block without it.
fn reasoning_block_rest(ends: &[String], layout_newlines: bool) -> Node {
    let end = ends.first().map(String::as_str).unwrap_or("");
    Node::seq(vec![
        Node::Until { stops: ends.to_vec(), kind: TextKind::Reasoning, trim_newlines: layout_newlines, closers: Vec::new() },
        Node::optional(Node::lit(end), Node::seq(vec![Node::Space, Node::lenient_optional(Node::lit(end), Node::Space)])),
    ])
}

/// Whether `marker` starts with a special token (`<｜tool▁calls▁begin｜>`,
/// `<|tool_call_begin|>`, Gemma 4's `<|tool_call>`, R1's
/// `<｜tool▁call▁begin｜>function`): a model writes one only to mean it,
/// never to mention it in prose.
fn written_like_a_token(marker: &str) -> bool {
    let m = marker.trim();
    m.starts_with("<|") || m.starts_with("<｜")
}

/// Whether `marker` ends with a special token's bar (Gemma 4's closer
/// `<tool_call|>`): the closing counterpart of [`written_like_a_token`].
fn ends_like_a_token(marker: &str) -> bool {
    let m = marker.trim();
    m.ends_with("|>") || m.ends_with("｜>")
}

/// The trigger that opens tool calls, and what follows it.
///
/// A call is reported closed (`ToolClose`) only after its last closing
/// marker, so output cut off before it leaves the call incomplete.
fn tool_section(spec: &FormatSpec, parallel: bool) -> (String, Node, Node) {
    let f = &spec.tools.format;
    let more = if parallel { None } else { Some(0) };
    let section_start = f.section_start.trim();
    let per_call_start = f.per_call_start.trim();
    let name_prefix = spec.tools.function.name_prefix.trim();
    let json = f.mode == ToolFormatMode::JsonNative;
    let call = one_call(spec);
    let call_after_prefix = tagged_call_after_prefix(spec);
    let close = |body: Node| closed(spec, body);
    // Later calls in a section: one alternative per opener a call may
    // start with.
    let next_call = |alts: Vec<Alt>| Node::Repeat { limits: vec![more; alts.len()], alts, recover: Some(Box::new(Node::Empty)) };
    // A list of calls after its `[`: each `item`, separated by `,`, then
    // `]` (which may be missing before the section's closer).
    let section_closer: Vec<String> = [f.section_end.trim()].into_iter().filter(|e| !e.is_empty()).map(str::to_string).collect();
    let list_rest = |item: Node| {
        Node::seq(vec![
            Node::Space,
            close(item.clone()),
            next_call(vec![Alt { guard: Node::seq(vec![Node::Space, Node::lit(",")]), body: close(item) }]),
            closer("]", &section_closer),
        ])
    };

    if f.mode == ToolFormatMode::PythonCalls {
        // The list is the section: `[` opens it where no marker does
        // (LFM2.5 writes the bare list; the names after it are checked
        // against the declared tools, so `[1]` in prose stays content).
        // A bare list whose tokens models also write (LFM2.5-Instruct's, a
        // section alias) is read the same way bare or wrapped: its values
        // end at the alias's end token too, and so does the list, where the
        // token is written (lenient). One body serves both, so a module
        // holds the list's states once.
        if let Some((start, end)) = f.section_aliases.first().filter(|(start, _)| section_start.is_empty() && !start.trim().is_empty()) {
            let mut wrapped = spec.clone();
            (wrapped.tools.format.section_start, wrapped.tools.format.section_end) = (start.clone(), end.clone());
            let (_, _, section) = tool_section(&wrapped, parallel);
            return ("[".to_string(), Node::lit("["), section);
        }
        let of_bare_list = f.section_aliases.iter().any(|(start, end)| start.trim() == section_start && end.trim() == f.section_end.trim());
        let end = if of_bare_list {
            Node::seq(vec![Node::Space, Node::lenient_optional(lit(&f.section_end), Node::Empty)])
        } else {
            after_list(&f.section_end)
        };
        let list = list_rest(Node::seq(vec![Node::Space, call]));
        let section = Node::seq(vec![list, end, Node::Space]);
        if section_start.is_empty() {
            return ("[".to_string(), Node::lit("["), section);
        }
        let guard = Node::seq(vec![Node::lit(section_start), Node::Space, Node::lit("[")]);
        return (section_start.to_string(), guard, section);
    }
    if !section_start.is_empty() {
        let calls = if f.tools_array_wrapped {
            Node::seq(vec![Node::Space, Node::lit("["), list_rest(Node::seq(vec![marker(per_call_start), Node::Space, call.clone()]))])
        } else if !per_call_start.is_empty() {
            // The first call's own opener, which models leave out right
            // after the section's (`<｜tool▁calls▁begin｜>get_weather<｜tool▁sep｜>…`,
            // DeepSeek; llama.cpp's DeepSeek parsers read it as optional):
            // read where written. The name after the section's opener is
            // then checked as any call's.
            let opener = written_or_left_out(per_call_start);
            Node::seq(vec![Node::Space, opener, per_call_rest(spec, parallel)])
        } else if !json && !name_prefix.is_empty() {
            // Calls follow each other inside the section, each opened by the
            // function-name prefix (`<invoke name="...">`), or by the
            // namespace before it where the template writes one.
            let mut openers = Vec::new();
            if let Some((start, rest)) = namespace(spec) {
                let body = close(Node::seq(vec![rest, Node::lit(name_prefix), call_after_prefix.clone()]));
                openers.push(Alt { guard: Node::seq(vec![Node::Space, Node::lit(start)]), body });
            }
            openers.push(Alt { guard: Node::seq(vec![Node::Space, Node::lit(name_prefix)]), body: close(call_after_prefix) });
            Node::seq(vec![Node::Space, close(call.clone()), next_call(openers)])
        } else {
            Node::seq(vec![Node::Space, close(call.clone())])
        };
        let end = if f.tools_array_wrapped { after_list(&f.section_end) } else { marker(&f.section_end) };
        let section = Node::seq(vec![calls, end, Node::Space]);
        if let Some(unended) = unended_opener(&f.section_start) {
            // (Its `>` is the section's first markup: one body reads both.)
            return (unended.to_string(), Node::lit(unended), Node::seq(vec![written_or_left_out(">"), section]));
        }
        return (section_start.to_string(), Node::lit(section_start), section);
    }
    if !per_call_start.is_empty() {
        let own = Node::seq(vec![close(call.clone()), Node::Space]);
        let body = if let Some(list) = call_list_spec(spec) {
            where_written("[", Node::seq(vec![Node::lit("["), list_rest(Node::seq(vec![Node::Space, json_call(&list, false)])), Node::Space]), own)
        } else if parallel && wrapper_holds_several(spec) {
            // Several call objects in one wrapper: one after another (the
            // closer then comes after the last), or a JSON list of them.
            // The later objects and the list's must start with the name
            // key (JSON text after a call stays text) in the template's
            // quotes: one order and one quote style, so that each adds
            // little to the machine. (Only where parallel calls are on:
            // otherwise a second call is not read anyway.)
            let q = if f.python_dict_arguments { "'" } else { "\"" };
            let named_first = || json_call_in(spec, f.python_dict_arguments, false);
            let key = format!("{{{q}{}{q}", f.name_field);
            let next = Node::seq(vec![Node::Space, Node::Peek(Box::new(Node::lit(key.clone())))]);
            // (The loop is behind a lenient look-ahead: grammars, which
            // leave lenient alternatives out, see no loop without any. The
            // space before an object is read outside its round, so that a
            // call the output cuts off gives back its own text only.)
            let at_key = Node::Peek(Box::new(Node::lit(key.clone())));
            let more = Node::seq(vec![Node::Space, next_call(vec![Alt::lenient(at_key, Node::seq(vec![close(named_first()), Node::Space]))])]);
            let objects = Node::seq(vec![close(call), Node::lenient_optional(Node::Peek(Box::new(next)), more), Node::Space]);
            let list_start = Node::seq(vec![Node::lit("["), Node::Space, Node::lit(key)]);
            let list = Node::seq(vec![Node::lit("["), list_rest(Node::seq(vec![Node::Space, named_first()])), marker_or_missing(&f.per_call_end), Node::Space]);
            Node::Choice(vec![Alt::lenient(Node::Peek(Box::new(list_start)), list), Alt { guard: Node::Empty, body: objects }])
        } else {
            own
        };
        // The wrapper's closer written twice after JSON call objects
        // (`</tool_call>\n</tool_call>`): the second is markup too
        // (sglang's Hermes detector drops a stray one from the text). So
        // is a closer written like a special token (Gemma 4's
        // `<tool_call|><tool_call|>`: ollama #15370 drops such extra
        // closers; one is read here, as for Hermes).
        let end = f.per_call_end.trim();
        let again = if is_tag(end) && (json_object_calls(spec) || written_like_a_token(end) || ends_like_a_token(end)) {
            Node::lenient_optional(Node::lit(end), Node::Space)
        } else {
            Node::Empty
        };
        return (per_call_start.to_string(), Node::lit(per_call_start), Node::seq(vec![Node::Space, body, again]));
    }
    // No markers at all: the call itself is the trigger.
    if json {
        let first = f.parameter_order.first().cloned().unwrap_or_else(|| f.name_field.clone());
        let trigger = if f.fun_name_is_key || first.is_empty() { "{\"".to_string() } else { format!("{{\"{first}\"") };
        // The trigger is the start of the call object itself: look, don't take.
        let guard = Node::Peek(Box::new(Node::lit(trigger.clone())));
        let mut section = vec![close(json_call(spec, f.python_dict_arguments)), Node::Space];
        if parallel {
            section.push(call_separator(&trigger));
        }
        (trigger, guard, Node::seq(section))
    } else {
        (name_prefix.to_string(), Node::lit(name_prefix), Node::seq(vec![close(call_after_prefix), Node::Space]))
    }
}

/// `marker` right here where the output writes it, nothing where it leaves
/// it out (for parsers only; grammars write it). Unlike
/// [`marker_or_missing`], no whitespace before it.
fn written_or_left_out(marker: &str) -> Node {
    Node::Choice(vec![Alt { guard: Node::lit(marker), body: Node::Empty }, Alt::lenient(Node::Empty, Node::Empty)])
}

/// A section opener that is a tag in a special token's namespace, ending
/// its line (DeepSeek's DSML: `<｜DSML｜function_calls>\n`), without its
/// `>`: DeepSeek V3.2 and V4 also write `<｜DSML｜function_calls` then the
/// newline (opencode #24566 and pi #3712 show V4-Flash outputs verbatim;
/// Kiro #8169 quotes V3.2). The section is then found by the opener
/// without it, and reads the `>` where written (grammars write it). The
/// same holds for GigaChat 3.5's `<｜GCML｜tool_calls>`, of the same shape
/// (no report of its model leaving the `>` out was found). `None` for
/// other openers, a whole special token (`<｜tool▁calls▁begin｜>`) among them.
fn unended_opener(section_start: &str) -> Option<&str> {
    let start = section_start.trim();
    let unended = start.strip_suffix('>')?;
    (start.starts_with("<｜") && section_start.ends_with('\n') && !unended.ends_with('｜')).then_some(unended)
}

/// The `;` models write between calls that have no markup around them
/// (Llama 3.x: `{"name": "a", …}; {"name": "b", …}`, which vLLM's
/// `llama3_json` parser splits on), taken only where another call
/// (`trigger`) follows it: a `;` after the last call is text. For parsers
/// only; grammars separate calls with whitespace.
fn call_separator(trigger: &str) -> Node {
    // (Or the call with the tool's type first: see `json_call`.)
    let next = Node::one_of([trigger, TYPED_CALL]);
    let guard = Node::seq(vec![Node::lit(";"), Node::Space, Node::Peek(Box::new(next))]);
    Node::lenient_optional(guard, Node::Empty)
}

/// The section's end marker after a closed list of calls (`[…]`), which
/// the output may end without: every call in the list was complete, and a
/// server that stops at the marker (`<|END_ACTION|>`, `</tool_calls>`)
/// strips it. Without this the list's `]` was left over as content.
fn after_list(section_end: &str) -> Node {
    if section_end.trim().is_empty() {
        return Node::Empty;
    }
    Node::seq(vec![
        Node::Space,
        Node::Choice(vec![Alt { guard: lit(section_end), body: Node::Empty }, Alt::lenient(Node::End, Node::Empty)]),
    ])
}

/// One call after its per-call opener, in the format's call syntax (for
/// tag formats, with or without its function-name prefix).
fn one_call(spec: &FormatSpec) -> Node {
    match spec.tools.format.mode {
        // (A list of calls, `[TOOL_CALLS][{…}, {…}]`, keeps the template's
        // quotes: the other style would double every list's envelope, and
        // nothing shows models of those formats writing it.)
        ToolFormatMode::JsonNative if spec.tools.format.tools_array_wrapped => json_call(spec, spec.tools.format.python_dict_arguments),
        ToolFormatMode::JsonNative => json_call_either_quote(spec),
        ToolFormatMode::PythonCalls => python_list_item(spec),
        _ => match json_object_spec(spec) {
            Some(json) => where_written("{\"", json_call(&json, false), tagged_call(spec)),
            None => tagged_call(spec),
        },
    }
}

/// The JSON call objects models also write inside a tag format's call
/// wrapper (`<tool_call>{"name": "f", "arguments": {…}}</tool_call>` where
/// the template writes `<tool_call><function=f>…`): Qwen3.5 and
/// Qwen3-Coder fall back to the Hermes form their predecessors wrote
/// (mlx-swift-lm #529, ROCm/ATOM #1427). The spec of those objects: the
/// format's markers, OpenAI's field names. `None` for formats without a
/// per-call wrapper tag around a function-name marker (DeepSeek R1's
/// opener runs on into `function`: nothing shows its models writing JSON
/// objects there).
fn json_object_spec(spec: &FormatSpec) -> Option<FormatSpec> {
    let f = &spec.tools.format;
    let prefix = spec.tools.function.name_prefix.trim();
    let tagged = matches!(f.mode, ToolFormatMode::TagWithTagged | ToolFormatMode::TagWithJson);
    if !tagged || !is_tag(f.per_call_start.trim()) || !is_tag_start(prefix) {
        return None;
    }
    Some(openai_call_objects(spec, false, false))
}

/// `spec` with its calls written as OpenAI's call objects (`{"name": …,
/// "arguments": {…}}`, then an optional `"id"` with `id`), each after the
/// format's markers, in a JSON list with `list`: the forms models of a tag
/// format also write (`json_object_spec`, `call_list_spec`).
fn openai_call_objects(spec: &FormatSpec, id: bool, list: bool) -> FormatSpec {
    let mut json = spec.clone();
    let j = &mut json.tools.format;
    j.mode = ToolFormatMode::JsonNative;
    (j.name_field, j.args_field, j.function_field) = ("name".into(), "arguments".into(), "function".into());
    j.id_field = if id { "id".into() } else { String::new() };
    j.parameter_order = ["name", "arguments", "id"][..if id { 3 } else { 2 }].iter().map(|f| f.to_string()).collect();
    (j.fun_name_is_key, j.tools_array_wrapped, j.python_dict_arguments) = (false, list, false);
    j.gen_id_field.clear();
    json
}

/// The list of JSON call objects models also write after a per-call
/// marker that the template follows with the function's name: Mistral's
/// `[TOOL_CALLS]get_weather[ARGS]{…}` formats (Mistral Small 3.2,
/// Devstral, Magistral, Ministral 3) where the model writes its family's
/// older form, `[TOOL_CALLS][{"name": "get_weather", "arguments": {…},
/// "id": "…"}]` (sglang's Mistral detector reads both forms for every
/// model version). The spec of that list: the format's markers, OpenAI's
/// field names and an optional `id`. `None` for other formats: the marker
/// must be a bracketed tag (a special token) opening no section, and the
/// name must follow it bare.
fn call_list_spec(spec: &FormatSpec) -> Option<FormatSpec> {
    let f = &spec.tools.format;
    let marker = f.per_call_start.trim();
    let bare_name = spec.tools.function.name_prefix.trim().is_empty();
    let bracketed = marker.starts_with('[') && is_tag(marker);
    if !(f.mode == ToolFormatMode::TagWithJson && f.section_start.trim().is_empty() && bracketed && bare_name) {
        return None;
    }
    Some(openai_call_objects(spec, true, true))
}

/// Whether a marker starts like a tag (`<…`, `[…`).
fn is_tag_start(marker: &str) -> bool {
    marker.starts_with('<') || marker.starts_with('[')
}

/// Markup written as a tag: `<…>` or `[…]`, which prose does not write.
fn is_tag(marker: &str) -> bool {
    (marker.starts_with('<') && marker.ends_with('>')) || (marker.starts_with('[') && marker.ends_with(']'))
}

/// A JSON call object after its opener, quoted as the template quotes it
/// or in the other style: models of the Hermes line write Python dicts
/// (`{'name': 'f', 'arguments': {'a': 1}}`), as Hermes 2 Pro's own prompt
/// shows them, where the template renders JSON (NousResearch's
/// function-calling parser falls back to `ast.literal_eval` for them). The
/// other style is for parsers only; grammars write the template's.
fn json_call_either_quote(spec: &FormatSpec) -> Node {
    let own = spec.tools.format.python_dict_arguments;
    let other = if own { "{\"" } else { "{'" };
    where_written(other, json_call(spec, !own), json_call(spec, own))
}

/// `lenient` where the text starts with `opener` (a form models write
/// beyond the template's, for parsers only), else the template's form
/// `own`.
fn where_written(opener: &str, lenient: Node, own: Node) -> Node {
    Node::Choice(vec![Alt::lenient(Node::Peek(Box::new(Node::lit(opener))), lenient), Alt { guard: Node::Empty, body: own }])
}

/// [`marker_or_missing`] for the wrapper's closer `end` after a call
/// object, also read after one `}` too many (`{"name": "f", "arguments":
/// {"a": 1}}}\n</tool_call>`: QwQ and small Qwen models, langchain-qwq
/// #30): the `}` is dropped, as the object's own closers already ended the
/// call. Only where `end` follows it: a `}` in the text after a call is
/// text. The extra `}` is for parsers only; the closer after it is read by
/// what follows the call (`tool_section`'s closer written twice).
fn end_after_stray_brace(end: &str) -> Node {
    let closer = Node::seq(vec![Node::Space, lit(end)]);
    let stray = Node::seq(vec![Node::Space, lit("}"), Node::Peek(Box::new(closer.clone()))]);
    Node::Choice(vec![Alt { guard: closer, body: Node::Empty }, Alt::lenient(stray, Node::Empty), Alt::lenient(Node::Empty, Node::Empty)])
}

/// A call's body, its per-call end marker, and the call's end.
fn closed(spec: &FormatSpec, body: Node) -> Node {
    let f = &spec.tools.format;
    let section_end = if f.section_end.trim().is_empty() { Vec::new() } else { vec![f.section_end.trim().to_string()] };
    let end = f.per_call_end.trim();
    let function_close = spec.tools.function.close.trim();
    // The wrapper's closer after a call that something else ended already:
    // a function closer written as a tag (`</tool_call>` after
    // `</function>`), or a JSON call object's own `}`. It is read where
    // written and not needed where not. Models leave it out before the
    // next `<function=…>` (Qwen3-Coder writes several functions in one
    // `<tool_call>`, which vLLM reads as calls each), before the text after
    // the call, and at the end of the output (vLLM's and sglang's Hermes
    // parsers read `<tool_call>(.*)`); there a partial closer (`</tool_ca`)
    // is text. DeepSeek R1's function closer is a code fence, which text
    // may hold, so its calls still need their own end marker.
    let ended_by_function = !end.is_empty() && is_tag(function_close) && function_close != end;
    if is_tag(end) && json_object_calls(spec) {
        // (Only where no section holds the calls: there `tool_section`
        // reads the closer after a stray `}` as a closer written twice.)
        let close = if f.section_start.trim().is_empty() { end_after_stray_brace(end) } else { marker_or_missing(end) };
        return Node::seq(vec![body, close, Node::Mark(Mark::ToolClose)]);
    }
    if ended_by_function {
        return Node::seq(vec![body, marker_or_missing(end), Node::Mark(Mark::ToolClose)]);
    }
    Node::seq(vec![body, closer(&f.per_call_end, &section_end), Node::Mark(Mark::ToolClose)])
}

/// A Markdown code fence (a reply's JSON, a bare call, fenced).
const FENCE: &str = "```";
/// How a bare JSON call with the tool's type first starts (see `json_call`).
const TYPED_CALL: &str = "{\"type\"";

/// Whether calls are JSON objects with no markup around them (Llama 3.x),
/// each found by its first key.
fn bare_json_calls(spec: &FormatSpec) -> bool {
    let f = &spec.tools.format;
    f.mode == ToolFormatMode::JsonNative && f.section_start.trim().is_empty() && f.per_call_start.trim().is_empty() && !f.fun_name_is_key
}

/// Whether each call is one JSON object after its own opener
/// (`<tool_call>{"name": …}</tool_call>`), not an item of a list.
fn json_object_calls(spec: &FormatSpec) -> bool {
    let f = &spec.tools.format;
    f.mode == ToolFormatMode::JsonNative && !f.tools_array_wrapped && !f.per_call_start.trim().is_empty()
}

/// Calls as JSON objects with no markup around them (`start`, a look-ahead
/// at a call object's first key), fenced as a Markdown code block: the
/// fence and its `json` are markup where a call starts right after the
/// fence's first line; the closing fence after the calls too.
fn fenced_calls(start: &Node, calls: &Node) -> Alt {
    Alt::lenient(
        Node::seq(vec![Node::lit(FENCE), Node::optional(Node::lit("json"), Node::Empty), Node::Space, Node::Peek(Box::new(start.clone()))]),
        Node::seq(vec![calls.clone(), Node::optional(Node::lit(FENCE), Node::Space)]),
    )
}

/// The call object of a format that wraps each one in its own tags
/// (`<tool_call>{"name": …}</tool_call>`, the Hermes line) written
/// without the opener: `{"name": "get_weather", "arguments": {…}}` alone
/// (Qwen2.5 does, hermes-agent #5867; llama.cpp's Hermes parser reads
/// it). The object's start in the template's quotes (`{"name"`), looked at
/// to read what follows the opener, as the opener's body reads it: a call
/// only where the name is a declared tool and the object is whole, so JSON
/// in prose stays content; the wrapper's closer is read where the model
/// writes it. (As inside the wrapper, the arguments may be left out:
/// `{"name": "get_time"}` is a call with `{}`. Reading it otherwise would
/// copy the opener's body, 300 lines of each module.) For parsers only;
/// `None` for other formats.
fn unwrapped_call_object(spec: &FormatSpec) -> Option<String> {
    let f = &spec.tools.format;
    if !json_object_calls(spec) || !f.section_start.trim().is_empty() || f.fun_name_is_key || !is_tag(f.per_call_start.trim()) {
        return None;
    }
    let q = if f.python_dict_arguments { "'" } else { "\"" };
    Some(format!("{{{q}{}{q}", f.name_field))
}

/// The list of call objects of a format that writes it after a section
/// marker (`[TOOL_CALLS][{"name": …}]`, Mistral Nemo's line) written
/// without the marker: mistral-large "very often" sends it as text
/// (mistral-common #73, the content verbatim `[{"name":
/// "add_layer_to_map", "arguments": {…}}, …]`). The list's start and its
/// first object's first key in the template's quotes (`[{"name"`), looked
/// at to read what follows the marker, as [`unwrapped_call_object`] does
/// for one object: a call only where the name is a declared tool and the
/// list is whole, so JSON in prose stays content (a list of people with
/// `"name"` keys names no tool). For parsers only; `None` for other
/// formats.
fn unwrapped_call_list(spec: &FormatSpec) -> Option<String> {
    let f = &spec.tools.format;
    let marked = !f.section_start.trim().is_empty() && f.per_call_start.trim().is_empty();
    if f.mode != ToolFormatMode::JsonNative || !f.tools_array_wrapped || f.fun_name_is_key || !marked {
        return None;
    }
    // Only where the name comes first: a list that opens with an id
    // (Cohere's `[{"tool_call_id": …`) holds the id and more before its
    // name makes it certain, 24 bytes of state more than the 256 B bound
    // allows for Cohere's modules; and the evidence is Mistral's.
    let first = f.parameter_order.first().unwrap_or(&f.name_field);
    if *first != f.name_field {
        return None;
    }
    let q = if f.python_dict_arguments { "'" } else { "\"" };
    Some(format!("[{{{q}{first}{q}"))
}

/// Whether a JSON call object's wrapper (`<tool_call>…</tool_call>`) may
/// hold several calls, as models of the Hermes line write them: objects one
/// after another (Qwen3-Next, vLLM #32638: the wrapper's closer after the
/// last), or a JSON list of them (sglang's Hermes detector reads both). For
/// parsers only; grammars write one call a wrapper.
fn wrapper_holds_several(spec: &FormatSpec) -> bool {
    let f = &spec.tools.format;
    json_object_calls(spec) && f.section_start.trim().is_empty() && is_tag(f.per_call_end.trim()) && !f.fun_name_is_key
}

/// The calls of a section whose every call has its own opener, from after
/// the first opener on: the call, then further calls each after its opener.
fn per_call_rest(spec: &FormatSpec, parallel: bool) -> Node {
    let f = &spec.tools.format;
    let per_call_start = f.per_call_start.trim();
    let call = one_call(spec);
    let close = |body: Node| closed(spec, body);
    Node::seq(vec![
        Node::Space,
        close(call.clone()),
        Node::Repeat {
            alts: vec![Alt { guard: Node::seq(vec![Node::Space, Node::lit(per_call_start)]), body: close(Node::seq(vec![Node::Space, call])) }],
            limits: vec![if parallel { None } else { Some(0) }],
            recover: Some(Box::new(Node::Empty)),
        },
    ])
}

/// What starts calls written without their section's wrapper: the per-call
/// opener (Kimi K2 often leaves out `<|tool_calls_section_begin|>`). The
/// opener is a marker of its own, and the name after it is checked against
/// the declared tools, so this never takes plain text for a call. `None` for
/// formats without both a section and a per-call opener.
fn bare_call_opener(spec: &FormatSpec) -> Option<&str> {
    let f = &spec.tools.format;
    let (section_start, per_call_start) = (f.section_start.trim(), f.per_call_start.trim());
    (!section_start.is_empty() && !per_call_start.is_empty() && !f.tools_array_wrapped).then_some(per_call_start)
}

/// Calls after a [`bare_call_opener`], up to an optional section end.
fn bare_calls(spec: &FormatSpec, parallel: bool) -> Node {
    let section_end = spec.tools.format.section_end.trim();
    let end = if section_end.is_empty() { Node::Empty } else { Node::optional(Node::seq(vec![Node::Space, Node::lit(section_end)]), Node::Empty) };
    Node::seq(vec![per_call_rest(spec, parallel), end, Node::Space])
}

/// Calls of a tag format written without their wrapper: the inner markup
/// directly (`<function=get_weather>…</function>` without `<tool_call>`).
/// The opener is the function-name marker (or the namespace marker before
/// it) and the name after it must be a declared tool, so prose never turns
/// into a call; the wrapper's closers are read when the model writes them.
/// One `(opener, body)` per marker a call may start with; none for formats
/// whose calls need no wrapper, whose name marker is the wrapper (already
/// among `stops`), or is not markup.
fn unwrapped_calls(spec: &FormatSpec, stops: &[String]) -> Vec<(String, Node)> {
    let f = &spec.tools.format;
    let prefix = spec.tools.function.name_prefix.trim();
    let tagged = matches!(f.mode, ToolFormatMode::TagWithTagged | ToolFormatMode::TagWithJson);
    let wrapped = !f.section_start.trim().is_empty() || !f.per_call_start.trim().is_empty();
    let markup = is_tag_start(prefix);
    if !tagged || !wrapped || !markup || stops.iter().any(|s| s == prefix) || spec.tools.call_id.pos == CallIdPosition::NameInId {
        return Vec::new();
    }
    let optional = |m: &str| {
        let m = m.trim();
        if m.is_empty() { Node::Empty } else { Node::optional(Node::seq(vec![Node::Space, Node::lit(m)]), Node::Empty) }
    };
    let call = |head: Node| {
        Node::seq(vec![head, tagged_call_after_prefix(spec), optional(&f.per_call_end), Node::Mark(Mark::ToolClose), optional(&f.section_end), Node::Space])
    };
    let mut out = Vec::new();
    if let Some((start, rest)) = namespace(spec) {
        out.push((start, call(Node::seq(vec![rest, Node::lit(prefix)]))));
    }
    out.push((prefix.to_string(), call(Node::Empty)));
    out
}

/// The name of the call: free text up to one of `stops`, then `then()`.
///
/// The parser checks the name against the request's tools when the text
/// ends (a name the tools do not declare is not a call), so tool names are
/// not part of the grammar and `get_weather` is never taken from
/// `get_weatherX`.
fn named(before: Node, stops: &[String], then: &dyn Fn() -> Node) -> Node {
    Node::seq(vec![before, Node::Until { stops: stops.to_vec(), kind: TextKind::ToolName, trim_newlines: false, closers: Vec::new() }, then()])
}

/// A JSON call object: `{"name": "f", "arguments": {...}}` in the template's
/// field order (or `{"f": {...}}` when the name is the key), its keys and
/// name quoted with `'` where `single_quoted` (a Python dict; its values are
/// then read as Python literals, reported as JSON).
fn json_call(spec: &FormatSpec, single_quoted: bool) -> Node {
    json_call_in(spec, single_quoted, reads_arguments_first(spec))
}

/// [`json_call`], with the arguments-first order read where `args_first`
/// (the objects after the first in one wrapper, found by their name key
/// first, need only the name-first order).
fn json_call_in(spec: &FormatSpec, single_quoted: bool, args_first: bool) -> Node {
    let f = &spec.tools.format;
    let python = f.python_dict_arguments || single_quoted;
    let q = if single_quoted { "'" } else { "\"" };
    let open = Node::lit("{");
    // The arguments' closers may be missing before the call's.
    let ends = call_closers(spec, false);
    let args = || Node::Json { kind: JsonKind::ToolArgs, schema: None, python, marker: String::new(), ends: ends.clone() };
    if f.fun_name_is_key {
        let after = || {
            Node::seq(vec![Node::lit(q), Node::Space, Node::lit(":"), Node::Space, args(), Node::Space, Node::lit("}")])
        };
        let before = Node::seq(vec![Node::Space, Node::lit(q)]);
        return Node::seq(vec![Node::Mark(Mark::ToolOpen), open, named(before, &[q.to_string()], &after)]);
    }
    // Fields in template order; the name must come before the arguments for
    // events to be in order, which every template in the corpus does.
    let mut order: Vec<String> = f.parameter_order.clone();
    if order.is_empty() {
        order = vec![f.name_field.clone(), f.args_field.clone()];
    }
    // Nested `{"function": {"name":..., "arguments":...}}`: the prefix before the dot.
    let nested = order.iter().all(|p| p.contains('.')) && !order.is_empty();
    let key = |path: &str| path.rsplit('.').next().unwrap_or(path).to_string();
    let name_pos = order.iter().position(|p| *p == f.name_field);
    let mut before_name = vec![Node::Mark(Mark::ToolOpen), open];
    if bare_json_calls(spec) {
        // Llama 3.x also writes the OpenAI tool's type first (`{"type":
        // "function", "name": …}`; llama.cpp's and vLLM's Llama parsers
        // read it, vLLM #46863).
        // Or the whole OpenAI tool call, the call's fields nested in its
        // `function` object (`{"type": "function", "function": {"name": …,
        // "parameters": {…}}}`, Llama 3.2 in vLLM #11786): the nested
        // object's `}` is read after the call's (see `after` below).
        let nested_call = Node::lenient_optional(
            Node::seq(vec![Node::Space, Node::lit(format!("{q}{}{q}", f.function_field)), Node::Space, Node::lit(":"), Node::Space, Node::lit("{")]),
            Node::Empty,
        );
        let type_field = Node::seq(vec![Node::Space, Node::lit(":"), Node::Space, Node::lit(format!("{q}function{q}")), Node::Space, Node::lit(","), nested_call]);
        before_name.push(Node::optional(Node::seq(vec![Node::Space, Node::lit(format!("{q}type{q}"))]), Node::seq(vec![Node::Mark(Mark::Lenient), type_field])));
    }
    if nested {
        before_name.extend([Node::Space, Node::lit(format!("{q}{}{q}", f.function_field)), Node::Space, Node::lit(":"), Node::Space, Node::lit("{")]);
    }
    // A field's key as the template writes it; for the name and the
    // arguments, the OpenAI names too, which models write whatever the
    // template says (`"arguments"` where it writes `"parameters"`).
    // Each key is an alternative whose body is `then`.
    let key_alts = move |name: &str, then: Node| -> Vec<Alt> {
        let own = key(name);
        let synonyms: &[&str] = if name == f.args_field {
            &["arguments", "parameters"]
        } else if name == f.name_field {
            &["name"]
        } else {
            &[]
        };
        let quoted = |k: &str| Node::lit(format!("{q}{k}{q}"));
        let mut alts = vec![Alt { guard: quoted(&own), body: then.clone() }];
        alts.extend(synonyms.iter().filter(|k| **k != own).map(|k| Alt::lenient(quoted(k), then.clone())));
        alts
    };
    let key_node = move |name: &str| -> Node {
        let mut alts = key_alts(name, Node::Empty);
        if alts.len() == 1 {
            alts.remove(0).guard
        } else {
            Node::Choice(alts)
        }
    };
    let field = |i: usize, name: &str| -> Vec<Node> {
        let mut v = Vec::new();
        if i > 0 {
            v.extend([Node::Space, Node::lit(",")]);
        }
        v.extend([Node::Space, key_node(name), Node::Space, Node::lit(":"), Node::Space]);
        v
    };
    let value_of = |name: &str| -> Node {
        if name == f.args_field {
            args()
        } else if name == f.id_field || name == f.gen_id_field {
            Node::seq(vec![Node::lit(q), Node::JsonStringContent(TextKind::ToolId), Node::lit(q)])
        } else {
            Node::Json { kind: JsonKind::Content, schema: None, python, marker: String::new(), ends: Vec::new() }
        }
    };
    // Without a name field the analysis found no call object to read: the
    // name is then taken as the object's first string field.
    let name_pos = name_pos.unwrap_or(0);
    // Id fields may be missing (the model may leave ids to the server).
    let is_id = |name: &str| name == f.id_field || name == f.gen_id_field;
    let quoted = |name: &str| Node::lit(format!("{q}{}{q}", key(name)));
    // An id field after the others, which the model may leave out.
    let later_id = move |name: &str| {
        let guard = Node::seq(vec![Node::Space, Node::lit(","), Node::Space, quoted(name)]);
        Node::optional(guard, Node::seq(vec![Node::Space, Node::lit(":"), Node::Space, value_of(name)]))
    };
    // Fields before the name (ids) are parsed before the name choice.
    let mut required_before = 0;
    for p in &order[..name_pos] {
        if is_id(p) {
            let body = Node::seq(vec![Node::Space, Node::lit(":"), Node::Space, value_of(p), Node::Space, Node::lit(",")]);
            before_name.push(Node::optional(Node::seq(vec![Node::Space, quoted(p)]), body));
        } else {
            before_name.extend(field(required_before, p));
            before_name.push(value_of(p));
            required_before += 1;
        }
    }
    let rest_fields: Vec<String> = order[name_pos + 1..].to_vec();
    // Models also write the arguments first (`{"arguments": {...}, "name":
    // "f"}`): read where the object holds just the name and the arguments.
    let ids_after: Vec<String> = rest_fields.iter().filter(|p| is_id(p)).cloned().collect();
    if !args_first {
        before_name.extend(field(required_before, &order[name_pos]));
        before_name.push(Node::lit(q));
    }
    let close_nested = nested;
    let optional_after: Vec<bool> = rest_fields.iter().map(|p| is_id(p)).collect();
    // The object's `}` may be missing before the call's or section's closer.
    let outer = call_closers(spec, false);
    let after = move || {
        let mut v = vec![Node::lit(q)];
        for (j, p) in rest_fields.iter().enumerate() {
            if optional_after[j] {
                v.push(later_id(p));
                continue;
            }
            if *p == f.args_field && !bare_json_calls(spec) {
                // The arguments may be left out of a call without any
                // (`{"name": "f"}`, as sglang's and vLLM's JSON parsers
                // read it): they are then `{}`. Only inside a call's
                // markup: a bare `{"name": "f"}` in prose is text.
                // (`field` starts with the separator, `, `: the guard.)
                let mut separator = field(1, p);
                let mut written = separator.split_off(2);
                written.push(value_of(p));
                // Left out where the object ends, or where an id field
                // that may follow them comes next.
                let empty = || Node::seq(vec![Node::Mark(Mark::ArgsOpen), Node::Mark(Mark::ArgsClose)]);
                let mut alts = vec![Alt::lenient(Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::lit("}")]))), empty())];
                for id in rest_fields[j + 1..].iter().filter(|p| is_id(p)) {
                    let guard = Node::seq(vec![Node::Space, Node::lit(","), Node::Space, quoted(id)]);
                    alts.push(Alt::lenient(Node::Peek(Box::new(guard)), empty()));
                }
                alts.push(Alt { guard: Node::seq(separator), body: Node::seq(written) });
                v.push(Node::Choice(alts));
                continue;
            }
            v.extend(field(1, p));
            v.push(value_of(p));
        }
        if close_nested {
            v.extend([Node::Space, Node::lit("}")]);
        }
        v.push(closer("}", &outer));
        if bare_json_calls(spec) {
            // The outer object's `}` of an OpenAI-shaped call (see
            // `nested_call` above), right after the call's own, or after
            // one space or line break: one `}` there is never text the
            // model meant. (Not after more whitespace: a `}` after a blank
            // line is text.)
            let outer_brace = ["}", " }", "\n}"].map(|b| Alt::lenient(Node::lit(b), Node::Empty));
            v.push(Node::Choice(outer_brace.into_iter().chain([Alt { guard: Node::Empty, body: Node::Empty }]).collect()));
        }
        Node::seq(v)
    };
    // The name's stop is its closing quote.
    let name_value = named(Node::Empty, &[q.to_string()], &after);
    if !args_first {
        return Node::seq(vec![Node::seq(before_name), name_value]);
    }
    let colon = || [Node::Space, Node::lit(":"), Node::Space];
    let name_then = Node::seq(colon().into_iter().chain([Node::lit(q), name_value]).collect());
    let mut alts = key_alts(&f.name_field, name_then);
    // The arguments commit the call once they open (`{`, or `"{` for
    // arguments written as a string): they are reported before the name is
    // known (holding them back would need memory without bound), so a name
    // the tools do not declare breaks the call there. Markup that breaks
    // before they open is content.
    let opens = |o: Node| Alt { guard: Node::Peek(Box::new(o)), body: Node::Mark(Mark::Commit) };
    let in_string = Node::seq(vec![Node::lit("\""), Node::Space, Node::lit("{")]);
    let mut args_then: Vec<Node> = colon().into();
    args_then.extend([Node::Choice(vec![opens(Node::lit("{")), opens(in_string)]), args(), Node::Space, Node::lit(","), Node::Space, key_node(&f.name_field)]);
    args_then.extend(colon());
    args_then.extend([Node::lit(q), Node::Until { stops: vec![q.to_string()], kind: TextKind::ToolName, trim_newlines: false, closers: Vec::new() }, Node::lit(q)]);
    args_then.extend(ids_after.iter().map(|p| later_id(p)));
    args_then.push(closer("}", &call_closers(spec, false)));
    alts.extend(key_alts(&f.args_field, Node::seq(args_then)).into_iter().map(|a| if a.is_lenient() { a } else { Alt::lenient(a.guard, a.body) }));
    before_name.extend([Node::Space, Node::Choice(alts)]);
    Node::seq(before_name)
}

/// Whether a format's JSON call objects are also read with their arguments
/// first (`{"arguments": {...}, "name": "f"}`): JSON calls whose object
/// holds just the name, the arguments and ids, in that order, at the top.
/// Such a call reports its arguments before its name (see
/// `chat_parser_runtime::Event::ToolName`). For a tag format that also
/// reads JSON call objects in its wrapper (`json_object_spec`), the answer
/// is for those objects: its own `<function=…>` calls never do.
pub fn reads_arguments_first(spec: &FormatSpec) -> bool {
    if let Some(json) = json_object_spec(spec) {
        return reads_arguments_first(&json);
    }
    let f = &spec.tools.format;
    // (JSON-native formats, and the JSON call objects of Python call lists.)
    if !matches!(f.mode, ToolFormatMode::JsonNative | ToolFormatMode::PythonCalls) || f.fun_name_is_key {
        return false;
    }
    let mut order: Vec<String> = f.parameter_order.clone();
    if order.is_empty() {
        order = vec![f.name_field.clone(), f.args_field.clone()];
    }
    let nested = order.iter().all(|p| p.contains('.'));
    let is_id = |p: &String| *p == f.id_field || *p == f.gen_id_field;
    let name_pos = order.iter().position(|p| *p == f.name_field).unwrap_or(0);
    let required_before = order[..name_pos].iter().filter(|p| !is_id(p)).count();
    let rest = &order[name_pos + 1..];
    !nested
        && required_before == 0
        && order[name_pos] == f.name_field
        && rest.first() == Some(&f.args_field)
        && rest.len() == 1 + rest.iter().filter(|p| is_id(p)).count()
}

/// One element of a Python call list: a call `name(k=v, …)`, or a JSON call
/// object (what llama.cpp's LFM2 template renders).
fn python_list_item(spec: &FormatSpec) -> Node {
    Node::Choice(vec![
        Alt { guard: Node::Peek(Box::new(Node::lit("{"))), body: json_call(spec, spec.tools.format.python_dict_arguments) },
        Alt { guard: Node::Empty, body: python_call(&list_closers(spec)) },
    ])
}

/// Where a quoted raw value of a Python call ends: its quote before `,` or
/// `)`, or, where the call's `)` is missing, before the section's end
/// (after the list's `]` or not). Not before a bare `]`: `d['k']` inside a
/// value would end it.
fn raw_value_stops(q: &str, outer: &[String]) -> Vec<String> {
    let mut stops = vec![format!("{q},"), format!("{q})")];
    for o in outer.iter().filter(|o| o.as_str() != "]") {
        stops.push(format!("{q}{o}"));
        stops.push(format!("{q}]{o}"));
    }
    stops
}

/// What follows a Python call in its list: `]`, then the section's end.
fn list_closers(spec: &FormatSpec) -> Vec<String> {
    let mut out = vec!["]".to_string()];
    out.extend(call_closers(spec, false).into_iter().filter(|c| c != "]"));
    out
}

/// One Python call, `name(k=v, …)`: keyword arguments, reported as a JSON
/// object. A quoted value is a raw string, as LFM2.5's template writes it
/// (`"'" + value + "'"`, nothing escaped: `'a\nb'` holds a backslash, and
/// `'it's'` an apostrophe, so the value ends at a quote that a `,` or the
/// call's `)` follows); any other value is a Python literal or JSON
/// (`True`, `None`, `3.5`, `[1, {'a': 2}]`).
///
/// `outer` are the closers after the call (the list's `]`, the section's
/// end): a model that leaves out the call's `)` ends it at one of them, and
/// a quoted value then ends at its quote before the section's end
/// ([`raw_value_stops`]).
fn python_call(outer: &[String]) -> Node {
    Node::seq(vec![Node::Mark(Mark::ToolOpen), named(Node::Empty, &["(".to_string()], &|| python_arguments(outer, ""))])
}

/// A Python call's arguments after its name, `(a=1, b='x')`: keyword
/// arguments, each value a string in either quote style or a Python
/// literal, reported as one JSON object. `outer`: the closers a missing
/// `)` may be left out before.
///
/// `marker` is the string marker of a marked dialect (Gemma 4's `<|"|>`;
/// empty: none). With one, the arguments are also those of the dialect's
/// object literal in the call's parentheses, as Gemma 4 writes them at
/// times (`(command:<|"|>ls -a<|"|>)`, vLLM #53642; `(command=<|"|>ls<|"|>)`,
/// omlx #1886): a name ends at `=` or `:`, a value may be a marked string,
/// and a nested value is read in the dialect.
fn python_arguments(outer: &[String], marker: &str) -> Node {
    let raw = |q: &str| Alt {
        guard: Node::lit(q),
        body: Node::seq(vec![
            Node::Until {
                stops: raw_value_stops(q, outer),
                kind: TextKind::ArgString,
                trim_newlines: false,
                closers: Vec::new(),
            },
            Node::lit(q),
        ]),
    };
    let json = |marker: &str| Node::Json { kind: JsonKind::ArgValue, schema: None, python: true, marker: marker.to_string(), ends: Vec::new() };
    // (An object or a list in the dialect; a scalar as Python writes it,
    // which ends at the call's `)` too.)
    let literal = || match marker {
        "" => json(""),
        _ => Node::Choice(vec![
            Alt { guard: Node::Peek(Box::new(Node::one_of(["{", "["]))), body: json(marker) },
            Alt { guard: Node::Empty, body: json("") },
        ]),
    };
    let marked = (!marker.is_empty()).then(|| Alt {
        guard: Node::lit(marker),
        body: Node::seq(vec![Node::Until { stops: vec![marker.to_string()], kind: TextKind::ArgString, trim_newlines: false, closers: Vec::new() }, Node::lit(marker)]),
    });
    let any = || Node::seq(vec![Node::Space, Node::Choice(marked.clone().into_iter().chain([raw("'"), raw("\""), Alt { guard: Node::Empty, body: literal() }]).collect())]);
    let separators: &[&str] = if marker.is_empty() { &["="] } else { &["=", ":"] };
    let separator = || match separators {
        [one] => Node::lit(*one),
        all => Node::one_of(all.iter().copied()),
    };
    let arg = || {
        Node::seq(vec![
            Node::Space,
            Node::Until { stops: separators.iter().map(|s| s.to_string()).collect(), kind: TextKind::ArgName, trim_newlines: false, closers: Vec::new() },
            separator(),
            // A string argument is read in either quote style (or as a
            // Python literal); any other declared type is a Python literal
            // (or JSON), so a grammar types it by the schema. The branches
            // are sequences, not choices: grammars keep every form of them.
            Node::ByArgType { string: Box::new(any()), json: Box::new(Node::seq(vec![Node::Space, literal()])), auto: Box::new(any()) },
            Node::Space,
        ])
    };
    let more = Node::Repeat { alts: vec![Alt { guard: Node::lit(","), body: arg() }], limits: vec![None], recover: None };
    Node::seq(vec![
        Node::lit("("),
        Node::Mark(Mark::ArgsOpen),
        Node::Space,
        Node::Choice(vec![
            Alt { guard: Node::lit(")"), body: Node::Empty },
            Alt { guard: Node::Empty, body: Node::seq(vec![arg(), more, closer_after(Node::Empty, ")", outer)]) },
        ]),
        Node::Mark(Mark::ArgsClose),
    ])
}

/// A call in a tag format, from the function name prefix on.
fn tagged_call(spec: &FormatSpec) -> Node {
    let prefix = spec.tools.function.name_prefix.trim();
    let call = match (prefix, word_prefix_tail(spec)) {
        ("", _) => tagged_call_after_prefix(spec),
        // Where models leave out the word, or write only its punctuation
        // (Gemma 4's `<|tool_call>get_weather{…}` and `<|tool_call>:get_weather{…}`,
        // vLLM #54778): the call is read all the same, its name checked
        // against the declared tools as any call's. For parsers only.
        (_, Some(tail)) => Node::seq(vec![
            Node::Choice(vec![
                Alt { guard: Node::lit(prefix), body: Node::Empty },
                Alt::lenient(Node::lit(tail), Node::Empty),
                Alt::lenient(Node::Empty, Node::Empty),
            ]),
            tagged_call_after_prefix(spec),
        ]),
        _ => Node::seq(vec![Node::lit(prefix), tagged_call_after_prefix(spec)]),
    };
    match namespace(spec) {
        Some((start, rest)) => Node::seq(vec![Node::optional(Node::lit(start), rest), call]),
        None => call,
    }
}

/// The punctuation that ends a function-name prefix made of one word
/// (Gemma 4's `call:` → `:`), where the call's opener is a token
/// (`<|tool_call>`): the prefix is then a word a model may leave out.
/// `None` for markup prefixes (`<function=`) and multi-part ones.
fn word_prefix_tail(spec: &FormatSpec) -> Option<String> {
    let prefix = spec.tools.function.name_prefix.trim();
    let opener = spec.tools.format.per_call_start.trim();
    let (at, _) = prefix.char_indices().last()?;
    let (word, tail) = prefix.split_at(at);
    (written_like_a_token(opener) && !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic()) && tail.bytes().all(|b| b.is_ascii_punctuation())).then(|| tail.to_string())
}

/// The namespace a template writes before a call's name, between two
/// markers (MiroThinker's `<server_name>tool-python</server_name>`): its
/// start marker, and what follows it up to the name prefix. The namespace
/// is read and dropped (`Discard`): the call's name is the tool's own name,
/// which is what the request declared. `None` for formats without one.
fn namespace(spec: &FormatSpec) -> Option<(String, Node)> {
    let f = &spec.tools.function;
    let (start, end) = (f.namespace_start.trim(), f.namespace_end.trim());
    if start.is_empty() || end.is_empty() {
        return None;
    }
    let name = Node::Until { stops: vec![end.to_string()], kind: TextKind::Discard, trim_newlines: false, closers: Vec::new() };
    Some((start.to_string(), Node::seq(vec![name, Node::lit(end), Node::Space])))
}

/// What may follow the function name: its suffix when the template writes
/// one, else whatever comes next (a call id, the first argument, the call's
/// closers).
fn name_stops(spec: &FormatSpec) -> Vec<String> {
    let t = &spec.tools;
    if !t.function.name_suffix.trim().is_empty() {
        let mut stops = vec![t.function.name_suffix.trim().to_string()];
        // (A name never holds `{`: where the model leaves the suffix out,
        // the JSON arguments end the name; see `marker_before_args` in `tagged_call_after_prefix`.)
        if t.format.mode == ToolFormatMode::TagWithJson {
            stops.push("{".to_string());
        }
        return stops;
    }
    let mut stops: Vec<String> = Vec::new();
    for candidate in [&t.call_id.prefix, &t.call_id.suffix, &t.arguments.start, &t.arguments.name_prefix, &t.function.close, &t.format.per_call_end, &t.format.section_end] {
        let c = candidate.trim();
        if !c.is_empty() && !stops.iter().any(|s| s == c) {
            stops.push(c.to_string());
        }
    }
    if t.format.mode == ToolFormatMode::TagWithJson {
        stops.push("{".to_string());
    }
    // (A stray value closer after the name: see `stray_value_closer`.)
    stops.extend(stray_closer_after_name(spec).filter(|c| !stops.contains(c)));
    // (Object-literal arguments may come as a Python call's: see
    // `tagged_arguments`.)
    if !t.arguments.string_quote.trim().is_empty() {
        stops.push("(".to_string());
    }
    if stops.is_empty() {
        stops.push("\n".to_string());
    }
    stops
}

fn tagged_call_after_prefix(spec: &FormatSpec) -> Node {
    let t = &spec.tools;
    if t.call_id.pos == CallIdPosition::NameInId {
        // `functions.NAME:0` then the arguments: the id is read whole and
        // the name taken out of it.
        let after_id = t.call_id.suffix.trim().to_string();
        return Node::seq(vec![
            Node::Mark(Mark::ToolOpen),
            Node::Space,
            Node::Until { stops: vec![after_id.clone()], kind: TextKind::ToolIdName, trim_newlines: false, closers: Vec::new() },
            Node::lit(after_id),
            Node::Space,
            Node::Json { kind: JsonKind::ToolArgs, schema: None, python: t.format.python_dict_arguments, marker: String::new(), ends: call_closers(spec, true) },
            marker(&t.function.close),
        ]);
    }
    let mut stops = name_stops(spec);
    let suffix = t.function.name_suffix.trim().to_string();
    let attribute = attribute_name(t.function.name_prefix.trim(), &suffix);
    if attribute {
        stops.push(ATTRIBUTE_NAME_END.to_string());
    }
    // The marker that opens JSON arguments after the name or the id
    // (Mistral's `[ARGS]`), or nothing where the model leaves it out and
    // the arguments' `{` follows (`[TOOL_CALLS]get_weather{"city": …}`):
    // for parsers only, grammars write it.
    let marker_before_args = |m: &str| -> Node {
        if t.format.mode != ToolFormatMode::TagWithJson {
            return marker(m);
        }
        marker_or_missing_before(m, Node::seq(vec![Node::Space, Node::lit("{")]))
    };
    // The call id, where the template writes it.
    let id_node = || {
        if t.call_id.prefix.trim().is_empty() || t.call_id.suffix.trim().is_empty() {
            return Node::Empty;
        }
        // The id is optional (the server may assign ids); the marker after
        // it is not, as it also opens what follows.
        Node::seq(vec![
            Node::optional(
                Node::seq(vec![Node::Space, Node::lit(t.call_id.prefix.trim())]),
                Node::Until { stops: vec![t.call_id.suffix.trim().to_string()], kind: TextKind::ToolId, trim_newlines: false, closers: Vec::new() },
            ),
            marker_before_args(&t.call_id.suffix),
        ])
    };
    let (pre_name_id, id, post_args_id) = match t.call_id.pos {
        CallIdPosition::PreFuncName => (id_node(), Node::Empty, Node::Empty),
        CallIdPosition::BetweenFuncAndArgs => (Node::Empty, id_node(), Node::Empty),
        CallIdPosition::PostArgs => (Node::Empty, Node::Empty, id_node()),
        CallIdPosition::None | CallIdPosition::NameInId => (Node::Empty, Node::Empty, Node::Empty),
    };
    let python = t.format.python_dict_arguments;
    let after = || -> Node {
        let args = match t.format.mode {
            ToolFormatMode::TagWithTagged => tagged_arguments(spec),
            _ => Node::seq(vec![
                marker(&t.arguments.start),
                Node::Space,
                Node::Json { kind: JsonKind::ToolArgs, schema: None, python, marker: String::new(), ends: closers_from(&t.arguments.end, spec) },
                closer(&t.arguments.end, &call_closers(spec, true)),
            ]),
        };
        let name_end = match (suffix.is_empty(), attribute) {
            (true, _) => Node::Empty,
            // (JSON arguments may follow without the `>`, as after any
            // name suffix: see `marker_before_args`.)
            (false, true) if t.format.mode == ToolFormatMode::TagWithJson => attribute_end(Node::seq(vec![Node::Space, Node::lit("{")])),
            (false, true) => attribute_end(Node::Empty),
            (false, false) => marker_before_args(&suffix),
        };
        Node::seq(vec![
            name_end,
            id.clone(),
            args,
            post_args_id.clone(),
            closer(&t.function.close, &call_closers(spec, false)),
        ])
    };
    Node::seq(vec![Node::Mark(Mark::ToolOpen), pre_name_id, Node::Space, named(Node::Empty, &stops, &after)])
}

/// One object literal with bare keys and marked strings (Gemma 4):
/// `{city:<|"|>Paris<|"|>,days:3,tags:[<|"|>a<|"|>]}`, read whole by the
/// JSON scanner's marked dialect and reported as JSON. A marked value is a
/// string; any other value is JSON, nested objects and arrays included.
fn object_arguments(spec: &FormatSpec) -> Node {
    let a = &spec.tools.arguments;
    // The template may print scalars with Python's `str` (`None`).
    let python = spec.tools.format.python_dict_arguments || spec.tools.format.python_scalar_arguments;
    Node::Json { kind: JsonKind::ToolArgs, schema: None, python, marker: a.string_quote.trim().to_string(), ends: call_closers(spec, true) }
}

/// A raw value whose schema type is not a string (or that the markup marks
/// as JSON, DSML's `string="false"`): JSON when it opens like an object, an
/// array or a string (a Python literal too, where the template writes
/// Python), read as it streams; anything else is `otherwise` (an untyped
/// value: JSON when the whole short value is JSON text, `42`, `true`, else a
/// string). Models write values their type does not allow (an ISO date for
/// an integer, one bare word for an array, `Paris` marked `string="false"`):
/// a JSON parser would break the call there, and the value is kept as the
/// string the model wrote. The fallback is lenient: grammars keep the
/// schema's JSON form.
///
/// ```text
/// <parameter=exclude_domains>pinterest.com</parameter>   → "pinterest.com"
/// <parameter=timeout>2026-01-15</parameter>              → "2026-01-15"
/// <parameter=timeout>30</parameter>                      → 30
/// <parameter=tags>["a", "b"]</parameter>                 → ["a", "b"]
/// ```
fn typed_value(python: bool, ends: &[String], otherwise: Node) -> Node {
    let json = |python: bool| Node::seq(vec![Node::Space, Node::Json { kind: JsonKind::ArgValue, schema: None, python, marker: String::new(), ends: Vec::new() }, Node::Space]);
    let opens = |openers: &[&str]| Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::one_of(openers.iter().copied())])));
    const JSON: [&str; 3] = ["{", "[", "\""];
    const PYTHON: [&str; 4] = ["'", "True", "False", "None"];
    if python {
        return Node::Choice(vec![Alt { guard: opens(&[&JSON[..], &PYTHON[..]].concat()), body: json(true) }, Alt::lenient(Node::Empty, otherwise)]);
    }
    // Models write Python's constants where the template writes JSON too
    // (GLM 4.6: `<arg_value>True</arg_value>` for a boolean): vLLM's and
    // sglang's GLM and MiniMax parsers fall back to `ast.literal_eval`.
    // Only as the whole value (`Truely` is text).
    let whole = Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::one_of(PYTHON[1..].iter().copied()), Node::Space, Node::one_of(ends.iter().cloned())])));
    // They write a Python dict or list there too (GLM 4.6:
    // `<arg_value>{'a': 1, 'b': None}</arg_value>`): found by its first
    // key or item quoted with `'`.
    Node::Choice(vec![
        Alt::lenient(opens(&["{'", "['"]), json(true)),
        Alt { guard: opens(&JSON), body: json(false) },
        Alt::lenient(whole, json(true)),
        Alt::lenient(Node::Empty, otherwise),
    ])
}

/// `<name-prefix>NAME<name-suffix>[<value-prefix>]VALUE<value-suffix>` per argument.
fn tagged_arguments(spec: &FormatSpec) -> Node {
    let a = &spec.tools.arguments;
    if !a.string_quote.trim().is_empty() {
        // Gemma 4 also writes them in parentheses, in long agentic
        // contexts: as a Python call's (`call:get_weather(city="Paris")`:
        // omlx #1846, hermes-agent #7449) or as its object literal's
        // (`call:terminal(command:<|"|>ls -a<|"|>)`: vLLM #53642). Read as
        // keyword arguments of either kind. Lenient: grammars keep the
        // object literal.
        let opens = Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::lit("(")])));
        // (Whole, with its `)`: a lenient form is read in full, so its
        // strings end only at their quote before `,` or `)`.)
        let keywords = Alt::lenient(opens, Node::seq(vec![Node::Space, python_arguments(&[], a.string_quote.trim())]));
        return Node::Choice(vec![keywords, Alt { guard: Node::Empty, body: object_arguments(spec) }]);
    }
    let python = spec.tools.format.python_scalar_arguments || spec.tools.format.python_dict_arguments;
    let name_prefix = a.name_prefix.trim().to_string();
    let (name_end, value_prefix) = if a.name_suffix.trim().is_empty() {
        (a.value_prefix.trim().to_string(), String::new())
    } else {
        (a.name_suffix.trim().to_string(), a.value_prefix.trim().to_string())
    };
    let value_suffix = a.value_suffix.trim().to_string();
    // The newline the template writes right before a value (Qwen3-Coder's
    // `<parameter=k>\nVALUE\n</parameter>`) and the one before its closer
    // are layout; a template that writes the value tight against its
    // markers (GLM's `<arg_value>VALUE</arg_value>`) has none, and a value's
    // own edge newlines are text.
    let before_value = if a.value_prefix.is_empty() { &a.name_suffix } else { &a.value_prefix };
    let layout = before_value.ends_with('\n');
    // A value prefix that says the value's type (`string="true">` or
    // `string="false">`): the name ends where the two prefixes part, and the
    // rest of each picks how the value is read.
    let typed = typed_prefixes(&a.value_prefix, &a.json_value_prefix);
    let (name_end, value_prefix) = match &typed {
        Some((common, _, _)) if a.name_suffix.trim().is_empty() => (common.clone(), String::new()),
        _ => (name_end, value_prefix),
    };
    // Where the typing attribute is left out (DeepSeek V3.2 and V4: `<｜DSML｜
    // parameter name="arg1">1</…>`, as a vLLM-derived DSML parser reads
    // it): the name's closing quote, then the tag's end that both prefixes
    // end with. The value is then read by the schema's type.
    let untyped_end = match &typed {
        Some((common, string, json)) if a.name_suffix.trim().is_empty() => {
            let name_close = common.split_whitespace().next().filter(|c| *c != common.as_str());
            let tag_end = string.chars().last().filter(|c| json.ends_with(*c) && matches!(c, '>' | ']'));
            name_close.zip(tag_end).map(|(q, e)| format!("{q}{e}"))
        }
        _ => None,
    };
    if name_prefix.is_empty() || value_suffix.is_empty() {
        // Not a layout we can read argument by argument.
        return Node::seq(vec![Node::Mark(Mark::ArgsOpen), Node::Mark(Mark::ArgsClose)]);
    }
    // A raw value ends at its closer, or at the call's or section's closer
    // when the model left its own out.
    // A raw value also ends where the next argument's name starts, when the
    // model left the value's closer out before it (vLLM reads
    // `<parameter=a>\n1\n<parameter=b>` as two arguments too).
    let mut outer = call_closers(spec, true);
    outer.push(name_prefix.clone());
    let stem = closing_tag_stem(&value_suffix);
    let mut value_stops = vec![value_suffix.clone()];
    value_stops.extend(stem.iter().flat_map(|stem| MISSPELLED_CLOSER_ENDS.iter().map(move |end| format!("{stem}{end}"))));
    value_stops.extend(outer.iter().filter(|o| **o != value_suffix).cloned());
    // The template writes more markup after a value's closing tag (the
    // next argument, the call's closer), and writes the value raw: a
    // closing tag that text follows is the value's own (a file holding
    // `</parameter>`: Rapid-MLX #1542, vLLM #44060). Only the value's own
    // closer: after the call's, text may follow.
    let closers: Vec<String> = stem.iter().map(|_| value_suffix.clone()).collect();
    let value = |kind: ValueKind| -> Node {
        let raw = |kind: TextKind| Node::Until { stops: value_stops.clone(), kind, trim_newlines: layout, closers: closers.clone() };
        let v = match kind {
            ValueKind::String => raw(TextKind::ArgString),
            ValueKind::Auto | ValueKind::StringOrNull => raw(TextKind::ArgAuto),
            ValueKind::Json => typed_value(python, &value_stops, raw(TextKind::ArgAuto)),
        };
        let close = match (&stem, closer_after(Node::Empty, &value_suffix, &outer)) {
            (Some(stem), Node::Choice(mut alts)) => {
                alts.push(misspelled_closer(stem));
                Node::Choice(alts)
            }
            (_, close) => close,
        };
        Node::seq(vec![marker_or_missing(&value_prefix), v, close, Node::Space])
    };
    let by_schema = || Node::ByArgType {
        string: Box::new(value(ValueKind::String)),
        json: Box::new(value(ValueKind::Json)),
        auto: Box::new(value(ValueKind::Auto)),
    };
    let misspelled_end = if untyped_end.is_none() { name_end_misspelled(&name_prefix, &name_end) } else { None };
    let mut alts = Vec::new();
    // Each argument: its name, then its value read by its declared type.
    // (`misspelled_end` is there exactly for attribute names.)
    let name_ends = misspelled_end.iter().map(|_| ATTRIBUTE_NAME_END.to_string());
    let name = Node::Until { stops: [Some(name_end.clone()), untyped_end.clone(), misspelled_end.clone()].into_iter().flatten().chain(name_ends).collect(), kind: TextKind::ArgName, trim_newlines: false, closers: Vec::new() };
    let body = Node::seq(vec![
        name,
        by_type_after(&name_end, untyped_end.as_deref(), misspelled_end.as_deref(), match &typed {
            // The parser reads either form, whatever the schema says;
            // each branch lists the schema's form first, which is the
            // one a grammar allows (see `Node::ByArgType`).
            Some((_, string, json)) => {
                let as_string = Alt { guard: Node::lit(string.clone()), body: value(ValueKind::String) };
                let as_json = Alt { guard: Node::lit(json.clone()), body: value(ValueKind::Json) };
                Node::ByArgType {
                    string: Box::new(Node::Choice(vec![as_string.clone(), as_json.clone()])),
                    json: Box::new(Node::Choice(vec![as_json.clone(), as_string.clone()])),
                    auto: Box::new(Node::Choice(vec![as_string, as_json])),
                }
            }
            None => by_schema(),
        }, by_schema),
    ]);
    // The doubled opener first: its guard is the longer. (An alternative
    // of its own, not a node before the name: grammars leave it out and
    // still see an argument list, which they type by the schema.)
    if let Some(again) = name_start_again(&name_prefix) {
        alts.push(Alt::lenient(again, body.clone()));
    }
    alts.push(Alt { guard: Node::seq(vec![Node::Space, Node::lit(name_prefix.clone())]), body });
    let n = alts.len();
    let tagged = Node::seq(vec![
        Node::Mark(Mark::ArgsOpen),
        stray_value_closer(spec),
        Node::Repeat { alts, limits: vec![None; n], recover: None },
        Node::Mark(Mark::ArgsClose),
    ]);
    Node::Choice(vec![json_arguments_instead(spec, python), Alt { guard: Node::Empty, body: tagged }])
}

/// The arguments as one JSON object where the template writes them tag by
/// tag (DeepSeek V3.2: `<｜DSML｜invoke name="f">\n{"city": "Paris"}\n
/// </｜DSML｜invoke>`; sglang's DSML detector reads the invoke's body as JSON
/// when it is an object). Lenient: grammars keep the tags. Without it the
/// call ended at the `{` with no arguments and the object became content.
fn json_arguments_instead(spec: &FormatSpec, python: bool) -> Alt {
    let opens = Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::lit("{")])));
    let object = Node::Json { kind: JsonKind::ToolArgs, schema: None, python, marker: String::new(), ends: call_closers(spec, true) };
    Alt::lenient(opens, Node::seq(vec![Node::Space, object, Node::Space]))
}

/// A closing tag without its `>` (`</parameter`): models misspell the end
/// of a value's closer (Qwen3.5 and 3.6 write `</parameter/>`,
/// `</parameter1>`, `</parameter_function>`, or `</parameter` cut short;
/// sglang #27336 reads them all as the closer). `None` for other markers.
fn closing_tag_stem(closer: &str) -> Option<String> {
    (closer.starts_with("</") && is_tag(closer)).then(|| closer[..closer.len() - 1].to_string())
}

/// What ends a value as a misspelled closer after the stem: the characters
/// reported after it (`/`, `1`, `_`), or the next tag or line where the
/// closer is cut short. Never a letter: `</parameters>` in a value (XML the
/// model edits) is text, as before. Each is one more stop of every raw
/// value (Qwen3-Coder's three calls streamed: +1.6% instructions for these
/// five, +5.0% with all ten digits and a space), so the list stays at
/// what was seen.
const MISSPELLED_CLOSER_ENDS: [&str; 5] = ["/", "_", "<", "\n", "1"];

/// The lenient end of a value at a misspelled closer (the stem, then one of
/// [`MISSPELLED_CLOSER_ENDS`]): what the model wrote up to the tag's `>` is
/// dropped (a word's worth: it stops at whitespace and at the next tag), and
/// the `>` where written. After the exact closer in a choice, which the stem
/// is a prefix of.
fn misspelled_closer(stem: &str) -> Alt {
    let rest = Node::Until { stops: [">", "<", " ", "\n"].map(str::to_string).to_vec(), kind: TextKind::Discard, trim_newlines: false, closers: Vec::new() };
    Alt::lenient(Node::lit(stem), Node::seq(vec![rest, Node::optional(Node::lit(">"), Node::Empty)]))
}

/// After an argument's name: the markup that ends it (`name_end`), then
/// the value as `typed` reads it; or, where the markup that types the
/// value is left out (`untyped_end`, lenient), the value by the schema's
/// type (`by_schema`).
fn by_type_after(name_end: &str, untyped_end: Option<&str>, misspelled_end: Option<&str>, typed: Node, by_schema: impl Fn() -> Node) -> Node {
    match (untyped_end, misspelled_end) {
        (Some(end), _) => Node::Choice(vec![Alt { guard: Node::lit(name_end), body: typed }, Alt::lenient(Node::lit(end), by_schema())]),
        // (An attribute name: also without its `>` before the line break,
        // which is then the value's layout; see `attribute_name`.)
        (None, Some(end)) => Node::Choice(vec![
            Alt { guard: Node::lit(name_end), body: Node::seq(vec![name_end_again(name_end), typed.clone()]) },
            Alt::lenient(Node::lit(end), typed.clone()),
            Alt::lenient(Node::Peek(Box::new(Node::lit("\n"))), typed),
        ]),
        (None, None) => Node::seq(vec![Node::lit(name_end), name_end_again(name_end), typed]),
    }
}

/// The separator that ends an argument name's prefix (`=` of
/// `<parameter=`), where the name ends at a tag's `>`: models write it
/// again in place of the `>` (Qwen3-Coder's `<parameter=command=str_replace</parameter>`,
/// OpenHands #10039 / #10539), and the value follows it.
fn name_end_misspelled(name_prefix: &str, name_end: &str) -> Option<String> {
    attribute_name(name_prefix, name_end).then(|| "=".to_string())
}

/// Whether a name is a tag's attribute value (`<function=NAME>`,
/// `<parameter=NAME>`: a tag prefix that ends in `=`, the name ended by the
/// tag's `>`). Models quote it (`<parameter="command">`: the largest share
/// of Qwen's schema-rejected calls in 600 opencode runs,
/// openvinotoolkit/model_server #4487; `<function="bash">`, the same) or
/// leave the `>` out before the line break (`<function=bash\n<parameter=…`,
/// `<parameter=command\nls\n</parameter>`: Qwen3.6, mlx-lm #1811 and
/// #1881). The quotes go where every name's do (`machine::name_text`);
/// the `>` is read by [`attribute_end`].
fn attribute_name(prefix: &str, end: &str) -> bool {
    is_tag_start(prefix) && prefix.ends_with('=') && end == ">"
}

/// The end of an attribute name ([`attribute_name`]): the tag's `>`, or
/// nothing where the line breaks there, or where `next` follows (lenient;
/// `Node::Empty`: only the line break). Such a name also ends at the line
/// break ([`ATTRIBUTE_NAME_END`]).
fn attribute_end(next: Node) -> Node {
    // (The `>` right after the name first: a guard of one literal is the
    // cheapest to try. Lenient: grammars write the next alternative, which
    // takes it as well.)
    let mut alts = vec![
        Alt::lenient(Node::lit(">"), Node::Empty),
        Alt { guard: Node::seq(vec![Node::Space, Node::lit(">")]), body: Node::Empty },
        Alt::lenient(Node::Peek(Box::new(Node::lit("\n"))), Node::Empty),
    ];
    if next != Node::Empty {
        alts.push(Alt::lenient(Node::Peek(Box::new(next)), Node::Empty));
    }
    Node::Choice(alts)
}

/// What else ends an attribute name ([`attribute_name`]): the line break
/// where the `>` is left out (never part of a name).
const ATTRIBUTE_NAME_END: &str = "\n";

/// An argument name's closing tag written twice (GLM-4.7:
/// `<arg_key>city</arg_key></arg_key><arg_value>…`, vLLM #54971 strips the
/// stray one): the second is markup too. Only a closing tag: a name that
/// ends at `>` (`<parameter=city>`) may have a value that starts with one.
fn name_end_again(name_end: &str) -> Node {
    if !(name_end.starts_with("</") && is_tag(name_end)) {
        return Node::Empty;
    }
    Node::lenient_optional(Node::seq(vec![Node::Space, Node::lit(name_end)]), Node::Empty)
}

/// An argument name's opening tag written twice (GLM-4.7:
/// `<arg_key><arg_key>path</arg_key>…`, vLLM #54971 strips the stray one):
/// the guard of an argument whose second tag is markup too, not the name's
/// first characters. Only a whole opening tag: `<parameter=` is followed by
/// the name itself.
fn name_start_again(name_prefix: &str) -> Option<Node> {
    (!name_prefix.starts_with("</") && is_tag(name_prefix)).then(|| Node::seq(vec![Node::Space, Node::lit(name_prefix), Node::Space, Node::lit(name_prefix)]))
}

/// The value's closing tag, where a format whose call name ends at what
/// follows it (GLM: `<tool_call>NAME<arg_key>…`) is written right after
/// the name: GLM 5.2 writes `<tool_call>tool_12</arg_value></tool_call>`
/// for a call without arguments (fireworks python-sdk #119, where the
/// server reported the tag as part of the name). The stray closer is
/// markup; the arguments follow it as usual. Empty for other formats (see
/// [`name_stops`], which stops the name there).
fn stray_value_closer(spec: &FormatSpec) -> Node {
    match stray_closer_after_name(spec) {
        Some(closer) => Node::lenient_optional(Node::seq(vec![Node::Space, Node::lit(closer)]), Node::Empty),
        None => Node::Empty,
    }
}

/// The closing tag of a tagged argument's value, for formats whose call
/// name has no suffix of its own (see [`stray_value_closer`]).
fn stray_closer_after_name(spec: &FormatSpec) -> Option<String> {
    let t = &spec.tools;
    let closer = t.arguments.value_suffix.trim();
    (t.format.mode == ToolFormatMode::TagWithTagged && t.function.name_suffix.trim().is_empty() && t.arguments.string_quote.trim().is_empty() && closer.starts_with("</") && is_tag(closer))
        .then(|| closer.to_string())
}

/// The markup shared by a string value's and a JSON value's prefixes, and the
/// rest of each (`"`, `string="true">`, `string="false">`); `None` when the
/// template writes one prefix for every value.
pub(crate) fn typed_prefixes(string: &str, json: &str) -> Option<(String, String, String)> {
    let (string, json) = (string.trim(), json.trim());
    if json.is_empty() || string == json {
        return None;
    }
    let common = crate::diff::common_prefix_len(string, json);
    let shared = string[..common].trim();
    let (s, j) = (string[common..].trim(), json[common..].trim());
    (!shared.is_empty() && !s.is_empty() && !j.is_empty()).then(|| (shared.to_string(), s.to_string(), j.to_string()))
}
