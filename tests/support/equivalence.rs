//! Comparing a generated parser with the reference parser (the generator's
//! interpreter of the same IR) on the same output: the event streams must be
//! equal once adjacent text events of one kind are merged (the two may split
//! text differently; what a client assembles is the same).
#![allow(dead_code)]

use chat_parser_generator::interp::StreamParser;
use chat_parser_generator::ir::build::{build, tool_signatures, ParseOptions, ReasoningFormat};
use chat_parser_generator::FormatSpec;
use chat_parser_runtime::kwargs::Kwarg;
use chat_parser_runtime::{ArgType, Event, Options, Tool};

/// An owned event; text events of one kind merge with their neighbour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Content(String),
    Reasoning(String),
    Start(usize),
    Name(String),
    Id(String),
    Args(String),
    End(bool),
    Cut(usize),
    Broken(usize, usize),
}

/// Collects events, merging adjacent text of one kind.
#[derive(Default, Debug)]
pub struct Events(pub Vec<Ev>);

impl chat_parser_runtime::Sink for Events {
    fn event(&mut self, e: Event<'_>) {
        let (merge, new) = match e {
            Event::Content(t) => (Some(t), Ev::Content(t.to_string())),
            Event::Reasoning(t) => (Some(t), Ev::Reasoning(t.to_string())),
            Event::ToolId(t) => (Some(t), Ev::Id(t.to_string())),
            Event::ToolArgs(t) => (Some(t), Ev::Args(t.to_string())),
            Event::ToolCallStart { index } => (None, Ev::Start(index)),
            Event::ToolName(t) => (None, Ev::Name(t.to_string())),
            Event::ToolCallEnd { complete } => (None, Ev::End(complete)),
            Event::ToolCallCut { tail } => (None, Ev::Cut(tail)),
            Event::ToolCallBroken { from, len } => (None, Ev::Broken(from, len)),
        };
        if let Some(t) = merge {
            if t.is_empty() {
                return;
            }
            match (self.0.last_mut(), &new) {
                (Some(Ev::Content(a)), Ev::Content(_)) | (Some(Ev::Reasoning(a)), Ev::Reasoning(_)) | (Some(Ev::Id(a)), Ev::Id(_)) | (Some(Ev::Args(a)), Ev::Args(_)) => {
                    a.push_str(t);
                    return;
                }
                _ => {}
            }
        }
        self.0.push(new);
    }
}

/// Splits `input` at the given chunk sizes (cycled).
pub fn chunks<'a>(input: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < input.len() {
        let n = sizes.get(i % sizes.len().max(1)).copied().unwrap_or(input.len()).max(1);
        let end = (at + n).min(input.len());
        out.push(&input[at..end]);
        at = end;
        i += 1;
    }
    out
}

/// The reference parser's events.
pub fn reference(spec: &FormatSpec, options: &ParseOptions, pieces: &[&[u8]]) -> Vec<Ev> {
    let grammar = build(spec, options);
    let (hold, pack) = chat_parser_generator::codegen::hold_limit_and_pack(spec);
    let mut p = StreamParser::new(&grammar).with_tools(tool_signatures(options)).with_hold_limit(hold).with_pack(pack);
    let mut ev = Events::default();
    for piece in pieces {
        p.feed(piece, &mut ev);
    }
    p.finish(&mut ev);
    ev.0
}

/// The request's tools in the runtime's form (owned storage the `Tool`s borrow).
/// The variable a template that ignores `enable_thinking` switches
/// thinking with (Cohere2 MoE's and GigaChat 3.5's `reasoning`), if it is
/// one: a generated parser is given the thinking a reference parser is
/// built for as that variable.
pub fn own_switch(spec: &FormatSpec) -> Option<&str> {
    spec.generation_prompt.default_thinking?;
    spec.generation_prompt.switches.first().map(|s| s.variable.as_str())
}

pub struct RuntimeTools {
    names: Vec<String>,
    args: Vec<Vec<(String, ArgType)>>,
    /// The template's own thinking switch, where it ignores
    /// `enable_thinking` (see [`Self::thinking_of`]).
    own_switch: Option<String>,
}

impl RuntimeTools {
    pub fn new(options: &ParseOptions) -> RuntimeTools {
        let sigs = tool_signatures(options);
        RuntimeTools { names: sigs.iter().map(|s| s.name.clone()).collect(), args: sigs.iter().map(|s| s.args.clone()).collect(), own_switch: None }
    }

    /// For a template that ignores `enable_thinking` (Cohere2 MoE's and
    /// GigaChat 3.5's own `reasoning`): a generated parser takes thinking
    /// from that variable or the template's default, so the options'
    /// `enable_thinking` (the thinking the reference parser is built for)
    /// is passed to it as that variable.
    pub fn thinking_of(mut self, spec: &FormatSpec) -> RuntimeTools {
        self.own_switch = own_switch(spec).map(str::to_string);
        self
    }

    /// Calls `f` with the runtime options for `options`.
    pub fn with_options<R>(&self, options: &ParseOptions, f: impl FnOnce(Options<'_>) -> R) -> R {
        let arg_refs: Vec<Vec<(&str, ArgType)>> = self.args.iter().map(|a| a.iter().map(|(n, t)| (n.as_str(), *t)).collect()).collect();
        let tools: Vec<Tool<'_>> = self.names.iter().zip(&arg_refs).map(|(n, a)| Tool { name: n.as_str(), args: a.as_slice() }).collect();
        let own: Vec<(&str, Kwarg<'_>)> = self.own_switch.iter().map(|v| (v.as_str(), Kwarg::Bool(options.enable_thinking))).collect();
        f(Options {
            enable_thinking: options.enable_thinking,
            reasoning_format: match options.reasoning_format {
                ReasoningFormat::None => chat_parser_runtime::ReasoningFormat::None,
                ReasoningFormat::Auto => chat_parser_runtime::ReasoningFormat::Auto,
                ReasoningFormat::Deepseek => chat_parser_runtime::ReasoningFormat::Deepseek,
            },
            parallel_tool_calls: options.parallel_tool_calls,
            tools: if options.tool_choice == chat_parser_generator::ir::build::ToolChoice::None { &[] } else { &tools },
            structured_output: options.json_schema.is_some(),
            chat_template_kwargs: &own,
        })
    }
}
