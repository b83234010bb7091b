//! The grammar for one request: a format's [`Envelope`] with the request's
//! tools (names and argument schemas), `tool_choice`, parallel calls and
//! structured output.
//!
//! - `tool_choice` auto: a *lazy* grammar. The output is free until a
//!   trigger appears (a call or section marker; with reasoning on, a pattern
//!   that only fires after the reasoning block); from the trigger on it must
//!   be tool calls.
//! - `tool_choice` required: the whole reply is the reasoning block (free
//!   text) and then tool calls.
//! - a JSON schema for the reply: the reasoning block, then one JSON value
//!   matching the schema.
//! - `parallel_tool_calls` false: exactly one call.
//!
//! Without declared tools the call's name is any text up to its end marker
//! and its arguments any JSON object (the module's static grammar).
//!
//! # Example
//! ```
//! use chat_parser_runtime::envelope::{Envelope, Op};
//! use chat_parser_runtime::grammar::request::{build, Request, ToolSchema};
//! use chat_parser_runtime::grammar::value::Value;
//! static CALL: &[Op] = &[
//!     Op::Seq(3), Op::Lit(0), Op::Call,
//!         Op::Seq(4), Op::Name { stops: 1, count: 1 }, Op::Lit(1), Op::Args { python: false, marker: None }, Op::Lit(2),
//!     Op::Space,
//! ];
//! let envelope = Envelope {
//!     strings: &["<call>", ">", "</call>"],
//!     calls: [CALL, CALL],
//!     reasoning: [&[], &[]],
//!     triggers: [&[], &[]],
//!     preserved_tokens: &["<call>", "</call>"],
//! };
//! let params = Value::parse(r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#).unwrap();
//! let tools = [ToolSchema { name: "get_weather", parameters: Some(&params) }];
//! let reply = build(&envelope, &Request { tools: &tools, ..Request::default() }).unwrap();
//! assert!(reply.lazy);
//! let gbnf = reply.grammar.to_gbnf();
//! // One alternative per tool: its name, then its arguments' schema.
//! assert!(gbnf.contains(r#"call-get-weather ::= "get_weather" ">" get-weather-args"#), "{gbnf}");
//! // Markup is written one character per literal (see `Grammar::text_without`).
//! assert!(gbnf.contains(r#""<" "c" "a" "l" "l" ">""#));
//! ```

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::schema::{any_object, any_value, schema_rule, SchemaOptions};
use super::value::Value;
use super::{Expr, Grammar};
use crate::envelope::{Envelope, Op, TextRole, TriggerKind};

/// The request's `tool_choice`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolChoice {
    #[default]
    Auto,
    Required,
    /// No tool calls: no tool grammar (a reply schema still applies).
    None,
}

/// A declared tool: its name and its parameters' JSON schema.
#[derive(Debug, Clone, Copy)]
pub struct ToolSchema<'a> {
    pub name: &'a str,
    pub parameters: Option<&'a Value>,
}

/// What shapes the grammar of a request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub tools: &'a [ToolSchema<'a>],
    pub tool_choice: ToolChoice,
    pub parallel_tool_calls: bool,
    /// Structured output: the reply is one JSON value matching this schema.
    pub json_schema: Option<&'a Value>,
    pub enable_thinking: bool,
}

impl Default for Request<'_> {
    fn default() -> Self {
        Request { tools: &[], tool_choice: ToolChoice::Auto, parallel_tool_calls: false, json_schema: None, enable_thinking: true }
    }
}

/// A trigger that switches a lazy grammar on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    pub kind: TriggerKind,
    pub value: String,
}

/// The grammar for a request and how an engine applies it.
#[derive(Debug, Clone)]
pub struct ReplyGrammar {
    pub grammar: Grammar,
    /// Applies only from a trigger on.
    pub lazy: bool,
    pub triggers: Vec<Trigger>,
    pub preserved_tokens: Vec<String>,
    /// Schema features the grammar could not express exactly.
    pub warnings: Vec<String>,
}

