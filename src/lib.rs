//! chat-parser: fast streaming parsers for LLM chat output, generated at
//! build time from the model's chat template.
//!
//! This facade re-exports the runtime and carries the analysis of the
//! project's own templates (`templates/`), made by `build.rs` with the
//! generator's build API.
//!
//! # Example
//! ```
//! let think = chat_parser::templates::THINK;
//! assert_eq!(think.reasoning_end.trim(), "</think>");
//! assert!(think.generation_prompt.ends_with("<think>\n"));
//! ```
#![cfg_attr(not(feature = "std"), no_std)]

pub use chat_parser_runtime::*;

/// What the analysis found for each template in `templates/`.
pub mod templates {
    /// The build-time facts about one template's format.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct TemplateInfo {
        pub file: &'static str,
        /// `"autoparser"` or the dedicated family.
        pub handler: &'static str,
        /// What the template appends for the assistant's turn (thinking enabled).
        pub generation_prompt: &'static str,
        pub reasoning_start: &'static str,
        pub reasoning_end: &'static str,
        pub preserved_tokens: &'static [&'static str],
        /// The format spec as JSON.
        pub spec_json: &'static str,
    }

    include!(concat!(env!("OUT_DIR"), "/templates.rs"));
}

/// Generated parsers for the templates in `templates/` (one module per
/// template, made by `build.rs`), and `AnyParser` to pick one by file name.
///
/// # Example
/// ```
/// use chat_parser::{parsers::think, MessageBuilder, Options};
/// let mut parser = think::Parser::new(Options::default());
/// let mut message = MessageBuilder::new();
/// // The generation prompt opened `<think>`: the output starts inside it.
/// for chunk in ["hm", "m</think>", "Hi!"] {
///     parser.feed(chunk.as_bytes(), &mut message);
/// }
/// parser.finish(&mut message);
/// let message = message.into_message();
/// assert_eq!((message.reasoning_content.as_str(), message.content.as_str()), ("hmm", "Hi!"));
/// ```
pub mod parsers {
    include!(concat!(env!("OUT_DIR"), "/parsers.rs"));
}
