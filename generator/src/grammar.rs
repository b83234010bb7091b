//! The grammar backend: from the format IR to a template's tool-call
//! [`Envelope`] (static data in the generated module), and from the envelope
//! and a request to GBNF and Lark (the runtime's
//! [`chat_parser_runtime::grammar::request::build`], the same code a server
//! runs with its own tools).
//!
//! The envelope is the IR of the tool calls from their trigger on, plus the
//! reasoning block that precedes a reply the grammar covers whole. Parser
//! lookaheads (`Peek`, the end of output) and events (`Mark`) have no
//! grammar counterpart and are dropped; a guarded choice becomes a plain
//! alternative.
//!
//! # Example
//! ```
//! use chat_parser_generator::{grammar, spec_from_source};
//! let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../templates/json_tool_call.jinja")).unwrap();
//! let spec = spec_from_source("json_tool_call.jinja", &source).unwrap();
//! let reply = grammar::static_grammar(&spec).unwrap();
//! assert!(reply.lazy);
//! assert!(reply.grammar.to_gbnf().starts_with("root ::= "));
//! ```

use chat_parser_runtime::envelope::{Envelope, Op, TextRole, TriggerKind};
use chat_parser_runtime::grammar::request::{build, ReplyGrammar, Request};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::ir::build::{tool_calls, tool_triggers, ParseOptions, ReasoningFormat};
use crate::ir::{Alt, JsonKind, Node, TextKind};
use crate::spec::{FormatSpec, Prefill, ReasoningMode};

/// An envelope with owned storage (what the generator builds; see
/// [`EnvelopeBuf::with`] for the borrowed view).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvelopeBuf {
    pub strings: Vec<String>,
    pub calls: [Vec<Op>; 2],
    pub reasoning: [Vec<Op>; 2],
    pub triggers: [Vec<(TriggerKind, String)>; 2],
    pub preserved_tokens: Vec<String>,
}