/// The grammar for `request` in the format of `envelope`, or `None` when
/// nothing constrains the reply (`tool_choice` none without a reply schema,
/// or a format without tool calls).
pub fn build(envelope: &Envelope<'_>, request: &Request<'_>) -> Option<ReplyGrammar> {
    let thinking = usize::from(!request.enable_thinking);
    let mut b = Builder { env: envelope, g: Grammar::new(), warnings: Vec::new(), depth: 0 };
    let reasoning = b.tree_all(envelope.reasoning[thinking], &Ctx::default());
    let (root, lazy) = if let Some(schema) = request.json_schema {
        let reply = schema_rule(&mut b.g, "reply", schema, &SchemaOptions::default(), &mut b.warnings);
        let ws = b.space();
        (Expr::seq([reasoning, ws.clone(), reply, ws]), false)
    } else {
        if request.tool_choice == ToolChoice::None {
            return None;
        }
        let ops = envelope.calls[usize::from(request.parallel_tool_calls)];
        if ops.is_empty() {
            return None;
        }
        let ctx = Ctx { tools: request.tools, ..Ctx::default() };
        let calls = b.tree_all(ops, &ctx);
        let calls = b.g.rule("tool-calls", calls);
        if request.tool_choice == ToolChoice::Required {
            let ws = b.space();
            (Expr::seq([reasoning, ws, calls]), false)
        } else {
            (calls, true)
        }
    };
    b.g.define("root", root);
    let triggers = if lazy {
        envelope.triggers[thinking].iter().map(|&(kind, value)| Trigger { kind, value: value.to_owned() }).collect()
    } else {
        Vec::new()
    };
    Some(ReplyGrammar {
        grammar: b.g,
        lazy,
        triggers,
        preserved_tokens: envelope.preserved_tokens.iter().map(|s| (*s).to_owned()).collect(),
        warnings: b.warnings,
    })
}

/// Where in a call the builder is.
#[derive(Clone, Copy, Default)]
struct Ctx<'r> {
    tools: &'r [ToolSchema<'r>],
    /// The call being written (with declared tools).
    tool: Option<ToolSchema<'r>>,
    /// The argument being written: its name and schema.
    arg: Option<(&'r str, &'r Value)>,
}

struct Builder<'e, 'a> {
    env: &'e Envelope<'a>,
    g: Grammar,
    warnings: Vec<String>,
    depth: usize,
}

/// Envelopes are shallow; a deeper tree is malformed data, not a format.
const MAX_DEPTH: usize = 64;

