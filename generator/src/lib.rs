//! chat-parser's generator: analyses an LLM chat template and describes how
//! the model writes reasoning, content and tool calls.
//!
//! Pipeline: [`jinja`] renders templates as Python's jinja2 does under HF
//! transformers; [`analysis`] diffs probe renders ([`diff`]) into a
//! [`spec::FormatSpec`]; [`reference`] shows a spec in the reference
//! auto-parser's vocabulary for comparison.

pub mod analysis;
pub mod build;
pub mod diff;
pub mod interp;
pub mod ir;
pub mod jinja;
pub mod reference;
pub mod spec;

pub use analysis::{analyze, Analysis, AnalysisError};
pub use spec::FormatSpec;

/// The spec as compact JSON (the form embedded in generated code).
pub fn spec_to_json(spec: &FormatSpec) -> Result<String, String> {
    serde_json::to_string(spec).map_err(|e| e.to_string())
}
