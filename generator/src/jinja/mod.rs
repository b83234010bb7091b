//! Rendering chat templates the way Python's jinja2 does under HF transformers.
//!
//! Chat templates are written for `transformers.apply_chat_template`, which renders them
//! with jinja2. The analysis needs the same bytes the model was trained on, so this
//! module wraps minijinja and closes the gaps that show up in real templates:
//!
//! * environment settings, `raise_exception`, `strftime_now` (pinned to 2026-01-01) and
//!   `{% generation %}` (`environment`, `time`, `generation_tag`);
//! * Python's printing of values: `{{ x }}`, `|string` and `|join` use `str()`, so
//!   `True`, `None`, `1.0`, `{'a': 1}` (`pyrepr`);
//! * transformers' `tojson`, i.e. `json.dumps` without HTML escaping (`tojson`);
//! * Python string/list/dict methods (`methods`) and namespaces whose lists can be
//!   appended to (`mutable_list`);
//! * filters and tests whose jinja2 behaviour differs from minijinja's (`filters`).
//!
//! Known differences from jinja2 (found by comparing with Python jinja2 3.1.6, set up
//! like transformers, on the 60 corpus templates with 9 conversations each):
//! * iterating `none` yields nothing where Python raises `TypeError` (so templates that
//!   do `{% for tool in tools %}` with `tools=None` render instead of failing);
//! * `"x"|safe + text` does not HTML-escape `text` (markupsafe's `Markup.__add__` does;
//!   functionary-v3.1 relies on it by accident);
//! * `tojson` serializes iterables such as `x|map(...)` where Python refuses a generator;
//! * `list.append` and friends work on namespace lists although transformers' sandbox
//!   forbids them (see `mutable_list`); only namespace lists are mutable;
//! * `~`, `str.format` and `'%s' % x` behave the minijinja way: `~` prints `true`/`none`
//!   and JSON-style containers, `%` on strings is an error;
//! * `{% do %}` is accepted (jinja2 needs an extension HF does not load).
//!
//! # Example
//! ```
//! use chat_parser_generator::jinja::ChatTemplate;
//! let source = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{{ tools[0] | tojson }}";
//! let tmpl = ChatTemplate::new("x.jinja", source).unwrap();
//! let ctx = serde_json::json!({"messages": [{"role": "user", "content": "<hi>"}], "tools": [{"name": "f", "ok": true}]});
//! // No HTML escaping, and `tojson` writes what Python's json.dumps writes.
//! assert_eq!(tmpl.render(&ctx).unwrap(), "<|user|><hi>\n{\"name\": \"f\", \"ok\": true}");
//! ```

mod environment;
mod error;
mod filters;
mod generation_tag;
mod methods;
mod mutable_list;
mod py_args;
mod pyrepr;
mod time;
mod tojson;

#[cfg(test)]
mod corpus_tests;
#[cfg(test)]
mod tests;

use minijinja::value::{Serde, Value};
use minijinja::Environment;

pub use error::{TemplateError, TemplateErrorKind};

/// The tokenizer's special tokens a template writes through variables
/// (`{{ bos_token }}`, `{{ eos_token }}`).
///
/// They belong to the model's tokenizer (HF's `tokenizer_config.json`), not
/// to the template, so a template alone does not show them: empty when
/// unknown. The Mistral family ends an assistant turn with `{{ eos_token }}`
/// only, so without the token the analysis cannot know that `</s>` ends a
/// reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    pub bos_token: String,
    pub eos_token: String,
}

/// A compiled chat template, ready to be rendered many times.
///
/// It owns its environment, so it is `Send + Sync` and can be shared between threads.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    name: String,
    source: String,
    special: SpecialTokens,
}

impl ChatTemplate {
    /// Compiles `source`; `name` is the file name used in diagnostics.
    pub fn new(name: &str, source: &str) -> Result<ChatTemplate, TemplateError> {
        let mut env =
            environment::build().map_err(|err| TemplateError::from_minijinja(name, &err))?;
        let compiled = generation_tag::rewrite_generation_tags(source).into_owned();
        env.add_template_owned(name.to_owned(), compiled)
            .map_err(|err| TemplateError::from_minijinja(name, &err))?;
        Ok(ChatTemplate {
            env,
            name: name.to_owned(),
            source: source.to_owned(),
            special: SpecialTokens::default(),
        })
    }

    /// The template with its tokenizer's special tokens, which the analysis
    /// renders as `bos_token` and `eos_token`.
    pub fn with_special_tokens(mut self, special: SpecialTokens) -> ChatTemplate {
        self.special = special;
        self
    }

    /// The special tokens given to [`ChatTemplate::with_special_tokens`]
    /// (empty by default).
    pub fn special_tokens(&self) -> &SpecialTokens {
        &self.special
    }

    /// Renders with `ctx`, a JSON object whose keys become the template's variables
    /// (`messages`, `tools`, `add_generation_prompt`, `bos_token`, `eos_token`,
    /// `enable_thinking`, ... anything `apply_chat_template` would pass).
    pub fn render(&self, ctx: &serde_json::Value) -> Result<String, TemplateError> {
        if !ctx.is_object() {
            return Err(TemplateError::new(
                &self.name,
                None,
                TemplateErrorKind::Render,
                "the render context must be a JSON object",
            ));
        }
        let template = self
            .env
            .get_template(&self.name)
            .map_err(|err| TemplateError::from_minijinja(&self.name, &err))?;
        template
            .render(Value::from(Serde(ctx)))
            .map_err(|err| TemplateError::from_minijinja(&self.name, &err))
    }

    /// The variables the template reads without setting them (what a
    /// request may pass: `messages`, `tools`, `enable_thinking`, ...).
    pub fn variables(&self) -> std::collections::BTreeSet<String> {
        match self.env.get_template(&self.name) {
            Ok(t) => t.undeclared_variables(false).into_iter().collect(),
            Err(_) => Default::default(),
        }
    }

    /// The name given to [`ChatTemplate::new`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The source as given to [`ChatTemplate::new`] (before any internal rewriting).
    pub fn source(&self) -> &str {
        &self.source
    }
}