impl<'a> Builder<'_, 'a> {
    /// Whitespace between markup pieces: bounded, so a model cannot loop on
    /// whitespace forever inside a call.
    fn space(&mut self) -> Expr {
        let ws = Expr::repeat(Expr::class(&[(' ', ' '), ('\t', '\t'), ('\n', '\n'), ('\r', '\r')]), 0, Some(32));
        self.g.rule("ws", ws)
    }

    /// All subtrees of `ops`, in sequence.
    fn tree_all(&mut self, ops: &[Op], ctx: &Ctx<'_>) -> Expr {
        let mut i = 0;
        let mut items = Vec::new();
        while i < ops.len() {
            items.push(self.tree(ops, &mut i, ctx));
        }
        Expr::seq(items)
    }

    /// The subtree at `*i`, advancing `*i` past it.
    fn tree(&mut self, ops: &[Op], i: &mut usize, ctx: &Ctx<'_>) -> Expr {
        let Some(&op) = ops.get(*i) else { return Expr::empty() };
        *i += 1;
        if self.depth >= MAX_DEPTH {
            return Expr::empty();
        }
        self.depth += 1;
        let e = self.op(op, ops, i, ctx);
        self.depth -= 1;
        e
    }

    /// Advances `*i` past the subtree there.
    fn skip(ops: &[Op], i: &mut usize) {
        let mut pending = 1usize;
        while pending > 0 {
            let Some(op) = ops.get(*i) else { return };
            *i += 1;
            pending -= 1;
            pending += match *op {
                Op::Seq(n) | Op::Alt(n) => usize::from(n),
                Op::Repeat { .. } | Op::Call | Op::TaggedArgs | Op::SeparatedArgs { .. } => 1,
                Op::ByArgType => 3,
                _ => 0,
            };
        }
    }

    fn op(&mut self, op: Op, ops: &[Op], i: &mut usize, ctx: &Ctx<'_>) -> Expr {
        let env = self.env;
        match op {
            Op::Seq(n) => {
                let items: Vec<Expr> = (0..n).map(|_| self.tree(ops, i, ctx)).collect();
                Expr::seq(items)
            }
            Op::Alt(n) => {
                let items: Vec<Expr> = (0..n).map(|_| self.tree(ops, i, ctx)).collect();
                Expr::alt(items)
            }
            Op::Repeat { max } => {
                let body = self.tree(ops, i, ctx);
                Expr::repeat(body, 0, (max != u16::MAX).then_some(u32::from(max)))
            }
            Op::Lit(s) => markup(env.string(s)),
            Op::Space => self.space(),
            Op::OptionalNewline => Expr::opt(Expr::lit("\n")),
            Op::Text { role: TextRole::ArgString, .. } if raw_enum(ctx).is_some() => {
                // A raw value limited to the schema's strings (with the
                // template's layout newline on either side).
                let values = raw_enum(ctx).unwrap_or_default();
                let nl = || Expr::opt(Expr::lit("\n"));
                Expr::seq([nl(), Expr::alt(values.into_iter().map(|v| Expr::Seq(v.chars().map(Expr::lit).collect()))), nl()])
            }
            Op::Text { role, stops, count } => {
                let hint = match role {
                    TextRole::Reasoning => "reasoning",
                    TextRole::Content => "content",
                    TextRole::ToolId => "call-id",
                    TextRole::ArgString => "string-value",
                    TextRole::ArgAuto => "value",
                };
                self.g.text_without(hint, env.stops(stops, count))
            }
            Op::Call => {
                if ctx.tools.is_empty() {
                    let body = self.tree(ops, i, ctx);
                    return self.g.rule("call", body);
                }
                // One alternative per declared tool, each with its own name
                // and argument schema. A name the parser cannot read as one
                // (too long, holding its end marker, with whitespace around
                // it) is left out: the grammar must not allow such a call.
                let start = *i;
                let stops = match (ops.get(start), ops.get(start + 1)) {
                    (Some(Op::Seq(_)), Some(&(Op::Name { stops, count } | Op::IdName { stops, count }))) => env.stops(stops, count),
                    _ => &[],
                };
                let readable = |name: &str| {
                    !name.is_empty()
                        && name.len() <= crate::machine::MAX_NAME_LEN
                        && name.trim() == name
                        && !stops.iter().any(|s| !s.is_empty() && name.contains(s))
                };
                let mut alts = Vec::new();
                for tool in ctx.tools.iter().filter(|t| readable(t.name)) {
                    *i = start;
                    let inner = Ctx { tool: Some(*tool), ..*ctx };
                    let body = self.tree(ops, i, &inner);
                    alts.push(self.g.rule(&format!("call-{}", tool.name), body));
                }
                if alts.is_empty() {
                    *i = start;
                    Self::skip(ops, i);
                    return self.g.never();
                }
                Expr::alt(alts)
            }
            Op::Name { stops, count } | Op::IdName { stops, count } => match ctx.tool {
                // `functions.get_weather:0`: a namespace word, the name, an index.
                Some(tool) if matches!(op, Op::IdName { .. }) => Expr::seq([
                    Expr::plus(Expr::class(&[('a', 'z'), ('A', 'Z'), ('_', '_')])),
                    Expr::lit("."),
                    Expr::lit(tool.name),
                    Expr::lit(":"),
                    Expr::plus(Expr::class(&[('0', '9')])),
                ]),
                Some(tool) => Expr::lit(tool.name),
                None => {
                    let stops = env.stops(stops, count);
                    let free = self.g.text_without("name", stops);
                    // A name is never empty, and starts with neither
                    // whitespace nor the start of its end marker.
                    Expr::seq([Expr::not_chars(&name_start_excluded(stops)), free])
                }
            },
            Op::Args { python, marker } => {
                let options = SchemaOptions { python, marker: marker.map_or("", |m| env.string(m)) };
                match ctx.tool.and_then(|t| t.parameters.map(|p| (t.name, p))) {
                    Some((name, params)) => schema_rule(&mut self.g, &format!("{name}-args"), params, &options, &mut self.warnings),
                    None => any_object(&mut self.g, &options),
                }
            }
            Op::TaggedArgs => self.tagged_args(ops, i, ctx, None),
            Op::SeparatedArgs { separator } => self.tagged_args(ops, i, ctx, Some(env.string(separator))),
            Op::ArgName { stops, count } => match ctx.arg {
                Some((name, _)) => Expr::lit(name),
                None => {
                    let stops = env.stops(stops, count);
                    let free = self.g.text_without("arg-name", stops);
                    Expr::seq([Expr::not_chars(&name_start_excluded(stops)), free])
                }
            },
            Op::ByArgType => {
                // Children: raw string, JSON, untyped.
                let pick = match ctx.arg {
                    Some((_, schema)) => match arg_kind(schema) {
                        ArgKind::String => 0,
                        ArgKind::Json => 1,
                        ArgKind::Auto => 2,
                    },
                    None => 2,
                };
                let mut chosen = Expr::empty();
                for k in 0..3 {
                    if k == pick {
                        chosen = self.tree(ops, i, ctx);
                    } else {
                        Self::skip(ops, i);
                    }
                }
                chosen
            }
            Op::Json { python, marker } => {
                let options = SchemaOptions { python, marker: marker.map_or("", |m| env.string(m)) };
                match ctx.arg {
                    Some((name, schema)) => {
                        let hint = format!("{}-{name}", ctx.tool.map(|t| t.name).unwrap_or("arg"));
                        schema_rule(&mut self.g, &hint, schema, &options, &mut self.warnings)
                    }
                    None => any_value(&mut self.g, &options),
                }
            }
            Op::JsonStringContent { python } => {
                let quote = if python { '\'' } else { '"' };
                let plain = Expr::not_class(&[(quote, quote), ('\\', '\\'), ('\0', '\u{1f}')]);
                let escape = Expr::seq([Expr::lit("\\"), Expr::not_class(&[('\0', '\u{1f}')])]);
                let chars = Expr::star(Expr::alt([plain, escape]));
                self.g.rule(if python { "py-string-content" } else { "string-content" }, chars)
            }
        }
    }

    /// Tagged arguments: with a schema, each declared property in order
    /// (required ones present, optional ones at most once); otherwise any
    /// number of arguments with free names and untyped values. With a
    /// `separator`, it stands between two arguments written.
    fn tagged_args(&mut self, ops: &[Op], i: &mut usize, ctx: &Ctx<'_>, separator: Option<&str>) -> Expr {
        let params = ctx.tool.and_then(|t| t.parameters);
        let props = params.and_then(|p| p.get("properties")).and_then(Value::as_object);
        let Some(props) = props else {
            let one = self.tree(ops, i, ctx);
            let one = self.g.rule("arg", one);
            return match separator {
                Some(sep) => Expr::opt(Expr::seq([one.clone(), Expr::star(Expr::seq([markup(sep), one]))])),
                None => Expr::star(one),
            };
        };
        let required: Vec<&str> = params
            .and_then(|p| p.get("required"))
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let start = *i;
        // An argument name the parser cannot read (too long, holding its end
        // marker, padded) cannot be written: an optional one is left out, a
        // required one makes the call impossible.
        let stops = ops[start.min(ops.len())..]
            .iter()
            .find_map(|op| match *op {
                Op::ArgName { stops, count } => Some(self.env.stops(stops, count)),
                _ => None,
            })
            .unwrap_or(&[]);
        let readable = |name: &str| {
            !name.is_empty()
                && name.len() <= crate::machine::MAX_NAME_LEN
                && name.trim() == name
                && !stops.iter().any(|s| !s.is_empty() && name.contains(s))
        };
        if props.iter().any(|(name, _)| !readable(name) && required.contains(&name.as_str())) {
            Self::skip(ops, i);
            return self.g.never();
        }
        let mut items = Vec::new();
        for (name, schema) in props.iter().filter(|(name, _)| readable(name)) {
            *i = start;
            let inner = Ctx { arg: Some((name.as_str(), schema)), ..*ctx };
            let arg = self.tree(ops, i, &inner);
            let hint = format!("{}-arg-{name}", ctx.tool.map(|t| t.name).unwrap_or(""));
            let arg = self.g.rule(&hint, arg);
            items.push((arg, required.contains(&name.as_str())));
        }
        if items.is_empty() {
            *i = start;
            Self::skip(ops, i);
        }
        match separator {
            Some(sep) => self.separated(&items, sep),
            None => Expr::seq(items.into_iter().map(|(arg, required)| if required { arg } else { Expr::opt(arg) })),
        }
    }

    /// Arguments in order, each `(rule, required)`, with `sep` between two
    /// that are written: the first one written is any argument that only
    /// optional ones precede; each later one comes after a separator.
    fn separated(&mut self, items: &[(Expr, bool)], sep: &str) -> Expr {
        // `tails[k]`: the arguments from `k` on, after one was written.
        let mut tails = alloc::vec![Expr::empty(); items.len() + 1];
        for k in (1..items.len()).rev() {
            let (arg, required) = &items[k];
            let next = Expr::seq([markup(sep), arg.clone()]);
            let here = if *required { next } else { Expr::opt(next) };
            tails[k] = if k + 1 == items.len() { here } else { self.g.rule("args-after", Expr::seq([here, tails[k + 1].clone()])) };
        }
        let mut firsts = Vec::new();
        for (k, (arg, required)) in items.iter().enumerate() {
            firsts.push(Expr::seq([arg.clone(), tails[k + 1].clone()]));
            if *required {
                return Expr::alt(firsts);
            }
        }
        // Every argument is optional: none at all is a call too.
        firsts.push(Expr::empty());
        Expr::alt(firsts)
    }
}

