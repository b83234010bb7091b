//! The build.rs API: analyse a directory of templates at build time.
//!
//! ```no_run
//! // build.rs
//! let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
//! chat_parser_generator::build::Builder::new("templates")
//!     .write_info_module(out.join("templates.rs"))
//!     .unwrap();
//! ```
//!
//! Output is written only when it changed (so dependants are not rebuilt for
//! nothing), and every template gets a `cargo:rerun-if-changed` line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::spec::Family;

/// Analyses every `*.jinja` file of a directory.
pub struct Builder {
    dirs: Vec<PathBuf>,
    emit_cargo_directives: bool,
    skip_failures: bool,
    tools: Option<PathBuf>,
    special_tokens: Option<PathBuf>,
}

impl Builder {
    pub fn new(dir: impl Into<PathBuf>) -> Builder {
        Builder {
            dirs: vec![dir.into()],
            emit_cargo_directives: std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
            skip_failures: false,
            tools: None,
            special_tokens: None,
        }
    }

    /// A builder for the templates of all of `dirs`; `None` when there is
    /// none (a build script's directory list, from an environment variable,
    /// can be empty).
    pub fn for_dirs(dirs: &[PathBuf]) -> Option<Builder> {
        let (first, rest) = dirs.split_first()?;
        Some(rest.iter().fold(Builder::new(first), |b, d| b.dir(d)))
    }

