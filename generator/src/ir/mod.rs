//! The format IR: one description of a model's output grammar that every
//! backend consumes (the reference parser in [`crate::interp`], generated Rust,
//! GBNF).
//!
//! It is a PEG with *guarded* choices: each alternative of a [`Node::Choice`]
//! starts with a guard (literals and whitespace) and the choice commits as
//! soon as a guard matched. That is what lets a parser stream: it never has to
//! take back text it has already reported, and it needs to look ahead no
//! further than the longest guard. It also maps onto a CFG (a guard is just
//! the first symbols of its alternative), except for [`Node::End`] and the
//! stop sets of [`Node::Until`], which are documented lookaheads.
//!
//! Semantic tags say what matched text *is* (reasoning, content, a tool name,
//! an argument value...). Nodes are plain data (`Vec`, `String`, no maps), so
//! the IR built from the same spec and options is always identical.
//!
//! # Example
//! ```
//! use chat_parser_generator::ir::{Node, TextKind};
//! // "<think>" reasoning "</think>" then content.
//! let g = Node::seq(vec![
//!     Node::optional(Node::lit("<think>"), Node::seq(vec![
//!         Node::until(&["</think>"], TextKind::Reasoning),
//!         Node::lit("</think>"),
//!     ])),
//!     Node::rest(TextKind::Content),
//! ]);
//! assert!(g.to_string().contains("\"<think>\""));
//! ```

pub mod build;
pub mod channels;

use serde_json::Value;

/// What a run of text is, for the events it produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Reasoning,
    Content,
    /// Consumed but not reported (markup, separators). Held until its
    /// round ends: a round that breaks gives it back as content.
    Discard,
    /// Consumed and dropped for good: text the format reads and never
    /// reports, such as the body of a harmony message to a built-in tool
    /// (`to=python`). Unlike [`TextKind::Discard`] it counts as accounted
    /// for as it is read (a broken round does not come back to it), so it
    /// may run to any length in a parser with a bounded window. Used after a
    /// round commits, like content.
    Dropped,
    /// A tool call id.
    ToolId,
    /// A tool name written freely (when no tool list constrains it).
    ToolName,
    /// A call id that holds the tool's name, `namespace.NAME:index` (Kimi
    /// K2's `functions.get_weather:0`): the name (see
    /// [`chat_parser_runtime::machine::name_in_id`], and with declared tools
    /// [`chat_parser_runtime::machine::tool_in_id`], which also reads
    /// `functions_get_weather_0`) is checked and reported as a
    /// [`TextKind::ToolName`] is, then the whole id as the call's id.
    /// The whole id counts against [`MAX_NAME_LEN`].
    ToolIdName,
    /// An argument name: reported as a JSON key inside the arguments object.
    ArgName,
    /// A raw argument value reported as a JSON string.
    ArgString,
    /// A raw argument value without a schema type: JSON when the whole value
    /// is JSON text of at most [`AUTO_JSON_MAX`] bytes, else a string.
    ArgAuto,
}

/// The longest untyped argument value (`TextKind::ArgAuto`) that is read as
/// JSON. A longer value is a string: a streaming parser must decide before it
/// reports the value, and holding back a value of any length would need
/// memory without bound.
pub const AUTO_JSON_MAX: usize = 64;

/// The longest tool or argument name, in bytes. Longer text where a name
/// should be is broken markup: a parser would otherwise hold back (and
/// rescan) text without bound while it waits for the name to end.
pub const MAX_NAME_LEN: usize = 64;

/// How a JSON value is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonKind {
    /// The whole arguments object of a call.
    ToolArgs,
    /// One argument's value inside an arguments object built from tags.
    ArgValue,
    /// Structured output: the reply itself.
    Content,
}

