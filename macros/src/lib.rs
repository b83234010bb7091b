//! `chat_parser!("templates/x.jinja")`: analyses a chat template at compile
//! time and expands to a module holding a streaming parser for its output.
//!
//! The module is what the generator's codegen makes (the same as the build.rs
//! API and `chat-parser generate` write): the constants `TEMPLATE`,
//! `GENERATION_PROMPT`, `GENERATION_PROMPT_NO_THINKING`, `REASONING_START`,
//! `REASONING_END`, `PRESERVED_TOKENS`, `GRAMMAR_TRIGGERS`, `STOP_STRINGS`,
//! `GBNF`, `LARK`, `HOLD_LIMIT`, `WINDOW_BYTES`, a `Parser` with
//! `new(Options)`, `feed(&[u8], &mut impl Sink)` and `finish(&mut impl Sink)`,
//! and from the macro also `SPEC_JSON`, the format spec as JSON.
//!
//! The generated code names the runtime as `::chat_parser_runtime`, so the
//! crate that calls the macro must depend on `chat-parser-runtime` (with the
//! `alloc` feature for `MessageBuilder`).
//!
//! The path is relative to the crate's `CARGO_MANIFEST_DIR`. The template is
//! tracked with `include_bytes!`, so editing it rebuilds the crate; it may
//! also be a HF `tokenizer_config.json` (its `chat_template` and special
//! tokens). Options follow the path: `module = name` names the module
//! (default: the file name, as `chat_parser_generator::build::module_name`
//! makes it); `tools = "tools.json"` adds grammars for those tools;
//! `bos_token = "<s>"` and `eos_token = "</s>"` give the tokenizer's special
//! tokens, which the template writes through variables (a Mistral template
//! ends a turn with `{{ eos_token }}`: given `"</s>"`, a `</s>` in the
//! output ends the reply). Template
//! problems become a `compile_error!` at the path that names the template
//! file and line; a stub module with the same constants and a `Parser` of
//! the same API is still emitted, so one mistake does not cascade into
//! unresolved names.
//!
//! ```text
//! chat_parser_macros::chat_parser!("templates/xml_args.jinja", module = qwen_coder);
//!
//! let tools = [Tool { name: "get_weather", args: &[("city", ArgType::String)] }];
//! let mut parser = qwen_coder::Parser::new(Options { tools: &tools, ..Options::default() });
//! let mut message = MessageBuilder::new();
//! parser.feed(b"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n", &mut message);
//! parser.feed(b"</function>\n</tool_call>", &mut message);
//! parser.finish(&mut message);
//! assert_eq!(message.into_message().tool_calls[0].name, "get_weather");
//! ```
//!
//! (Exercised by the root crate's `tests/macro_and_build.rs` and this crate's
//! trybuild UI tests: a doctest here would resolve paths against this crate.)

use chat_parser_generator::{jinja::SpecialTokens, template_file::TemplateFile};
use proc_macro2::{Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};

struct Error {
    span: Span,
    message: String,
}

/// What a good template expands to, besides the module name.
struct Generated {
    /// The template's absolute path, for `include_bytes!`.
    full_path: String,
    /// The parser module's items (from `codegen::module_tokens`).
    items: TokenStream,
    spec_json: String,
    spec: chat_parser_generator::FormatSpec,
}

#[proc_macro]
pub fn chat_parser(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand(input.into()).into()
}