/// A literal piece of markup, written character by character: an engine
/// with a greedy lexer (llguidance) commits to a literal once its first
/// characters match, so free text like `</b>` before `</parameter>`, or
/// `<|END_THINKING|>` where `<|START_ACTION|>` may also come, would be
/// rejected.
fn markup(s: &str) -> Expr {
    if s.chars().nth(1).is_some() {
        Expr::Seq(s.chars().map(Expr::lit).collect())
    } else {
        Expr::lit(s)
    }
}

/// Characters a free name may not start with: whitespace, and the first
/// character of each of its end markers.
fn name_start_excluded(stops: &[&str]) -> Vec<char> {
    let mut out = alloc::vec![' ', '\t', '\n', '\r'];
    out.extend(stops.iter().filter_map(|s| s.chars().next()));
    out.sort_unstable();
    out.dedup();
    out
}

/// The strings a raw (tagged) value may be, when the argument's schema
/// lists them (`enum` of strings, or a string `const`).
fn raw_enum<'r>(ctx: &Ctx<'r>) -> Option<Vec<&'r str>> {
    let (_, schema) = ctx.arg?;
    if let Some(c) = schema.get("const").and_then(Value::as_str) {
        return Some(alloc::vec![c]);
    }
    let values = schema.get("enum")?.as_array()?;
    let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
    (!strings.is_empty() && strings.len() == values.len()).then_some(strings)
}