/// Structural events a node reports without consuming input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// A tool call begins (its name follows).
    ToolOpen,
    /// The tool call ended.
    ToolClose,
    /// The call's tool name (the guard that led here matched it literally).
    /// Reporting a name commits the call: from here on, broken markup ends
    /// the call instead of turning back into content.
    Name(String),
    /// Arguments built from tags begin: `{`.
    ArgsOpen,
    /// Arguments built from tags end: `}`.
    ArgsClose,
    /// Arguments made of one raw value: `{` and the key of the called
    /// tool's one argument, where the request declares it with exactly
    /// one and of type string (a python tool's `code`); fails otherwise.
    /// The value follows as [`TextKind::ArgString`], then
    /// [`Mark::ArgsClose`]. For a call whose body is the value itself
    /// (gpt-oss sends its built-in python form, raw code, to a declared
    /// function named `python`: odysseus #5877).
    SoleArg,
    /// The round of a recoverable loop is certain from here (its events need
    /// not be held back in case it breaks).
    Commit,
    /// Text the generation prompt already wrote (the model continues after
    /// it), reported as this kind.
    Prefilled(TextKind, String),
    /// Starts an alternative that reads what models write beyond the
    /// template's own form (the other standard JSON field name, a call
    /// without its wrapper, a value without its closer). Parsers take it
    /// like any other alternative and report nothing for the mark; grammars
    /// leave the alternative out, so constrained decoding writes the
    /// template's form. See [`Alt::lenient`].
    Lenient,
}

/// One alternative of a choice: taken when `guard` matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Alt {
    pub guard: Node,
    pub body: Node,
}

impl Alt {
    /// An alternative parsers read and grammars leave out ([`Mark::Lenient`]).
    ///
    /// ```
    /// use chat_parser_generator::ir::{Alt, Node};
    /// let alt = Alt::lenient(Node::lit("\"arguments\""), Node::Empty);
    /// assert!(alt.is_lenient());
    /// assert!(!Alt { guard: Node::lit("\"parameters\""), body: Node::Empty }.is_lenient());
    /// ```
    pub fn lenient(guard: Node, body: Node) -> Alt {
        Alt { guard, body: Node::seq(vec![Node::Mark(Mark::Lenient), body]) }
    }

    /// Whether this alternative is only for parsers ([`Alt::lenient`]).
    pub fn is_lenient(&self) -> bool {
        match &self.body {
            Node::Mark(Mark::Lenient) => true,
            Node::Seq(items) => items.first() == Some(&Node::Mark(Mark::Lenient)),
            _ => false,
        }
    }
}

/// A node of the format IR.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Matches nothing.
    Empty,
    /// Exactly this text.
    Literal(String),
    /// Zero or more whitespace characters.
    Space,
    /// At most one newline (markers that end a line: the template wrote one,
    /// the model may not).
    OptionalNewline,
    /// Each in order.
    Seq(Vec<Node>),
    /// The first alternative whose guard matches; fails if none does.
    Choice(Vec<Alt>),
    /// A loop over guarded alternatives: each round takes the first
    /// alternative whose guard matches and whose limit (`limits[i]`, `None`
    /// = no limit) is not used up; the loop ends when there is none. The
    /// limited alternatives share one count of rounds: with
    /// `Some(1)` on every form a call may take (wrapped, bare, fenced,
    /// under an alias), a loop takes one call whichever form it comes in.
    /// With `recover: Some(resume)`, a body that fails before its call is
    /// committed turns back into content: one character of content is
    /// reported, `resume` runs (the content that follows) and the loop goes on
    /// (malformed markup degrades to text).
    Repeat { alts: Vec<Alt>, limits: Vec<Option<u32>>, recover: Option<Box<Node>> },
    /// Succeeds if the inner node would match here, consuming nothing (a
    /// documented lookahead; guards only).
    Peek(Box<Node>),
    /// Text up to (not including) the first stop, or to the end of output.
    /// An empty stop list means "everything".
    ///
    /// `closers`, some of the stops, end the text only where markup
    /// follows them (after a little whitespace, a character one of the
    /// stops starts with, or the end of the output): elsewhere a closer is
    /// the text's own, as the template renders a raw value that holds its
    /// closing tag (`<parameter=code>\nreturn "</parameter>"\n</parameter>`).
    /// See [`chat_parser_runtime::table::StopSet::closed_by`]. Grammars
    /// leave closers out of the text, as any stop.
    Until { stops: Vec<String>, kind: TextKind, trim_newlines: bool, closers: Vec<String> },
    /// One JSON value (`python` also accepts Python literals: `True`,
    /// `None`, single-quoted strings), with an optional JSON schema. A
    /// non-empty `marker` reads the *marked dialect* (Gemma 4's object
    /// literals): strings may also be raw text between two markers, and
    /// object keys may be bare words (see
    /// [`chat_parser_runtime::json::JsonScanner::scan_marked`]).
    ///
    /// `ends` are markers a model writes in place of the value's last
    /// closers (the call's end marker where the arguments' `}` is missing):
    /// when the scanner stands after a complete value inside open
    /// containers and one of them follows (after whitespace), the parsers
    /// close the containers (reporting `}` and `]`) and the value is done.
    /// Never inside a string. Grammars write complete values only.
    Json { kind: JsonKind, schema: Option<Value>, python: bool, marker: String, ends: Vec<String> },
    /// A JSON string's content (between quotes), reported as this kind.
    JsonStringContent(TextKind),
    /// An argument name given in the IR (tagged formats with a known schema).
    ArgKey(String),
    /// An argument value read by the declared type of the argument just
    /// named (looked up at run time in the request's tools).
    ///
    /// A branch that is a [`Node::Choice`] lists the form the schema asks
    /// for first: parsers read any alternative, grammars allow only the
    /// first (DSML's `string="true"` / `string="false"` values, where the
    /// markup says the type). Grammars write any other branch whole (a
    /// Python string argument in either quote style).
    ByArgType { string: Box<Node>, json: Box<Node>, auto: Box<Node> },
    /// On by whether the text ahead, up to the first of `stops`, names a
    /// tool the request declares (looked up at run time; nothing is read):
    /// `declared` if it does, else `other` (also without declared tools,
    /// and where no stop comes within a name's length). For markup a model
    /// writes for its own tools in a form that otherwise means something
    /// else (gpt-oss's recipient without its `functions.` namespace, vLLM
    /// #42454, where any other recipient is a built-in tool's). Grammars
    /// write `other`.
    ByToolName { stops: Vec<String>, declared: Box<Node>, other: Box<Node> },
    /// Reports a structural event.
    Mark(Mark),
    /// Succeeds only at the end of the output.
    End,
}

