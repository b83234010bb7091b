//! The minijinja environment configured like HF transformers' jinja2 environment.
//!
//! transformers compiles chat templates with
//! `ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
//! extensions=[AssistantTracker, loopcontrols])`, replaces `tojson`, and adds the globals
//! `raise_exception` and `strftime_now`. This module reproduces that, plus the pieces of
//! Python semantics that minijinja does not share (see the sibling modules).

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Output, State, UndefinedBehavior};

use super::error::RaisedByTemplate;
use super::{filters, methods, mutable_list, pyrepr, time, tojson};

/// Instruction budget of one render. The heaviest corpus template (GigaChat3.5, which
/// walks JSON schemas with recursive macros) executes about 6,300 instructions for an
/// eleven-message conversation with two tools, so this leaves ~800x headroom for long
/// conversations, while a runaway loop burns through it in about 0.2 s.
pub(crate) const FUEL: u64 = 5_000_000;

/// Builds the environment; templates are added by the caller.
pub(crate) fn build() -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    // jinja2 defaults apart from the two HF turns on: a single trailing newline of the
    // template is dropped (keep_trailing_newline=False).
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(false)
            .build()?,
    );
    // Chat templates produce prompts, never HTML, whatever their file name says.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    // jinja2's default `Undefined`: printing and iterating an undefined value give
    // nothing, `is defined` works, but looking up an attribute or item of an undefined
    // value fails. minijinja's `Lenient` is exactly that. `Chainable` would make
    // `message.foo.bar` silently empty where jinja2 raises: on the corpus (60 templates x
    // 9 conversations) it turns one render that fails under Python (Devstral indexing a
    // `None` content) into a success and changes nothing else.
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_fuel(Some(FUEL));
    // Debug mode only adds source dumps to errors; we report file and line ourselves.
    env.set_debug(false);
    env.set_formatter(format_value);
    env.set_unknown_method_callback(methods::call_method);

    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", time::strftime_now);
    env.add_function("namespace", mutable_list::namespace);

    env.add_filter("tojson", tojson::tojson);
    env.add_filter("from_json", filters::from_json);
    env.add_filter("string", filters::string);
    env.add_filter("length", filters::length);
    env.add_filter("count", filters::length);
    env.add_filter("join", filters::join);
    env.add_filter("trim", filters::trim);
    env.add_filter("replace", filters::replace);
    env.add_filter("int", filters::int);
    env.add_filter("indent", filters::indent);
    env.add_test("sequence", filters::is_sequence);
    env.add_test("iterable", filters::is_iterable);
    Ok(env)
}

/// `raise_exception(message)`: fails the render with the template's message, which
/// [`TemplateError`](super::TemplateError) reports as
/// [`Raised`](super::TemplateErrorKind::Raised).
fn raise_exception(message: Option<Value>) -> Result<Value, Error> {
    let message = message.map(|m| pyrepr::py_str(&m)).unwrap_or_default();
    Err(Error::new(ErrorKind::InvalidOperation, message.clone())
        .with_source(RaisedByTemplate(message)))
}

/// `{{ value }}` prints Python's `str(value)`: `True`, `None`, `1.0`, `{'a': 1}`.
fn format_value(out: &mut Output, _state: &mut State, value: &Value) -> Result<(), Error> {
    let written = match value.as_str() {
        Some(s) => out.write_str(s),
        None => out.write_str(&pyrepr::py_str(value)),
    };
    written.map_err(|_| Error::new(ErrorKind::WriteFailure, "could not write template output"))
}