/// How a tagged value with this schema is written (the parser's rule: a
/// `string` type is raw text, another single type is JSON, anything else is
/// untyped).
enum ArgKind {
    String,
    Json,
    Auto,
}

fn arg_kind(schema: &Value) -> ArgKind {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => alloc::vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
        _ => {
            let all_strings = schema.get("enum").and_then(Value::as_array).is_some_and(|e| !e.is_empty() && e.iter().all(|v| v.as_str().is_some()));
            return if all_strings { ArgKind::String } else { ArgKind::Auto };
        }
    };
    match types.as_slice() {
        ["string"] => ArgKind::String,
        [] => ArgKind::Auto,
        ts if ts.contains(&"string") => ArgKind::Auto,
        _ => ArgKind::Json,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static CALL: &[Op] = &[
        Op::Seq(3),
        Op::Lit(0),
        Op::Call,
        Op::Seq(4),
        Op::Name { stops: 1, count: 1 },
        Op::Lit(1),
        Op::Args { python: false, marker: None },
        Op::Lit(2),
        Op::Space,
    ];
    static ENVELOPE: Envelope<'static> = Envelope {
        strings: &["<call>", ">", "</call>"],
        calls: [CALL, CALL],
        reasoning: [&[], &[]],
        triggers: [&[], &[]],
        preserved_tokens: &[],
    };

    fn gbnf(tools: &[ToolSchema<'_>]) -> String {
        build(&ENVELOPE, &Request { tools, ..Request::default() }).map(|r| r.grammar.to_gbnf()).unwrap_or_default()
    }

    /// Names from the request never take a rule name with a fixed meaning.
    #[test]
    fn request_names_do_not_take_reserved_rules() {
        let params = Value::parse(r#"{"type":"object","properties":{"root":{"type":"array","items":{"type":"integer"}},"matches":{"type":"object"}}}"#).unwrap();
        let out = gbnf(&[ToolSchema { name: "天气", parameters: Some(&params) }, ToolSchema { name: "never", parameters: Some(&params) }]);
        assert_eq!(out.matches("\nroot ::=").count() + usize::from(out.starts_with("root ::=")), 1, "{out}");
        assert!(!out.contains("never-matches ::= \"{\""), "{out}");
    }

    /// Tools whose names the parser cannot read are not in the grammar.
    #[test]
    fn unreadable_names_are_left_out() {
        let long = "x".repeat(65);
        let out = gbnf(&[
            ToolSchema { name: &long, parameters: None },
            ToolSchema { name: "a>b", parameters: None },
            ToolSchema { name: " padded", parameters: None },
            ToolSchema { name: "ok", parameters: None },
        ]);
        assert!(out.contains("\"ok\"") && !out.contains(&long) && !out.contains("a>b") && !out.contains("padded"), "{out}");
        // None left: the call cannot match at all (not the empty string).
        let out = gbnf(&[ToolSchema { name: "a>b", parameters: None }]);
        assert!(out.contains("tool-calls ::= \"<\" \"c\" \"a\" \"l\" \"l\" \">\" never-matches"), "{out}");
    }

    /// Tagged arguments: names the parser cannot read are left out, or make
    /// the call impossible when required.
    #[test]
    fn unreadable_argument_names() {
        // `<call>NAME>` then arguments `<arg=KEY>VALUE</arg>`.
        static TAGGED: &[Op] = &[
            Op::Seq(3),
            Op::Lit(0),
            Op::Call,
            Op::Seq(4),
            Op::Name { stops: 1, count: 1 },
            Op::Lit(1),
            Op::TaggedArgs,
            Op::Seq(2),
            Op::Lit(3),
            Op::Seq(3),
            Op::ArgName { stops: 1, count: 1 },
            Op::Lit(1),
            Op::ByArgType,
            Op::Seq(2),
            Op::Text { role: TextRole::ArgString, stops: 4, count: 1 },
            Op::Lit(4),
            Op::Seq(2),
            Op::Json { python: false, marker: None },
            Op::Lit(4),
            Op::Seq(2),
            Op::Text { role: TextRole::ArgAuto, stops: 4, count: 1 },
            Op::Lit(4),
            Op::Lit(2),
        ];
        static TAGGED_ENVELOPE: Envelope<'static> = Envelope {
            strings: &["<call>", ">", "</call>", "<arg=", "</arg>"],
            calls: [TAGGED, TAGGED],
            reasoning: [&[], &[]],
            triggers: [&[], &[]],
            preserved_tokens: &[],
        };
        let grammar = |schema: &str| {
            let params = Value::parse(schema).unwrap();
            let tools = [ToolSchema { name: "f", parameters: Some(&params) }];
            build(&TAGGED_ENVELOPE, &Request { tools: &tools, ..Request::default() }).map(|r| r.grammar.to_gbnf()).unwrap_or_default()
        };
        let optional = grammar(r#"{"type":"object","properties":{"a>b":{"type":"string"},"ok":{"type":"string"}}}"#);
        assert!(optional.contains("\"ok\"") && !optional.contains("a>b"), "{optional}");
        let required = grammar(r#"{"type":"object","properties":{"a>b":{"type":"string"}},"required":["a>b"]}"#);
        assert!(required.contains("call-f ::= \"f\" \">\" never-matches"), "{required}");
    }

    /// A free name starts with neither whitespace nor its end marker.
    #[test]
    fn free_names_start_with_a_name_character() {
        let out = gbnf(&[]);
        assert!(out.contains(r"[^\t\n\r >] name"), "{out}");
    }
}
