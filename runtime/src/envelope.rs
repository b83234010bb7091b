//! The envelope of an output format: how a tool call is written around its
//! name and arguments, as static data a generated module carries.
//!
//! It is the tool-call part of the format IR, written as a tree of [`Op`]s in
//! prefix order (a node, then its children). The generator writes it once
//! per template; [`crate::grammar::request`] turns it into a grammar for a
//! request's own tools at run time (with the `alloc` feature), and the
//! generator uses that same code for the module's static `GBNF` and `LARK`
//! constants, so the grammar and the parser come from one description.
//!
//! # Example
//! ```
//! use chat_parser_runtime::envelope::{Envelope, Op, TextRole};
//! // `<call>` NAME `>` ARGS `</call>`, one call or several.
//! static STRINGS: &[&str] = &["<call>", ">", "</call>"];
//! static CALL: &[Op] = &[
//!     Op::Seq(3), Op::Lit(0), Op::Call,
//!         Op::Seq(4), Op::Name { stops: 1, count: 1 }, Op::Lit(1), Op::Args { python: false, marker: None }, Op::Lit(2),
//!     Op::Space,
//! ];
//! let envelope = Envelope {
//!     strings: STRINGS,
//!     calls: [CALL, CALL],
//!     reasoning: [&[], &[]],
//!     triggers: [&[], &[]],
//!     preserved_tokens: &["<call>", "</call>"],
//! };
//! assert_eq!(envelope.string(0), "<call>");
//! # let _ = TextRole::Content;
//! ```

/// One node of an envelope tree. Strings are indices into
/// [`Envelope::strings`]; a stop list is `count` strings from `stops`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// The next `n` subtrees in order.
    Seq(u16),
    /// Any one of the next `n` subtrees.
    Alt(u16),
    /// The next subtree, at most `max` times (`u16::MAX`: no limit).
    Repeat { max: u16 },
    /// Exactly this string.
    Lit(u16),
    /// Whitespace between markup pieces.
    Space,
    /// At most one newline.
    OptionalNewline,
    /// Free text up to the first of the stops (or to the end).
    Text { role: TextRole, stops: u16, count: u16 },
    /// A tool call: the next subtree starts with [`Op::Name`]; with declared
    /// tools it is written once per tool, with that tool's name and schema.
    Call,
    /// The tool's name (free text up to a stop when no tools are declared).
    Name { stops: u16, count: u16 },
    /// A call id holding the tool's name, `namespace.NAME:index` (see
    /// [`crate::machine::name_in_id`]); free text up to a stop when no
    /// tools are declared.
    IdName { stops: u16, count: u16 },
    /// The call's arguments as one JSON (or Python) object; with a
    /// `marker` (a string), in the marked dialect (bare keys, strings
    /// between markers: see [`crate::json::JsonScanner::scan_marked`]).
    Args { python: bool, marker: Option<u16> },
    /// Tagged arguments: the next subtree is one argument (starting at its
    /// name prefix), written once per declared argument.
    TaggedArgs,
    /// Arguments with a separator between them (`,` in a Python call): the
    /// next subtree is one argument, written once per declared argument,
    /// `separator` (a string) between two that are written.
    SeparatedArgs { separator: u16 },
    /// An argument's name (free text up to a stop without a schema).
    ArgName { stops: u16, count: u16 },
    /// An argument's value by its schema type: the next three subtrees are
    /// the raw-string form, the JSON form and the untyped form.
    ByArgType,
    /// A JSON value: the current argument's (under its schema) or any
    /// (`marker` as for [`Op::Args`]).
    Json { python: bool, marker: Option<u16> },
    /// The inside of a JSON string (a call id).
    JsonStringContent { python: bool },
}

/// What free text is, for documentation and rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRole {
    Reasoning,
    Content,
    ToolId,
    ArgString,
    ArgAuto,
}

/// How a trigger is matched in the model's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerKind {
    /// A plain string; the grammar applies from where it starts.
    Word,
    /// A regular expression the whole output so far must match (llama.cpp's
    /// `pattern_full`); the grammar applies from its first non-empty group.
    PatternFull,
}

/// A format's tool-call envelope. Arrays indexed `[i]` hold the variant for
/// thinking on (`0`) and off (`1`), or one call (`0`) and parallel calls (`1`).
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    pub strings: &'a [&'a str],
    /// From the trigger on: the tool calls (one call; parallel calls).
    pub calls: [&'a [Op]; 2],
    /// What precedes the reply when the grammar covers all of it (required
    /// tool calls, structured output): the reasoning block, by thinking.
    pub reasoning: [&'a [Op]; 2],
    /// What switches a lazy grammar on, by thinking (a pattern skips
    /// the reasoning block, so reasoning is never constrained).
    pub triggers: [&'a [(TriggerKind, &'a str)]; 2],
    /// Markers that must stay single tokens.
    pub preserved_tokens: &'a [&'a str],
}

impl<'a> Envelope<'a> {
    /// String `i` of the table (`""` when out of range).
    pub fn string(&self, i: u16) -> &'a str {
        self.strings.get(usize::from(i)).copied().unwrap_or("")
    }

    /// The stop list `count` strings from `from`.
    pub fn stops(&self, from: u16, count: u16) -> &'a [&'a str] {
        let from = usize::from(from);
        self.strings.get(from..from + usize::from(count)).unwrap_or(&[])
    }
}