impl Node {
    /// The node as parsers read it: the same tree without its
    /// [`Mark::Lenient`] marks, which only tell grammars which alternatives
    /// to leave out. Code generation compiles this form, so markup that
    /// differs only by leniency (a call's body read inside its wrapper and
    /// without it) is the same states.
    ///
    /// ```
    /// use chat_parser_generator::ir::{Alt, Node};
    /// let strict = Node::Choice(vec![Alt { guard: Node::lit("a"), body: Node::Empty }]);
    /// let lenient = Node::Choice(vec![Alt::lenient(Node::lit("a"), Node::Empty)]);
    /// assert_ne!(strict, lenient);
    /// assert_eq!(strict.for_parsers(), lenient.for_parsers());
    /// ```
    pub fn for_parsers(&self) -> Node {
        let alts = |alts: &[Alt]| alts.iter().map(|a| Alt { guard: a.guard.for_parsers(), body: a.body.for_parsers() }).collect();
        match self {
            Node::Mark(Mark::Lenient) => Node::Empty,
            Node::Seq(items) => Node::seq(items.iter().map(Node::for_parsers).collect()),
            Node::Choice(a) => Node::Choice(alts(a)),
            Node::Repeat { alts: a, limits, recover } => {
                Node::Repeat { alts: alts(a), limits: limits.clone(), recover: recover.as_ref().map(|r| Box::new(r.for_parsers())) }
            }
            Node::Peek(inner) => Node::Peek(Box::new(inner.for_parsers())),
            Node::ByArgType { string, json, auto } => Node::ByArgType {
                string: Box::new(string.for_parsers()),
                json: Box::new(json.for_parsers()),
                auto: Box::new(auto.for_parsers()),
            },
            Node::ByToolName { stops, declared, other } => {
                Node::ByToolName { stops: stops.clone(), declared: Box::new(declared.for_parsers()), other: Box::new(other.for_parsers()) }
            }
            other => other.clone(),
        }
    }

