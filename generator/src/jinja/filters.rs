//! Filters and tests whose minijinja built-ins differ from jinja2 in ways chat templates
//! can observe, plus `from_json`, which jinja2 lacks but llama.cpp-targeted templates use.

use minijinja::value::{Kwargs, Rest, Serde, Value, ValueKind, ValueOrKwargs};
use minijinja::{Error, ErrorKind, State};

use super::methods::py_strip;
use super::py_args::PyArgs;
use super::pyrepr::{py_str, write_py_str};

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// `|string`: Python's `str()`, so `true|string` is `True` and a dict prints as
/// `{'a': 1}` (minijinja would give `true` and `{"a": 1}`).
pub(crate) fn string(value: &Value) -> Value {
    if value.kind() == ValueKind::String {
        value.clone()
    } else {
        Value::from(py_str(value))
    }
}

/// `|length` / `|count`: Python's `len()`, except that undefined has length 0 as in
/// jinja2, and iterables without a known size are counted.
pub(crate) fn length(value: &Value) -> Result<usize, Error> {
    if value.is_undefined() {
        return Ok(0);
    }
    if let Some(len) = value.len() {
        return Ok(len);
    }
    match value.kind() {
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => Ok(value.try_iter()?.count()),
        kind => Err(invalid(format!("object of type '{kind}' has no len()"))),
    }
}

/// `|join(d="", attribute=None)`: items are converted with Python's `str()`.
pub(crate) fn join(value: &Value, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let mut args = PyArgs::new("join", args, 2)?;
    let d = args.next("d")?;
    let attribute = args.next("attribute")?;
    args.finish()?;
    let separator = d.map(|d| py_str(&d)).unwrap_or_default();
    let mut out = String::new();
    for (idx, item) in value.try_iter()?.enumerate() {
        if idx > 0 {
            out.push_str(&separator);
        }
        match &attribute {
            Some(path) => write_py_str(&mut out, &lookup_path(&item, path)),
            None => write_py_str(&mut out, &item),
        }
    }
    Ok(Value::from(out))
}

/// jinja2's `make_attrgetter`: a dotted path whose integer parts index sequences.
fn lookup_path(item: &Value, path: &Value) -> Value {
    let Some(path) = path.as_str() else {
        return item.get_item(path).unwrap_or_default();
    };
    let mut current = item.clone();
    for part in path.split('.') {
        let key = match part.parse::<i64>() {
            Ok(index) => Value::from(index),
            Err(_) => Value::from(part),
        };
        current = current.get_item(&key).unwrap_or_default();
    }
    current
}

/// `|trim(chars=None)`: Python's `str(value).strip(chars)`.
pub(crate) fn trim(value: &Value, chars: Option<Value>) -> Value {
    let text = py_str(value);
    let chars = chars.filter(|c| !c.is_none()).map(|c| py_str(&c));
    Value::from(py_strip(&text, chars.as_deref(), true, true))
}

/// `|replace(old, new, count=None)`: Python's `str.replace`, where a missing or
/// negative `count` replaces every occurrence.
pub(crate) fn replace(value: &Value, old: &Value, new: &Value, count: Option<i64>) -> Value {
    let (text, old, new) = (py_str(value), py_str(old), py_str(new));
    Value::from(match count.and_then(|n| usize::try_from(n).ok()) {
        Some(n) => text.replacen(&old, &new, n),
        None => text.replace(&old, &new),
    })
}

/// `|int(default=0, base=10)`: like minijinja's, but any value Python's `int()` and
/// `float()` both reject gives the default instead of an error.
pub(crate) fn int(
    state: &State,
    value: &Value,
    default: Option<Value>,
    base: Option<u32>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let fallback = match &default {
        Some(default) => Some(default.clone()),
        None => kwargs.peek::<Option<Value>>("default")?,
    };
    match minijinja::filters::int(state, value, default, base, kwargs) {
        Ok(rv) => Ok(rv),
        Err(err) if err.kind() == ErrorKind::InvalidOperation => {
            Ok(fallback.unwrap_or(Value::from(0)))
        }
        Err(err) => Err(err),
    }
}

/// `|indent(width=4, first=False, blank=False)` with jinja2's exact line handling: the
/// text is split with Python's `splitlines` (after appending a newline), rejoined with
/// `\n`, and `width` may be a string used as the indentation itself.
pub(crate) fn indent(value: &Value, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let mut args = PyArgs::new("indent", args, 3)?;
    let width = args.next("width")?;
    let first = args.next("first")?.is_some_and(|v| v.is_true());
    let blank = args.next("blank")?.is_some_and(|v| v.is_true());
    args.finish()?;

    let indention = match width {
        None => "    ".to_owned(),
        Some(width) => match width.as_str() {
            Some(s) => s.to_owned(),
            None => match width.as_i64() {
                Some(n) if n > 1024 => return Err(invalid("indent width is too large")),
                Some(n) => " ".repeat(usize::try_from(n).unwrap_or(0)),
                None => {
                    return Err(invalid(format!(
                        "indent width must be an int or a string, not {}",
                        width.kind()
                    )))
                }
            },
        },
    };

    let mut text = py_str(value);
    text.push('\n');
    let lines = py_splitlines(&text);
    let mut rv = if blank {
        lines.join(&format!("\n{indention}"))
    } else {
        let mut rv = String::new();
        for (idx, line) in lines.iter().enumerate() {
            if idx > 0 {
                rv.push('\n');
                if !line.is_empty() {
                    rv.push_str(&indention);
                }
            }
            rv.push_str(line);
        }
        rv
    };
    if first {
        rv.insert_str(0, &indention);
    }
    Ok(Value::from(rv))
}

/// Python's `str.splitlines()`: splits at `\n`, `\r`, `\r\n`, `\v`, `\f`, `\x1c`-`\x1e`,
/// `\x85`, U+2028 and U+2029, dropping the separators.
fn py_splitlines(s: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = s.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        lines.push(&s[start..at]);
        start = at + c.len_utf8();
        if c == '\r' && chars.peek().is_some_and(|&(_, next)| next == '\n') {
            chars.next();
            start += 1;
        }
    }
    if start < s.len() {
        lines.push(&s[start..]);
    }
    lines
}

/// `|from_json`: parses a JSON string into a value (llama.cpp's templates use it; HF's
/// jinja2 environment has no such filter).
pub(crate) fn from_json(value: &Value) -> Result<Value, Error> {
    let text = value
        .as_str()
        .ok_or_else(|| invalid(format!("from_json expects a string, not {}", value.kind())))?;
    let parsed: serde_json::Value = serde_json::from_str(text)
        .map_err(|err| invalid(format!("from_json: invalid JSON: {err}")))?;
    Ok(Value::from(Serde(parsed)))
}

/// `is sequence`: jinja2 asks whether `len()` and `[]` work, which is also true of
/// strings and dicts (minijinja's test only accepts lists).
pub(crate) fn is_sequence(value: &Value) -> bool {
    value.is_undefined()
        || matches!(
            value.kind(),
            ValueKind::Seq | ValueKind::String | ValueKind::Map
        )
}

/// `is iterable`: whether Python's `iter()` accepts the value. minijinja also iterates
/// `none` (as empty), which would let `tools is iterable and tools|length > 0` reach
/// `len(None)` when a caller passes `tools=None` as transformers does.
pub(crate) fn is_iterable(value: &Value) -> bool {
    value.is_undefined()
        || matches!(
            value.kind(),
            ValueKind::Seq | ValueKind::Map | ValueKind::Iterable | ValueKind::String
        )
}
