//! Where a template comes from: a Jinja file, or the `tokenizer_config.json`
//! a model ships, which holds the template beside the tokenizer's special
//! tokens.
//!
//! The tokens matter to the analysis: a template that ends a turn with
//! `{{ eos_token }}` (the Mistral family) only shows its end-of-turn marker
//! when rendered with the real token. A Jinja file gets its tokens from the
//! caller (`--eos-token`, the build API's [`special tokens
//! file`](crate::build::Builder::special_tokens), the macro's `eos_token =`);
//! a tokenizer config brings its own.
//!
//! ```
//! use chat_parser_generator::template_file::TemplateFile;
//! let config = r#"{"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
//!                  "bos_token": "<s>", "eos_token": {"content": "</s>", "special": true}}"#;
//! let file = TemplateFile::from_text("tokenizer_config.json", config).unwrap();
//! assert_eq!(file.special.eos_token, "</s>");
//! assert_eq!(file.special.bos_token, "<s>");
//! assert!(file.source.starts_with("{{ bos_token }}"));
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::jinja::{ChatTemplate, SpecialTokens};

/// A template's source, the name diagnostics give it, and its tokenizer's
/// special tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateFile {
    pub name: String,
    pub source: String,
    pub special: SpecialTokens,
}

impl TemplateFile {
    /// Reads a template file: a `.json` file is a tokenizer config, anything
    /// else Jinja source.
    pub fn read(path: &Path) -> Result<TemplateFile, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        TemplateFile::from_text(&path.display().to_string(), &text)
    }

    /// A template from its text; `name` decides the kind as [`TemplateFile::read`] does.
    pub fn from_text(name: &str, text: &str) -> Result<TemplateFile, String> {
        if !name.ends_with(".json") {
            return Ok(TemplateFile { name: name.to_string(), source: text.to_string(), special: SpecialTokens::default() });
        }
        let config: Value = serde_json::from_str(text).map_err(|e| format!("{name}:{}:{}: {e}", e.line(), e.column()))?;
        let source = chat_template(&config).ok_or_else(|| format!("{name}: no `chat_template` (a string, or a list of {{name, template}} with one named `default`)"))?;
        let special = SpecialTokens { bos_token: token(&config, "bos_token"), eos_token: token(&config, "eos_token") };
        // Diagnostics count lines inside the template, not the JSON file.
        Ok(TemplateFile { name: format!("{name}#chat_template"), source, special })
    }

    /// Overrides the tokens that `special` gives (a non-empty field wins).
    pub fn with_tokens(mut self, special: &SpecialTokens) -> TemplateFile {
        if !special.bos_token.is_empty() {
            self.special.bos_token = special.bos_token.clone();
        }
        if !special.eos_token.is_empty() {
            self.special.eos_token = special.eos_token.clone();
        }
        self
    }

    /// Compiles the template, with its tokens; errors name the file and line.
    pub fn compile(&self) -> Result<ChatTemplate, String> {
        ChatTemplate::new(&self.name, &self.source).map(|t| t.with_special_tokens(self.special.clone())).map_err(|e| e.to_string())
    }
}

/// The template of a tokenizer config: `chat_template` as a string, or
/// (newer configs) a list of named templates, of which the one named
/// `default` is the chat template (as transformers picks it; without one
/// there is none).
fn chat_template(config: &Value) -> Option<String> {
    match config.get("chat_template")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(named) => named
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some("default"))
            .and_then(|t| t.get("template").and_then(Value::as_str).map(str::to_string)),
        _ => None,
    }
}

/// A special token of a tokenizer config: a string, or an added-token
/// object with `content` (empty when absent or null).
fn token(config: &Value, key: &str) -> String {
    match config.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o.get("content").and_then(Value::as_str).unwrap_or_default().to_string(),
        _ => String::new(),
    }
}

/// A special-tokens file: a JSON object from template file name to its
/// tokens, for a directory of Jinja files whose tokenizers are known.
///
/// ```json
/// {"Mistral-Small-3.2-24B-Instruct-2506.jinja": {"bos_token": "<s>", "eos_token": "</s>"}}
/// ```
pub fn read_special_tokens(path: &Path) -> Result<BTreeMap<String, SpecialTokens>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_special_tokens(&path.display().to_string(), &text)
}

/// [`read_special_tokens`] on text (`name` for diagnostics).
pub fn parse_special_tokens(name: &str, text: &str) -> Result<BTreeMap<String, SpecialTokens>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{name}:{}:{}: {e}", e.line(), e.column()))?;
    let Value::Object(map) = value else { return Err(format!("{name}: expected an object from template file name to {{bos_token, eos_token}}")) };
    map.iter()
        .map(|(file, tokens)| {
            if !tokens.is_object() {
                return Err(format!("{name}: `{file}`: expected {{bos_token, eos_token}}"));
            }
            Ok((file.clone(), SpecialTokens { bos_token: token(tokens, "bos_token"), eos_token: token(tokens, "eos_token") }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_templates_pick_default() {
        let config = r#"{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}], "eos_token": null}"#;
        let file = TemplateFile::from_text("c.json", config).unwrap();
        assert_eq!(file.source, "D");
        assert_eq!(file.special, SpecialTokens::default());
        let config = r#"{"chat_template": [{"name": "tool_use", "template": "T"}]}"#;
        assert!(TemplateFile::from_text("c.json", config).unwrap_err().contains("default"));
    }

    #[test]
    fn config_without_template_is_an_error() {
        let err = TemplateFile::from_text("c.json", r#"{"eos_token": "</s>"}"#).unwrap_err();
        assert!(err.contains("c.json") && err.contains("chat_template"), "{err}");
        let err = TemplateFile::from_text("c.json", "{\n  oops").unwrap_err();
        assert!(err.starts_with("c.json:2:"), "{err}");
        // A Jinja error names the line inside the template.
        let config = r#"{"chat_template": "line 1\nline 2\n{% if %}"}"#;
        let err = TemplateFile::from_text("c.json", config).unwrap().compile().unwrap_err();
        assert!(err.contains("c.json#chat_template") && err.contains(":3"), "{err}");
    }

    #[test]
    fn jinja_files_are_source_and_tokens_override() {
        let file = TemplateFile::from_text("t.jinja", "{{ eos_token }}").unwrap();
        assert_eq!(file.source, "{{ eos_token }}");
        let file = file.with_tokens(&SpecialTokens { bos_token: String::new(), eos_token: "</s>".into() });
        assert_eq!(file.special.eos_token, "</s>");
        assert_eq!(file.compile().unwrap().special_tokens().eos_token, "</s>");
    }

    #[test]
    fn special_tokens_file() {
        let map = parse_special_tokens("m.json", r#"{"a.jinja": {"eos_token": "</s>"}}"#).unwrap();
        assert_eq!(map["a.jinja"].eos_token, "</s>");
        assert!(parse_special_tokens("m.json", r#"{"a.jinja": "</s>"}"#).is_err());
    }
}