    /// Also takes the templates of another directory.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.dirs.push(dir.into());
        self
    }

    /// Leaves out templates that cannot be analysed (with a
    /// `cargo:warning` naming each) instead of failing: for building
    /// parsers for a corpus that has templates no parser is made for.
    pub fn skip_failures(mut self, on: bool) -> Builder {
        self.skip_failures = on;
        self
    }

    /// Declares tools at build time: a JSON file holding an array of OpenAI
    /// tool objects. Each module then has a `tools` module with grammars for
    /// exactly these tools (`tools::GBNF`, `tools::LARK`, ...).
    pub fn tools(mut self, file: impl Into<PathBuf>) -> Builder {
        self.tools = Some(file.into());
        self
    }

    /// Gives templates their tokenizer's special tokens: a JSON file from
    /// template file name to `{"bos_token", "eos_token"}` (see
    /// [`crate::template_file::read_special_tokens`]). The analysis renders
    /// `{{ eos_token }}` with them, so a Mistral template given `"</s>"`
    /// knows that `</s>` ends a reply. Templates not named get none.
    pub fn special_tokens(mut self, file: impl Into<PathBuf>) -> Builder {
        self.special_tokens = Some(file.into());
        self
    }

    /// A template file with its special tokens (from [`Builder::special_tokens`]).
    fn template_file(&self, path: &Path, tokens: &std::collections::BTreeMap<String, crate::jinja::SpecialTokens>) -> Result<crate::template_file::TemplateFile, String> {
        let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let mut template = crate::template_file::TemplateFile::read(path)?;
        if let Some(special) = tokens.get(&file) {
            template = template.with_tokens(special);
        }
        Ok(template)
    }

    /// The special tokens by template file name (none without [`Builder::special_tokens`]).
    fn special_tokens_map(&self) -> Result<std::collections::BTreeMap<String, crate::jinja::SpecialTokens>, String> {
        let Some(file) = &self.special_tokens else { return Ok(Default::default()) };
        if self.emit_cargo_directives {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        crate::template_file::read_special_tokens(file)
    }

    /// The declared tools (none without [`Builder::tools`]).
    fn declared_tools(&self) -> Result<Option<Vec<serde_json::Value>>, String> {
        let Some(file) = &self.tools else { return Ok(None) };
        if self.emit_cargo_directives {
            println!("cargo:rerun-if-changed={}", file.display());
        }
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        match serde_json::from_str(&text) {
            Ok(serde_json::Value::Array(tools)) => Ok(Some(tools)),
            Ok(_) => Err(format!("{}: expected a JSON array of tool objects", file.display())),
            Err(e) => Err(format!("{}:{}:{}: {e}", file.display(), e.line(), e.column())),
        }
    }

    /// Turns `cargo:rerun-if-changed` output on or off (on inside build scripts).
    pub fn cargo_directives(mut self, on: bool) -> Builder {
        self.emit_cargo_directives = on;
        self
    }

    /// The templates of the directories, sorted by file name within each.
    pub fn templates(&self) -> Result<Vec<PathBuf>, String> {
        let mut all = Vec::new();
        for dir in &self.dirs {
            let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let mut paths: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
                .collect();
            paths.sort();
            all.extend(paths);
        }
        Ok(all)
    }

    fn rerun_dirs(&self) {
        if self.emit_cargo_directives {
            for dir in &self.dirs {
                println!("cargo:rerun-if-changed={}", dir.display());
            }
        }
    }

    /// Writes a module with one `TemplateInfo` constant per template (named
    /// after the file: `think.jinja` becomes `THINK`) and an `ALL` slice.
    pub fn write_info_module(&self, out: impl AsRef<Path>) -> Result<(), String> {
        self.rerun_dirs();
        let mut code = String::from("// @generated by chat-parser-generator's build API. DO NOT EDIT.\n");
        let mut names = Vec::new();
        let special = self.special_tokens_map()?;
        for path in self.templates()? {
            if self.emit_cargo_directives {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let spec = crate::spec_from_file(&self.template_file(&path, &special)?)?;
            let name = const_name(&file);
            let handler = match &spec.family {
                Family::Generic => "autoparser".to_string(),
                Family::Dedicated(n) => n.clone(),
            };
            let spec_json = crate::spec_to_json(&spec)?;
            let tokens: Vec<String> = spec.preserved_tokens.iter().map(|t| format!("{t:?}")).collect();
            let _ = writeln!(
                code,
                "pub const {name}: TemplateInfo = TemplateInfo {{ file: {file:?}, handler: {handler:?}, generation_prompt: {:?}, reasoning_start: {:?}, reasoning_end: {:?}, preserved_tokens: &[{}], spec_json: {spec_json:?} }};",
                spec.generation_prompt.thinking,
                spec.reasoning.start,
                spec.reasoning.end,
                tokens.join(", "),
            );
            names.push(name);
        }
        let _ = writeln!(code, "pub const ALL: &[TemplateInfo] = &[{}];", names.join(", "));
        write_if_changed(out.as_ref(), &code)
    }
}

impl Builder {
    /// Writes one parser module per template (named after the file:
    /// `xml_args.jinja` becomes `xml_args`), for `include!`, plus:
    /// - `TEMPLATES`: the template file names;
    /// - `AnyParser`: an enum over all the parsers, made by `AnyParser::new(file, options)`,
    ///   for code that picks the template at run time.
    ///
    /// A template that cannot be analysed, or whose format has no generic
    /// parser, fails the build with its file and line.
    pub fn write_parser_modules(&self, out: impl AsRef<Path>) -> Result<(), String> {
        let (code, _) = self.parser_modules()?;
        write_if_changed(out.as_ref(), &code)
    }

    /// The C interface's Rust side and header (see [`crate::capi`]): writes
    /// the parser modules with their C tables to `rust_out`, and the header
    /// `chat_parser.h` to `header_out`.
    pub fn write_capi(&self, rust_out: impl AsRef<Path>, header_out: impl AsRef<Path>) -> Result<(), String> {
        let (mut code, mods) = self.parser_modules()?;
        code.push_str(&crate::capi::tables(&mods));
        write_if_changed(rust_out.as_ref(), &code)?;
        let files: Vec<String> = mods.into_iter().map(|(f, _)| f).collect();
        write_if_changed(header_out.as_ref(), &crate::capi::header(&files))
    }

    /// The parser modules' code, and each module's template file and
    /// module name.
    fn parser_modules(&self) -> Result<(String, Vec<(String, String)>), String> {
        self.rerun_dirs();
        let mut code = String::from("// @generated by chat-parser-generator's build API (Builder::write_parser_modules). DO NOT EDIT.\n");
        let mut mods = Vec::new();
        let tools = self.declared_tools()?;
        let special = self.special_tokens_map()?;
        for path in self.templates()? {
            if self.emit_cargo_directives {
                println!("cargo:rerun-if-changed={}", path.display());
            }
            let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let made = self
                .template_file(&path, &special)
                .map(|t| crate::template_file::TemplateFile { name: file.clone(), ..t })
                .and_then(|t| crate::spec_from_file(&t))
                .and_then(|spec| {
                    let mut tokens = crate::codegen::module_tokens(&spec).map_err(|e| e.to_string())?;
                    if let Some(tools) = &tools {
                        tokens.extend(crate::codegen::tool_grammar_tokens(&spec, tools));
                    }
                    Ok(tokens)
                })
                .map_err(|e| format!("{}: {e}", path.display()));
            let tokens = match made {
                Ok(t) => t,
                Err(e) if self.skip_failures => {
                    if self.emit_cargo_directives {
                        println!("cargo:warning=no parser for {e}");
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let file_ast: syn::File = syn::parse2(tokens).map_err(|e| format!("{}: generated code: {e}", path.display()))?;
            let name = module_name(&file);
            let body = prettyplease::unparse(&file_ast);
            let _ = writeln!(code, "/// Parser for `{file}`.\npub mod {name} {{\n{body}}}\n");
            mods.push((file, name));
        }
        let files: Vec<String> = mods.iter().map(|(f, _)| format!("{f:?}")).collect();
        let _ = writeln!(code, "/// The templates, by file name.\npub const TEMPLATES: &[&str] = &[{}];\n", files.join(", "));
        let variants: Vec<String> = mods.iter().map(|(_, m)| format!("    {}({m}::Parser<'t>),", camel(m))).collect();
        let news: Vec<String> = mods.iter().map(|(f, m)| format!("            {f:?} => AnyParser::{}({m}::Parser::new(options)),", camel(m))).collect();
        let feeds: Vec<String> = mods.iter().map(|(_, m)| format!("            AnyParser::{}(p) => p.feed(bytes, sink),", camel(m))).collect();
        let visits: Vec<String> = mods.iter().map(|(_, m)| format!("            AnyParser::{}(p) => visitor.visit(p),", camel(m))).collect();
        let finishes: Vec<String> = mods.iter().map(|(_, m)| format!("            AnyParser::{}(p) => p.finish(sink),", camel(m))).collect();
        let sizes: Vec<String> = mods.iter().map(|(_, m)| format!("            AnyParser::{}(_) => core::mem::size_of::<{m}::Parser<'static>>(),", camel(m))).collect();
        let _ = writeln!(
            code,
            "/// Any of the generated parsers, picked by template file name.\npub enum AnyParser<'t> {{\n{}\n}}\n\n\
             impl<'t> AnyParser<'t> {{\n    /// The parser for `file` (a name in `TEMPLATES`).\n    pub fn new(file: &str, options: chat_parser_runtime::Options<'t>) -> Option<AnyParser<'t>> {{\n        Some(match file {{\n{}\n            _ => return None,\n        }})\n    }}\n\n\
             pub fn feed(&mut self, bytes: &[u8], sink: &mut impl chat_parser_runtime::Sink) {{\n        match self {{\n{}\n        }}\n    }}\n\n\
             pub fn finish(&mut self, sink: &mut impl chat_parser_runtime::Sink) {{\n        match self {{\n{}\n        }}\n    }}\n\n\
             /// Runs `visitor` on the parser as its own type: one dispatch, instead of one per `feed`.\n    pub fn visit<V: chat_parser_runtime::VisitParser>(&mut self, visitor: V) -> V::Output {{\n        match self {{\n{}\n        }}\n    }}\n\n\
             /// `size_of` the parser's state.\n    pub fn state_bytes(&self) -> usize {{\n        match self {{\n{}\n        }}\n    }}\n}}",
            variants.join("\n"),
            news.join("\n"),
            feeds.join("\n"),
            finishes.join("\n"),
            visits.join("\n"),
            sizes.join("\n"),
        );
        Ok((code, mods))
    }
}

/// `xml_args.jinja` → `xml_args`; `Qwen3-Coder.jinja` → `qwen3_coder`.
pub fn module_name(file: &str) -> String {
    let stem = file.strip_suffix(".jinja").unwrap_or(file);
    let mut name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    if name.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// `xml_args` → `XmlArgs`.
fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = true;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// `xml_args.jinja` → `XML_ARGS`.
pub fn const_name(file: &str) -> String {
    let stem = file.strip_suffix(".jinja").unwrap_or(file);
    let mut name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if name.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

/// Writes `text` to `path` unless the file already holds exactly that.
pub fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
