//! `chat_parser!("templates/x.jinja")`: analyses a chat template at compile
//! time and expands to a module of constants describing its format.
//!
//! The path is relative to the crate's `CARGO_MANIFEST_DIR`. The template is
//! tracked with `include_bytes!`, so editing it rebuilds the crate. Options
//! follow the path: `module = name` names the module (default: the file
//! name). Template problems become a `compile_error!` at the path that names
//! the template file and line; a stub module with the same constants is still
//! emitted, so one mistake does not cascade into unresolved names.
//!
//! ```text
//! chat_parser_macros::chat_parser!("templates/think.jinja");
//! chat_parser_macros::chat_parser!("templates/xml_args.jinja", module = qwen_coder);
//! assert_eq!(think::REASONING_END.trim(), "</think>");
//! ```
//!
//! (Exercised by the root crate's `tests/macro_and_build.rs` and this crate's
//! trybuild UI tests: a doctest here would resolve paths against this crate.)

use proc_macro::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

/// The constants a module carries (also emitted, empty, by the stub).
struct Constants {
    full_path: Option<String>,
    generation_prompt: String,
    reasoning_start: String,
    reasoning_end: String,
    preserved_tokens: Vec<String>,
    spec_json: String,
}

struct Error {
    span: Span,
    message: String,
}

#[proc_macro]
pub fn chat_parser(input: TokenStream) -> TokenStream {
    let mut tokens = input.into_iter().peekable();
    // The path comes first; without it there is nothing to name a stub after.
    let (path, path_span) = match tokens.next() {
        Some(TokenTree::Literal(lit)) => match unquote(&lit.to_string()) {
            Some(p) => (p, lit.span()),
            None => return error_only(lit.span(), "chat_parser!: expected a string literal path"),
        },
        Some(other) => return error_only(other.span(), "chat_parser!: expected a template path, e.g. chat_parser!(\"templates/x.jinja\")"),
        None => return error_only(Span::call_site(), "chat_parser!: expected a template path, e.g. chat_parser!(\"templates/x.jinja\")"),
    };
    let mut module = chat_parser_generator::build::const_name(path.rsplit('/').next().unwrap_or(&path)).to_lowercase();
    let mut errors = Vec::new();
    // Options: `, key = value` pairs.
    while let Some(tt) = tokens.next() {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {}
            _ => {
                errors.push(Error { span: tt.span(), message: format!("chat_parser!: unexpected `{tt}` (options are `, key = value`)") });
                break;
            }
        }
        let Some(key) = tokens.next() else { break };
        let eq = tokens.next();
        let value = tokens.next();
        match (&key, &eq, &value) {
            (TokenTree::Ident(k), Some(TokenTree::Punct(p)), Some(TokenTree::Ident(v))) if k.to_string() == "module" && p.as_char() == '=' => {
                module = v.to_string();
            }
            (TokenTree::Ident(k), _, _) if k.to_string() != "module" => {
                errors.push(Error { span: k.span(), message: format!("chat_parser!: unknown option `{k}` (known options: `module = name`)") });
            }
            _ => errors.push(Error { span: key.span(), message: "chat_parser!: expected `module = name`".to_string() }),
        }
    }
    let constants = match analyse(&path) {
        Ok(c) => Some(c),
        Err(message) => {
            errors.push(Error { span: path_span, message });
            None
        }
    };
    let mut out = TokenStream::new();
    for e in &errors {
        out.extend(compile_error(e.span, &e.message));
    }
    let constants = constants.unwrap_or(Constants {
        full_path: None,
        generation_prompt: String::new(),
        reasoning_start: String::new(),
        reasoning_end: String::new(),
        preserved_tokens: Vec::new(),
        spec_json: String::new(),
    });
    out.extend(module_tokens(&module, &constants));
    out
}

fn analyse(path: &str) -> Result<Constants, String> {
    let root = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| "chat_parser!: CARGO_MANIFEST_DIR is not set")?;
    let full = std::path::Path::new(&root).join(path);
    let source = std::fs::read_to_string(&full).map_err(|e| format!("{path}: cannot read template: {e}"))?;
    let spec = chat_parser_generator::spec_from_source(path, &source)?;
    Ok(Constants {
        full_path: Some(full.display().to_string()),
        generation_prompt: spec.generation_prompt.thinking.clone(),
        reasoning_start: spec.reasoning.start.clone(),
        reasoning_end: spec.reasoning.end.clone(),
        preserved_tokens: spec.preserved_tokens.clone(),
        spec_json: chat_parser_generator::spec_to_json(&spec)?,
    })
}

fn module_tokens(module: &str, c: &Constants) -> TokenStream {
    let tokens: Vec<String> = c.preserved_tokens.iter().map(|t| format!("{t:?}")).collect();
    let track = c.full_path.as_ref().map(|p| format!("const _: &[u8] = ::core::include_bytes!({p:?});")).unwrap_or_default();
    let code = format!(
        "pub mod {module} {{
            {track}
            pub const GENERATION_PROMPT: &str = {:?};
            pub const REASONING_START: &str = {:?};
            pub const REASONING_END: &str = {:?};
            pub const PRESERVED_TOKENS: &[&str] = &[{}];
            pub const SPEC_JSON: &str = {:?};
        }}",
        c.generation_prompt,
        c.reasoning_start,
        c.reasoning_end,
        tokens.join(", "),
        c.spec_json,
    );
    code.parse().unwrap_or_default()
}

/// `::core::compile_error!("message")` with every token at `span`, so the
/// error points at the template path (or the bad option) in the caller.
fn compile_error(span: Span, message: &str) -> TokenStream {
    let mut lit = Literal::string(message);
    lit.set_span(span);
    let mut group = Group::new(Delimiter::Parenthesis, TokenStream::from(TokenTree::Literal(lit)));
    group.set_span(span);
    let colon = |spacing| {
        let mut p = Punct::new(':', spacing);
        p.set_span(span);
        TokenTree::Punct(p)
    };
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(span);
    let mut semi = Punct::new(';', Spacing::Alone);
    semi.set_span(span);
    [
        colon(Spacing::Joint),
        colon(Spacing::Alone),
        TokenTree::Ident(Ident::new("core", span)),
        colon(Spacing::Joint),
        colon(Spacing::Alone),
        TokenTree::Ident(Ident::new("compile_error", span)),
        TokenTree::Punct(bang),
        TokenTree::Group(group),
        TokenTree::Punct(semi),
    ]
    .into_iter()
    .collect()
}

fn error_only(span: Span, message: &str) -> TokenStream {
    compile_error(span, message)
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
