//! `chat_parser!("templates/x.jinja")`: analyses a chat template at compile
//! time and expands to a module of constants describing its format.
//!
//! The path is relative to the crate's `CARGO_MANIFEST_DIR`. The template is
//! tracked with `include_bytes!`, so editing it rebuilds the crate. Template
//! problems become a `compile_error!` naming the file and line.
//!
//! ```text
//! chat_parser_macros::chat_parser!("templates/think.jinja");
//! assert_eq!(think::REASONING_END.trim(), "</think>");
//! ```
//!
//! (Exercised by the root crate's `tests/macro_and_build.rs`: a doctest here
//! would resolve the path against this crate's directory.)

use proc_macro::{TokenStream, TokenTree};

#[proc_macro]
pub fn chat_parser(input: TokenStream) -> TokenStream {
    let expanded = match expand(input) {
        Ok(code) => code,
        Err(message) => format!("::core::compile_error!({message:?});"),
    };
    expanded.parse().unwrap_or_else(|_| TokenStream::new())
}

fn expand(input: TokenStream) -> Result<String, String> {
    let mut tokens = input.into_iter();
    let path = match tokens.next() {
        Some(TokenTree::Literal(lit)) => unquote(&lit.to_string()).ok_or("chat_parser!: expected a string literal path")?,
        _ => return Err("chat_parser!: expected a template path, e.g. chat_parser!(\"templates/x.jinja\")".into()),
    };
    if let Some(extra) = tokens.next() {
        return Err(format!("chat_parser!: unexpected `{extra}` after the template path"));
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| "chat_parser!: CARGO_MANIFEST_DIR is not set")?;
    let full = std::path::Path::new(&root).join(&path);
    let source = std::fs::read_to_string(&full).map_err(|e| format!("{path}: cannot read template: {e}"))?;
    let template = chat_parser_generator::jinja::ChatTemplate::new(&path, &source).map_err(|e| e.to_string())?;
    let spec = chat_parser_generator::analyze(&template).map_err(|e| e.to_string())?.spec;
    let module = chat_parser_generator::build::const_name(path.rsplit('/').next().unwrap_or(&path)).to_lowercase();
    let tokens: Vec<String> = spec.preserved_tokens.iter().map(|t| format!("{t:?}")).collect();
    let spec_json = serde_json_string(&spec)?;
    Ok(format!(
        "pub mod {module} {{
            const _: &[u8] = include_bytes!({full:?});
            pub const GENERATION_PROMPT: &str = {:?};
            pub const REASONING_START: &str = {:?};
            pub const REASONING_END: &str = {:?};
            pub const PRESERVED_TOKENS: &[&str] = &[{}];
            pub const SPEC_JSON: &str = {spec_json:?};
        }}",
        spec.generation_prompt.thinking,
        spec.reasoning.start,
        spec.reasoning.end,
        tokens.join(", "),
        full = full.display().to_string(),
    ))
}

fn serde_json_string(spec: &chat_parser_generator::FormatSpec) -> Result<String, String> {
    chat_parser_generator::spec_to_json(spec)
}

/// The value of a plain or raw string literal token.
fn unquote(lit: &str) -> Option<String> {
    if let Some(raw) = lit.strip_prefix('r') {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let inner = &raw[hashes..raw.len() - hashes];
        return inner.strip_prefix('"')?.strip_suffix('"').map(String::from);
    }
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                '\'' => out.push('\''),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}