    pub fn lit(s: impl Into<String>) -> Node {
        Node::Literal(s.into())
    }
    pub fn seq(nodes: Vec<Node>) -> Node {
        let mut flat: Vec<Node> = Vec::new();
        let mut push = |n: Node| match n {
            Node::Empty => {}
            Node::Literal(s) if s.is_empty() => {}
            // Whitespace right after whitespace is the same whitespace (and
            // would count twice in a parser's hold bound).
            Node::Space if flat.last() == Some(&Node::Space) => {}
            other => flat.push(other),
        };
        for n in nodes {
            match n {
                Node::Seq(inner) => inner.into_iter().for_each(&mut push),
                other => push(other),
            }
        }
        match flat.len() {
            0 => Node::Empty,
            1 => flat.pop().unwrap_or(Node::Empty),
            _ => Node::Seq(flat),
        }
    }
    pub fn until(stops: &[&str], kind: TextKind) -> Node {
        Node::Until { stops: stops.iter().map(|s| s.to_string()).collect(), kind, trim_newlines: false, closers: Vec::new() }
    }
    pub fn rest(kind: TextKind) -> Node {
        Node::Until { stops: Vec::new(), kind, trim_newlines: false, closers: Vec::new() }
    }
    /// One of several literals (a guard: each alternative's body is empty).
    ///
    /// ```
    /// use chat_parser_generator::ir::Node;
    /// assert_eq!(Node::one_of(["a", "b"]).to_string(), Node::one_of(vec!["a".to_string(), "b".to_string()]).to_string());
    /// ```
    pub fn one_of<S: Into<String>>(literals: impl IntoIterator<Item = S>) -> Node {
        Node::Choice(literals.into_iter().map(|l| Alt { guard: Node::lit(l), body: Node::Empty }).collect())
    }
    /// `guard body` if the guard matches, else nothing.
    pub fn optional(guard: Node, body: Node) -> Node {
        Node::Choice(vec![Alt { guard, body }, Alt { guard: Node::Empty, body: Node::Empty }])
    }
    /// [`Node::optional`] read by parsers only ([`Alt::lenient`]): markup
    /// models write that grammars never do (a closer written twice).
    pub fn lenient_optional(guard: Node, body: Node) -> Node {
        Node::Choice(vec![Alt::lenient(guard, body), Alt { guard: Node::Empty, body: Node::Empty }])
    }
}

impl std::fmt::Display for Node {
    /// A compact PEG-like rendering, for debugging and snapshots.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Empty => write!(f, "ε"),
            Node::Literal(s) => write!(f, "{s:?}"),
            Node::Space => write!(f, "space"),
            Node::OptionalNewline => write!(f, "\"\\n\"?"),
            Node::Seq(items) => {
                write!(f, "(")?;
                for (i, n) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{n}")?;
                }
                write!(f, ")")
            }
            Node::Choice(alts) => {
                write!(f, "[")?;
                for (i, a) in alts.iter().enumerate() {
                    if i > 0 {
                        write!(f, " | ")?;
                    }
                    write!(f, "{} => {}", a.guard, a.body)?;
                }
                write!(f, "]")
            }
            Node::Repeat { alts, limits, .. } => {
                write!(f, "{{")?;
                for (i, (a, limit)) in alts.iter().zip(limits).enumerate() {
                    if i > 0 {
                        write!(f, " | ")?;
                    }
                    write!(f, "{} => {}", a.guard, a.body)?;
                    if let Some(n) = limit {
                        write!(f, " (max {n})")?;
                    }
                }
                write!(f, "}}*")
            }
            Node::Until { stops, kind, closers, .. } if closers.is_empty() => write!(f, "{kind:?}(until {stops:?})"),
            Node::Until { stops, kind, closers, .. } => write!(f, "{kind:?}(until {stops:?}, closers {closers:?} before markup)"),
            Node::Json { kind, .. } => write!(f, "json:{kind:?}"),
            Node::JsonStringContent(kind) => write!(f, "jstr:{kind:?}"),
            Node::Peek(n) => write!(f, "&{n}"),
            Node::ArgKey(k) => write!(f, "key:{k:?}"),
            Node::ByArgType { string, json, auto } => write!(f, "<by type: string {string} | json {json} | auto {auto}>"),
            Node::ByToolName { stops, declared, other } => write!(f, "<by tool name up to {stops:?}: declared {declared} | other {other}>"),
            Node::Mark(m) => write!(f, "<{m:?}>"),
            Node::End => write!(f, "$"),
        }
    }
}