impl EnvelopeBuf {
    /// Runs `f` with the envelope as the runtime sees it.
    pub fn with<R>(&self, f: impl FnOnce(&Envelope<'_>) -> R) -> R {
        let strings: Vec<&str> = self.strings.iter().map(String::as_str).collect();
        let triggers: [Vec<(TriggerKind, &str)>; 2] =
            [0, 1].map(|i| self.triggers[i].iter().map(|(k, v)| (*k, v.as_str())).collect());
        let preserved: Vec<&str> = self.preserved_tokens.iter().map(String::as_str).collect();
        let envelope = Envelope {
            strings: &strings,
            calls: [&self.calls[0], &self.calls[1]],
            reasoning: [&self.reasoning[0], &self.reasoning[1]],
            triggers: [&triggers[0], &triggers[1]],
            preserved_tokens: &preserved,
        };
        f(&envelope)
    }

    /// The envelope as a Rust expression of type `Envelope<'static>`.
    pub fn tokens(&self) -> TokenStream {
        let strings = self.strings.iter().map(|s| Literal::string(s));
        let ops = |ops: &[Op]| {
            let items = ops.iter().map(op_tokens);
            quote!(&[#(#items),*])
        };
        let (c0, c1) = (ops(&self.calls[0]), ops(&self.calls[1]));
        let (r0, r1) = (ops(&self.reasoning[0]), ops(&self.reasoning[1]));
        let triggers = |t: &[(TriggerKind, String)]| {
            let items = t.iter().map(|(k, v)| {
                let v = Literal::string(v);
                match k {
                    TriggerKind::Word => quote!((TriggerKind::Word, #v)),
                    TriggerKind::PatternFull => quote!((TriggerKind::PatternFull, #v)),
                }
            });
            quote!(&[#(#items),*])
        };
        let (t0, t1) = (triggers(&self.triggers[0]), triggers(&self.triggers[1]));
        // The thinking-on and thinking-off variants are often the same:
        // written once then.
        let same_reasoning = self.reasoning[0] == self.reasoning[1];
        let same_triggers = self.triggers[0] == self.triggers[1];
        let (reasoning_const, reasoning) = if same_reasoning {
            (quote!(const REASONING: &[Op] = #r0;), quote!([REASONING, REASONING]))
        } else {
            (quote!(), quote!([#r0, #r1]))
        };
        let (triggers_const, triggers) = if same_triggers {
            (quote!(const TRIGGERS: &[(TriggerKind, &str)] = #t0;), quote!([TRIGGERS, TRIGGERS]))
        } else {
            (quote!(), quote!([#t0, #t1]))
        };
        let preserved = self.preserved_tokens.iter().map(|s| Literal::string(s));
        quote! {
            {
                #reasoning_const
                #triggers_const
                Envelope {
                    strings: &[#(#strings),*],
                    calls: [#c0, #c1],
                    reasoning: #reasoning,
                    triggers: #triggers,
                    preserved_tokens: &[#(#preserved),*],
                }
            }
        }
    }
}

fn op_tokens(op: &Op) -> TokenStream {
    let n = |v: u16| Literal::u16_unsuffixed(v);
    match *op {
        Op::Seq(k) => {
            let k = n(k);
            quote!(Op::Seq(#k))
        }
        Op::Alt(k) => {
            let k = n(k);
            quote!(Op::Alt(#k))
        }
        Op::Repeat { max } => {
            let max = n(max);
            quote!(Op::Repeat { max: #max })
        }
        Op::Lit(s) => {
            let s = n(s);
            quote!(Op::Lit(#s))
        }
        Op::Space => quote!(Op::Space),
        Op::OptionalNewline => quote!(Op::OptionalNewline),
        Op::Text { role, stops, count } => {
            let role = match role {
                TextRole::Reasoning => quote!(TextRole::Reasoning),
                TextRole::Content => quote!(TextRole::Content),
                TextRole::ToolId => quote!(TextRole::ToolId),
                TextRole::ArgString => quote!(TextRole::ArgString),
                TextRole::ArgAuto => quote!(TextRole::ArgAuto),
            };
            let (stops, count) = (n(stops), n(count));
            quote!(Op::Text { role: #role, stops: #stops, count: #count })
        }
        Op::Call => quote!(Op::Call),
        Op::Name { stops, count } => {
            let (stops, count) = (n(stops), n(count));
            quote!(Op::Name { stops: #stops, count: #count })
        }
        Op::IdName { stops, count } => {
            let (stops, count) = (n(stops), n(count));
            quote!(Op::IdName { stops: #stops, count: #count })
        }
        Op::Args { python, marker } => {
            let marker = option_tokens(marker);
            quote!(Op::Args { python: #python, marker: #marker })
        }
        Op::TaggedArgs => quote!(Op::TaggedArgs),
        Op::SeparatedArgs { separator } => {
            let separator = n(separator);
            quote!(Op::SeparatedArgs { separator: #separator })
        }
        Op::ArgName { stops, count } => {
            let (stops, count) = (n(stops), n(count));
            quote!(Op::ArgName { stops: #stops, count: #count })
        }
        Op::ByArgType => quote!(Op::ByArgType),
        Op::Json { python, marker } => {
            let marker = option_tokens(marker);
            quote!(Op::Json { python: #python, marker: #marker })
        }
        Op::JsonStringContent { python } => quote!(Op::JsonStringContent { python: #python }),
    }
}

/// The tool-call envelope of a format.
pub fn envelope(spec: &FormatSpec) -> EnvelopeBuf {
    let mut w = Writer { strings: Vec::new(), python: spec.tools.format.python_dict_arguments };
    let mut env = EnvelopeBuf::default();
    for parallel in [false, true] {
        if let Some(node) = tool_calls(spec, parallel) {
            let mut ops = Vec::new();
            w.node(&node, &mut ops);
            env.calls[usize::from(parallel)] = ops;
        }
    }
    for (i, thinking) in [true, false].into_iter().enumerate() {
        let mut ops = Vec::new();
        for node in reasoning_nodes(spec, thinking) {
            w.node(&node, &mut ops);
        }
        env.reasoning[i] = ops;
        env.triggers[i] = triggers(spec, thinking);
    }
    env.strings = w.strings;
    env.preserved_tokens = spec.preserved_tokens.clone();
    env
}

/// The module's static grammar: the envelope with generic names and JSON
/// arguments, parallel calls allowed, thinking on, lazy.
pub fn static_grammar(spec: &FormatSpec) -> Option<ReplyGrammar> {
    envelope(spec).with(|env| build(env, &Request { parallel_tool_calls: true, ..Request::default() }))
}

/// The grammar for a request (its tools, `tool_choice`, parallel calls, reply
/// schema and thinking), or `None` when nothing constrains the reply.
pub fn for_request(spec: &FormatSpec, options: &ParseOptions) -> Option<ReplyGrammar> {
    envelope_request(&envelope(spec), options)
}

/// [`for_request`] with the envelope already built (callers that build many
/// grammars for one template).
pub fn envelope_request(envelope: &EnvelopeBuf, options: &ParseOptions) -> Option<ReplyGrammar> {
    use chat_parser_runtime::grammar::request::{ToolChoice as Choice, ToolSchema};
    use chat_parser_runtime::grammar::value::Value as SchemaValue;
    // serde_json writes JSON the runtime's parser reads; a schema too deep
    // for it constrains nothing rather than failing the request.
    let value = |v: &serde_json::Value| SchemaValue::parse(&v.to_string()).ok();
    let params: Vec<(String, Option<SchemaValue>)> = options
        .tools
        .iter()
        .filter_map(|t| {
            let f = t.get("function").unwrap_or(t);
            Some((f.get("name")?.as_str()?.to_string(), f.get("parameters").and_then(value)))
        })
        .collect();
    let tools: Vec<ToolSchema> = params.iter().map(|(name, p)| ToolSchema { name, parameters: p.as_ref() }).collect();
    // A reply schema the value type cannot read still asks for a JSON reply:
    // any value (`{}`), never the tool-call grammar.
    let schema = options.json_schema.as_ref().map(|s| value(s).unwrap_or(SchemaValue::Object(Vec::new())));
    let tool_choice = match options.tool_choice {
        crate::ir::build::ToolChoice::Auto => Choice::Auto,
        crate::ir::build::ToolChoice::Required => Choice::Required,
        crate::ir::build::ToolChoice::None => Choice::None,
    };
    let request = Request {
        tools: &tools,
        tool_choice,
        parallel_tool_calls: options.parallel_tool_calls,
        json_schema: schema.as_ref(),
        enable_thinking: options.enable_thinking,
    };
    envelope.with(|env| build(env, &request))
}

/// What the reply holds before its body when the grammar covers all of it:
/// the reasoning block as the parser reads it (from the IR built for
/// structured output, up to the JSON value).
fn reasoning_nodes(spec: &FormatSpec, thinking: bool) -> Vec<Node> {
    let options = ParseOptions {
        enable_thinking: thinking,
        reasoning_format: ReasoningFormat::Auto,
        json_schema: Some(serde_json::json!({})),
        ..ParseOptions::default()
    };
    let items = match crate::ir::build::build(spec, &options) {
        Node::Seq(items) => items,
        other => vec![other],
    };
    // (A reply that opens with whitespace, inside the role header the
    // prompt opened (harmony), has it before its reasoning, not before a
    // JSON value: the content there reads it too.)
    let leading_space = usize::from(spec.channels.is_used() && matches!(items.first(), Some(Node::Space)));
    items.into_iter().skip(leading_space).take_while(|n| !matches!(n, Node::Json { .. } | Node::Space)).collect()
}

/// Trigger words (the call or section marker); with a reasoning block, a
/// pattern that fires only after it, so reasoning is never constrained.
fn triggers(spec: &FormatSpec, thinking: bool) -> Vec<(TriggerKind, String)> {
    let words = tool_triggers(spec);
    let start = spec.reasoning.start.trim();
    let end = spec.reasoning.end.trim();
    let prefill = if thinking { spec.generation_prompt.thinking_prefill } else { spec.generation_prompt.no_thinking_prefill };
    let reasoning = spec.reasoning.mode != ReasoningMode::None && !end.is_empty() && prefill != Prefill::ClosedReasoning;
    words
        .into_iter()
        .map(|word| {
            let word = word.trim().to_string();
            if !reasoning {
                return (TriggerKind::Word, word);
            }
            let (s, e, t) = (regex_escape(start), regex_escape(end), regex_escape(&word));
            let pattern = if prefill == Prefill::OpenReasoning || start.is_empty() {
                // The output starts inside the block: the trigger counts after its end.
                format!("[\\s\\S]*?{e}[\\s\\S]*?({t})[\\s\\S]*")
            } else {
                // A block at the start must end first; without one, anywhere.
                format!("(?:\\s*{s}[\\s\\S]*?{e}|(?!\\s*{s}))[\\s\\S]*?({t})[\\s\\S]*")
            };
            (TriggerKind::PatternFull, pattern)
        })
        .collect()
}

/// `s` with regex metacharacters escaped.
fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.^$|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Writes IR nodes as envelope ops.
struct Writer {
    strings: Vec<String>,
    python: bool,
}

impl Writer {
    fn string(&mut self, s: &str) -> u16 {
        match self.strings.iter().position(|x| x == s) {
            Some(i) => i as u16,
            None => {
                self.strings.push(s.to_string());
                (self.strings.len() - 1) as u16
            }
        }
    }

    /// A stop list: consecutive strings (reused when the same list exists).
    fn stops(&mut self, stops: &[String]) -> (u16, u16) {
        let n = stops.len();
        if n == 0 {
            return (0, 0);
        }
        if let Some(i) = self.strings.windows(n).position(|w| w == stops) {
            return (i as u16, n as u16);
        }
        let at = self.strings.len() as u16;
        self.strings.extend(stops.iter().cloned());
        (at, n as u16)
    }

    /// A sequence of nodes, where an argument followed by a loop of the
    /// same argument after a separator (`a=1, b=2` in a Python call: the
    /// IR's `arg {"," => arg}*`) becomes [`Op::SeparatedArgs`], so that a
    /// grammar writes each declared argument once, typed by its schema.
    fn items(&mut self, items: &[Node], out: &mut Vec<Op>) {
        let mut pieces: Vec<(&[Node], Option<&str>)> = Vec::new();
        for k in 0..items.len() {
            match separated_at(items, k) {
                Some((arg, sep)) if pieces.len() >= arg.len() => {
                    pieces.truncate(pieces.len() - arg.len());
                    pieces.push((arg, Some(sep)));
                }
                _ => pieces.push((&items[k..=k], None)),
            }
        }
        out.push(Op::Seq(pieces.len() as u16));
        for (nodes, sep) in pieces {
            match sep {
                Some(sep) => {
                    let separator = self.string(sep);
                    out.push(Op::SeparatedArgs { separator });
                    out.push(Op::Seq(nodes.len() as u16));
                    for n in nodes {
                        self.node(n, out);
                    }
                }
                None => nodes.iter().for_each(|n| self.node(n, out)),
            }
        }
    }

    fn node(&mut self, node: &Node, out: &mut Vec<Op>) {
        match node {
            Node::Empty | Node::Peek(_) | Node::Mark(_) | Node::End => out.push(Op::Seq(0)),
            Node::Literal(s) | Node::ArgKey(s) => {
                let s = self.string(s);
                out.push(Op::Lit(s));
            }
            Node::Space => out.push(Op::Space),
            Node::OptionalNewline => out.push(Op::OptionalNewline),
            Node::Seq(items) => match items.iter().position(|n| matches!(n, Node::Until { kind: TextKind::ToolName | TextKind::ToolIdName, .. })) {
                // The call from its name on is written once per tool.
                Some(k) => {
                    out.push(Op::Seq(k as u16 + 1));
                    for item in &items[..k] {
                        self.node(item, out);
                    }
                    out.push(Op::Call);
                    self.items(&items[k..], out);
                }
                None => self.items(items, out),
            },
            // An argument list's own empty form (`f()`): the separated
            // arguments already allow no argument where the tool has no
            // required one, and must not where it has.
            Node::Choice(alts)
                if matches!(alts.as_slice(), [Alt { guard: Node::Literal(_), body: Node::Empty }, Alt { guard: Node::Empty, body: Node::Seq(items) }]
                    if (0..items.len()).any(|k| separated_at(items, k).is_some())) =>
            {
                self.node(&alts[1].body, out)
            }
            Node::Choice(alts) => {
                // What only parsers accept is not written.
                let alts: Vec<&Alt> = alts.iter().filter(|a| !a.is_lenient()).collect();
                out.push(Op::Alt(alts.len() as u16));
                for a in alts {
                    out.push(Op::Seq(2));
                    self.node(&a.guard, out);
                    self.node(&a.body, out);
                }
            }
            Node::Repeat { alts, limits, .. } => {
                let (alts, limits): (Vec<&Alt>, Vec<Option<u32>>) =
                    alts.iter().zip(limits).filter(|(a, _)| !a.is_lenient()).map(|(a, l)| (a, *l)).unzip();
                let args = alts.len() == 1
                    && matches!(&alts[0].body, Node::Seq(items) if matches!(items.first(), Some(Node::Until { kind: TextKind::ArgName, .. })));
                if args {
                    out.push(Op::TaggedArgs);
                } else {
                    // The strict alternatives' limits (they share one
                    // count, `Node::Repeat`): the loop takes the largest.
                    let max = limits.iter().map(|l| l.map_or(u16::MAX, |n| n.min(u16::MAX as u32 - 1) as u16)).max().unwrap_or(u16::MAX);
                    out.push(Op::Repeat { max });
                    out.push(Op::Alt(alts.len() as u16));
                }
                for a in alts {
                    out.push(Op::Seq(2));
                    self.node(&a.guard, out);
                    self.node(&a.body, out);
                }
            }
            Node::Until { stops, kind, .. } => {
                let (from, count) = self.stops(stops);
                out.push(match kind {
                    TextKind::ToolName => Op::Name { stops: from, count },
                    TextKind::ToolIdName => Op::IdName { stops: from, count },
                    TextKind::ArgName => Op::ArgName { stops: from, count },
                    TextKind::Reasoning => Op::Text { role: TextRole::Reasoning, stops: from, count },
                    TextKind::ToolId => Op::Text { role: TextRole::ToolId, stops: from, count },
                    TextKind::ArgString => Op::Text { role: TextRole::ArgString, stops: from, count },
                    TextKind::ArgAuto => Op::Text { role: TextRole::ArgAuto, stops: from, count },
                    TextKind::Content | TextKind::Discard | TextKind::Dropped => Op::Text { role: TextRole::Content, stops: from, count },
                });
            }
            Node::Json { kind, python, marker, .. } => {
                let marker = (!marker.is_empty()).then(|| self.string(marker));
                out.push(match kind {
                    JsonKind::ToolArgs => Op::Args { python: *python, marker },
                    JsonKind::ArgValue | JsonKind::Content => Op::Json { python: *python, marker },
                })
            }
            Node::JsonStringContent(_) => out.push(Op::JsonStringContent { python: self.python }),
            // (The form grammars write: see `Node::ByToolName`.)
            Node::ByToolName { other, .. } => self.node(other, out),
            Node::ByArgType { string, json, auto } => {
                out.push(Op::ByArgType);
                // A typed branch's first alternative is the schema's form.
                let schema_form = |n: &Node| match n {
                    Node::Choice(alts) if !alts.is_empty() => Node::seq(vec![alts[0].guard.clone(), alts[0].body.clone()]),
                    other => other.clone(),
                };
                self.node(&schema_form(string), out);
                self.node(&schema_form(json), out);
                self.node(auto, out);
            }
        }
    }
}

/// At `items[k]`, a loop of one argument after a separator that repeats
/// the argument just before it (the IR's `arg {"," => arg}*`): the
/// argument's nodes and the separator.
fn separated_at(items: &[Node], k: usize) -> Option<(&[Node], &str)> {
    let Node::Repeat { alts, .. } = &items[k] else { return None };
    let [Alt { guard: Node::Literal(sep), body: Node::Seq(arg) }] = alts.as_slice() else { return None };
    let is_arg = arg.iter().any(|a| matches!(a, Node::Until { kind: TextKind::ArgName, .. }));
    (is_arg && k >= arg.len() && items[k - arg.len()..k] == arg[..]).then_some((arg.as_slice(), sep.as_str()))
}

/// `Some(i)` or `None` as tokens.
fn option_tokens(value: Option<u16>) -> TokenStream {
    match value {
        Some(i) => quote!(Some(#i)),
        None => quote!(None),
    }
}
