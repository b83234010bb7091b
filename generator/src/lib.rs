//! chat-parser's generator: analyses an LLM chat template and builds the
//! parser for the model's output.
//!
//! Pipeline: [`jinja`] renders templates as Python's jinja2 does under HF
//! transformers; [`analysis`] diffs probe renders ([`diff`]) into a
//! [`spec::FormatSpec`]; [`ir::build`] turns a spec and a request's options
//! into the format IR ([`ir`]); [`interp`] is the streaming reference parser
//! that runs it (also the dynamic mode for templates known only at run time);
//! [`reference`](mod@reference) shows a spec in the reference auto-parser's vocabulary.
//!
//! # Example
//! ```
//! use chat_parser_generator::{analyze, interp::StreamParser, ir::build::{build, ParseOptions}, jinja::ChatTemplate};
//! use chat_parser_runtime::MessageBuilder;
//! let source = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
//! let spec = analyze(&ChatTemplate::new("t.jinja", source).unwrap()).unwrap().spec;
//! let grammar = build(&spec, &ParseOptions::default());
//! let mut message = MessageBuilder::new();
//! let mut parser = StreamParser::new(&grammar);
//! parser.feed(b"Hello", &mut message);
//! parser.feed(b", world", &mut message);
//! parser.finish(&mut message);
//! assert_eq!(message.message().content, "Hello, world");
//! ```

pub mod analysis;
pub mod build;
pub mod capi;
pub mod codegen;
pub mod diff;
pub mod grammar;
pub mod interp;
pub mod ir;
pub mod jinja;
pub mod reference;
pub mod spec;
pub mod template_file;

pub use analysis::{analyze, Analysis, AnalysisError};
pub use spec::FormatSpec;

/// The one entry point from template source to format spec: compiles the
/// template (named `name` in diagnostics) and analyses it. The CLI, the
/// build.rs API and the `chat_parser!` macro all go through it.
///
/// Errors are one-line diagnostics naming the file and, for Jinja problems,
/// the line.
pub fn spec_from_source(name: &str, source: &str) -> Result<FormatSpec, String> {
    let file = template_file::TemplateFile { name: name.to_string(), source: source.to_string(), special: Default::default() };
    spec_from_file(&file)
}

/// [`spec_from_source`] for a template with its tokenizer's special tokens
/// (a tokenizer config, or a Jinja file given its tokens).
pub fn spec_from_file(file: &template_file::TemplateFile) -> Result<FormatSpec, String> {
    analyze(&file.compile()?).map(|a| a.spec).map_err(|e| e.to_string())
}

/// The spec as compact JSON (the form embedded in generated code).
pub fn spec_to_json(spec: &FormatSpec) -> Result<String, String> {
    serde_json::to_string(spec).map_err(|e| e.to_string())
}