fn expand(input: TokenStream) -> TokenStream {
    let mut tokens = input.into_iter().peekable();
    // The path comes first; without it there is nothing to name a stub after.
    let (path, path_span) = match tokens.next() {
        Some(TokenTree::Literal(lit)) => match unquote(&lit.to_string()) {
            Some(p) => (p, lit.span()),
            None => return compile_error(lit.span(), "chat_parser!: expected a string literal path"),
        },
        Some(other) => return compile_error(other.span(), "chat_parser!: expected a template path, e.g. chat_parser!(\"templates/x.jinja\")"),
        None => return compile_error(Span::call_site(), "chat_parser!: expected a template path, e.g. chat_parser!(\"templates/x.jinja\")"),
    };
    let file = path.rsplit('/').next().unwrap_or(&path);
    let mut module = Ident::new(&chat_parser_generator::build::module_name(file), Span::call_site());
    let mut tools: Option<(String, Span)> = None;
    let mut special = SpecialTokens::default();
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
            (TokenTree::Ident(k), Some(TokenTree::Punct(p)), Some(TokenTree::Ident(v))) if k == "module" && p.as_char() == '=' => {
                module = v.clone();
            }
            (TokenTree::Ident(k), Some(TokenTree::Punct(p)), Some(TokenTree::Literal(v))) if k == "tools" && p.as_char() == '=' => {
                match unquote(&v.to_string()) {
                    Some(file) => tools = Some((file, v.span())),
                    None => errors.push(Error { span: v.span(), message: "chat_parser!: `tools` takes a string path to a JSON array of tools".to_string() }),
                }
            }
            (TokenTree::Ident(k), Some(TokenTree::Punct(p)), Some(TokenTree::Literal(v)))
                if (k == "bos_token" || k == "eos_token") && p.as_char() == '=' =>
            {
                match unquote(&v.to_string()) {
                    Some(token) if k == "bos_token" => special.bos_token = token,
                    Some(token) => special.eos_token = token,
                    None => errors.push(Error { span: v.span(), message: format!("chat_parser!: `{k}` takes the token as a string, e.g. {k} = \"</s>\"") }),
                }
            }
            (TokenTree::Ident(k), _, _) if !["module", "tools", "bos_token", "eos_token"].iter().any(|known| k == known) => {
                errors.push(Error {
                    span: k.span(),
                    message: format!(
                        "chat_parser!: unknown option `{k}` (known options: `module = name`, `tools = \"tools.json\"`, `bos_token = \"<s>\"`, `eos_token = \"</s>\"`)"
                    ),
                });
            }
            _ => errors.push(Error { span: key.span(), message: "chat_parser!: expected `module = name`".to_string() }),
        }
    }
    let mut generated = generate(&path, &special).map_err(|message| errors.push(Error { span: path_span, message })).ok();
    if let (Some(g), Some((file, span))) = (&mut generated, &tools) {
        match tool_grammars(&g.spec, file) {
            Ok(items) => g.items.extend(items),
            Err(message) => errors.push(Error { span: *span, message }),
        }
    }
    let mut out: TokenStream = errors.iter().flat_map(|e| compile_error(e.span, &e.message)).collect();
    out.extend(match generated {
        Some(g) => parser_module(&module, &path, g),
        None => stub_module(&module),
    });
    out
}

/// Reads, analyses and generates the parser for the template at `path`
/// (Jinja, or a tokenizer config), with the special tokens given.
fn generate(path: &str, tokens: &SpecialTokens) -> Result<Generated, String> {
    let root = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| "chat_parser!: CARGO_MANIFEST_DIR is not set")?;
    let full = std::path::Path::new(&root).join(path);
    let text = std::fs::read_to_string(&full).map_err(|e| format!("{path}: cannot read template: {e}"))?;
    let file = TemplateFile::from_text(path, &text)?.with_tokens(tokens);
    let spec = chat_parser_generator::spec_from_file(&file)?;
    let items = chat_parser_generator::codegen::module_tokens(&spec).map_err(|e| {
        let e = e.to_string();
        if e.starts_with(path) {
            e
        } else {
            format!("{path}: {e}")
        }
    })?;
    let spec_json = chat_parser_generator::spec_to_json(&spec)?;
    Ok(Generated { full_path: full.display().to_string(), items: absolute_runtime_paths(items), spec_json, spec })
}

/// Grammars for the tools in `file` (a JSON array of OpenAI tool objects,
/// relative to `CARGO_MANIFEST_DIR`), for the template at `path`.
fn tool_grammars(spec: &chat_parser_generator::FormatSpec, file: &str) -> Result<TokenStream, String> {
    let root = std::env::var("CARGO_MANIFEST_DIR").map_err(|_| "chat_parser!: CARGO_MANIFEST_DIR is not set")?;
    let full = std::path::Path::new(&root).join(file);
    let text = std::fs::read_to_string(&full).map_err(|e| format!("{file}: cannot read tools: {e}"))?;
    let tools: Vec<serde_json::Value> = match serde_json::from_str(&text) {
        Ok(serde_json::Value::Array(tools)) => tools,
        Ok(_) => return Err(format!("{file}: expected a JSON array of tool objects")),
        Err(e) => return Err(format!("{file}:{}:{}: {e}", e.line(), e.column())),
    };
    let grammars = absolute_runtime_paths(chat_parser_generator::codegen::tool_grammar_tokens(spec, &tools));
    let full = full.display().to_string();
    Ok(quote! {
        #grammars
        // Rebuild when the tools change.
        const _: &[u8] = ::core::include_bytes!(#full);
    })
}

fn parser_module(module: &Ident, path: &str, g: Generated) -> TokenStream {
    let Generated { full_path, items, spec_json, .. } = g;
    let doc = format!(" Parser for `{path}` (generated by `chat_parser!`).");
    quote! {
        #[doc = #doc]
        #[allow(missing_docs)]
        pub mod #module {
            #items
            // Rebuild when the template changes.
            const _: &[u8] = ::core::include_bytes!(#full_path);
            /// The format spec as JSON (`chat_parser_generator::FormatSpec`).
            pub const SPEC_JSON: &str = #spec_json;
        }
    }
}

/// The module for a template that failed: the same names and `Parser` API,
/// empty, so code using the module compiles and only the macro's error shows.
fn stub_module(module: &Ident) -> TokenStream {
    quote! {
        #[allow(missing_docs, dead_code)]
        pub mod #module {
            pub use ::chat_parser_runtime::Options;
            pub const TEMPLATE: &str = "";
            pub const GENERATION_PROMPT: &str = "";
            pub const GENERATION_PROMPT_NO_THINKING: &str = "";
            pub const REASONING_START: &str = "";
            pub const REASONING_END: &str = "";
            pub const PRESERVED_TOKENS: &[&str] = &[];
            pub const GRAMMAR_TRIGGERS: &[&str] = &[];
            pub const STOP_STRINGS: &[&str] = &[];
            pub const GBNF: &str = "";
            pub const LARK: &str = "";
            pub const HOLD_LIMIT: usize = 0;
            pub const WINDOW_BYTES: usize = 0;
            pub const SPEC_JSON: &str = "";

            pub struct Parser<'t>(::core::marker::PhantomData<Options<'t>>);

            impl<'t> Parser<'t> {
                pub fn new(options: Options<'t>) -> Parser<'t> {
                    let _ = options;
                    Parser(::core::marker::PhantomData)
                }

                pub fn feed(&mut self, bytes: &[u8], sink: &mut impl ::chat_parser_runtime::Sink) {
                    let _ = (bytes, sink);
                }

                pub fn finish(&mut self, sink: &mut impl ::chat_parser_runtime::Sink) {
                    let _ = sink;
                }
            }
        }
    }
}

/// Makes every `chat_parser_runtime::` path absolute (`::chat_parser_runtime::`),
/// so it names the dependency even where a local item has the same name.
fn absolute_runtime_paths(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut after_colons = false;
    for tt in tokens {
        let next_after_colons = matches!(&tt, TokenTree::Punct(p) if p.as_char() == ':');
        match tt {
            TokenTree::Ident(ref ident) if ident == "chat_parser_runtime" && !after_colons => {
                let mut first = Punct::new(':', Spacing::Joint);
                first.set_span(ident.span());
                let mut second = Punct::new(':', Spacing::Alone);
                second.set_span(ident.span());
                out.extend([TokenTree::Punct(first), TokenTree::Punct(second), tt]);
            }
            TokenTree::Group(group) => {
                let mut new = Group::new(group.delimiter(), absolute_runtime_paths(group.stream()));
                new.set_span(group.span());
                out.push(TokenTree::Group(new));
            }
            other => out.push(other),
        }
        after_colons = next_after_colons;
    }
    out.into_iter().collect()
}

/// `::core::compile_error!("message");` with every token at `span`, so the
/// error points at the template path (or the bad option) in the caller.
fn compile_error(span: Span, message: &str) -> TokenStream {
    let mut lit = Literal::string(message);
    lit.set_span(span);
    quote_spanned!(span=> ::core::compile_error!(#lit);)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_paths_become_absolute() {
        let tokens: TokenStream = "use chat_parser_runtime::Sink; mod m { pub use ::chat_parser_runtime::Options; fn f(s: &mut impl chat_parser_runtime::Sink) {} }".parse().unwrap();
        let got = absolute_runtime_paths(tokens).to_string();
        assert_eq!(got.matches(":: chat_parser_runtime").count(), 3, "{got}");
        assert!(!got.contains(":: :: chat_parser_runtime"), "{got}");
    }

    #[test]
    fn string_literals() {
        assert_eq!(unquote(r#""templates/x.jinja""#).as_deref(), Some("templates/x.jinja"));
        assert_eq!(unquote(r##"r#"a"b"#"##).as_deref(), Some("a\"b"));
        assert_eq!(unquote("x"), None);
    }
}
