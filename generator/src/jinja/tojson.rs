//! The `tojson` filter as HF transformers defines it.
//!
//! transformers replaces jinja2's `tojson` (which HTML-escapes `<`, `>`, `&` and `'`) with
//! `json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
//! sort_keys=sort_keys)`, and templates put its output straight into the prompt. The
//! layout therefore has to be Python's byte for byte: `", "` and `": "` separators by
//! default, `","` after items when `indent` is given, `1.0` for floats, non-ASCII kept
//! as is, and control characters escaped.

use std::fmt::Write;

use minijinja::value::{Rest, Value, ValueKind, ValueOrKwargs};
use minijinja::{Error, ErrorKind};

use super::py_args::PyArgs;
use super::pyrepr::float_repr;

/// Deeper values are reported as circular, like Python's "Circular reference detected";
/// it also bounds the recursion of the serializer.
const MAX_DEPTH: usize = 128;

/// `json.dumps` options, with Python's defaults resolved.
struct JsonOptions {
    ensure_ascii: bool,
    /// `None`: everything on one line. `Some(unit)`: a newline before each item, indented
    /// by `unit` once per nesting level.
    indent: Option<String>,
    item_separator: String,
    key_separator: String,
    sort_keys: bool,
}

/// `value|tojson(ensure_ascii=False, indent=None, separators=None, sort_keys=False)`.
///
/// The parameters may be passed positionally in this order, as in Python (so
/// `tojson(2)` sets `ensure_ascii`, not `indent`, exactly as it does under transformers).
pub(crate) fn tojson(value: &Value, args: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let mut args = PyArgs::new("tojson", args, 4)?;
    let ensure_ascii = args.next("ensure_ascii")?;
    let indent = args.next("indent")?;
    let separators = args.next("separators")?;
    let sort_keys = args.next("sort_keys")?;
    args.finish()?;

    let indent = indent_unit(indent)?;
    let (item_separator, key_separator) = match separators.filter(|s| !s.is_none()) {
        Some(pair) => separator_pair(&pair)?,
        None if indent.is_some() => (",".to_owned(), ": ".to_owned()),
        None => (", ".to_owned(), ": ".to_owned()),
    };
    let options = JsonOptions {
        ensure_ascii: ensure_ascii.is_some_and(|v| v.is_true()),
        indent,
        item_separator,
        key_separator,
        sort_keys: sort_keys.is_some_and(|v| v.is_true()),
    };
    Ok(Value::from(to_json_string(value, &options)?))
}

/// Python accepts an int (that many spaces; negative means none) or a string.
fn indent_unit(indent: Option<Value>) -> Result<Option<String>, Error> {
    let Some(indent) = indent.filter(|v| !v.is_none() && !v.is_undefined()) else {
        return Ok(None);
    };
    if let Some(s) = indent.as_str() {
        return Ok(Some(s.to_owned()));
    }
    if indent.kind() == ValueKind::Bool {
        return Ok(Some(if indent.is_true() { " " } else { "" }.to_owned()));
    }
    match indent.as_i64() {
        // More than this many spaces per level cannot be meant; refuse rather than
        // allocate without bound.
        Some(n) if n > 1024 => Err(Error::new(
            ErrorKind::InvalidOperation,
            "tojson indent is too large",
        )),
        Some(n) => Ok(Some(" ".repeat(usize::try_from(n).unwrap_or(0)))),
        None => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "tojson indent must be an int or a string, not {}",
                indent.kind()
            ),
        )),
    }
}

fn separator_pair(pair: &Value) -> Result<(String, String), Error> {
    let invalid = || {
        Error::new(
            ErrorKind::InvalidOperation,
            "tojson separators must be a pair of strings",
        )
    };
    let items: Vec<Value> = pair.try_iter().map_err(|_| invalid())?.collect();
    match items.as_slice() {
        [item, key] => match (item.as_str(), key.as_str()) {
            (Some(item), Some(key)) => Ok((item.to_owned(), key.to_owned())),
            _ => Err(invalid()),
        },
        _ => Err(invalid()),
    }
}

fn to_json_string(value: &Value, options: &JsonOptions) -> Result<String, Error> {
    let mut out = String::new();
    write_value(&mut out, value, options, 0)?;
    Ok(out)
}

fn not_serializable(value: &Value) -> Error {
    let type_name = match value.kind() {
        ValueKind::Undefined => "Undefined".to_owned(),
        kind => kind.to_string(),
    };
    Error::new(
        ErrorKind::InvalidOperation,
        format!("Object of type {type_name} is not JSON serializable"),
    )
}

fn write_value(
    out: &mut String,
    value: &Value,
    options: &JsonOptions,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "Circular reference detected",
        ));
    }
    match value.kind() {
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => write_number(out, value),
        ValueKind::String => write_string(
            out,
            value.as_str().unwrap_or_default(),
            options.ensure_ascii,
        ),
        // Python refuses generators and `dict.items()` views, but minijinja uses
        // iterables where Python has lists too (for example the result of `|map`), so
        // they are serialized as arrays.
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            write_container(out, '[', ']', &items, options, depth, |out, item| {
                write_value(out, item, options, depth + 1)
            })?;
        }
        ValueKind::Map => {
            let mut pairs: Vec<(Value, Value)> = value
                .as_object()
                .and_then(|obj| obj.try_iter_pairs())
                .into_iter()
                .flatten()
                .collect();
            if options.sort_keys {
                // Python sorts the original keys (numbers numerically), then converts.
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
            }
            let pairs: Vec<(String, Value)> = pairs
                .into_iter()
                .map(|(key, item)| Ok((key_string(&key)?, item)))
                .collect::<Result<_, Error>>()?;
            write_container(out, '{', '}', &pairs, options, depth, |out, (key, item)| {
                write_string(out, key, options.ensure_ascii);
                out.push_str(&options.key_separator);
                write_value(out, item, options, depth + 1)
            })?;
        }
        _ => return Err(not_serializable(value)),
    }
    Ok(())
}

/// Writes `[a, b]` / `{...}` with Python's separators and indentation; empty containers
/// stay `[]` and `{}` even when indenting.
fn write_container<T>(
    out: &mut String,
    open: char,
    close: char,
    items: &[T],
    options: &JsonOptions,
    depth: usize,
    mut write_item: impl FnMut(&mut String, &T) -> Result<(), Error>,
) -> Result<(), Error> {
    out.push(open);
    if items.is_empty() {
        out.push(close);
        return Ok(());
    }
    for (idx, item) in items.iter().enumerate() {
        if idx > 0 {
            out.push_str(&options.item_separator);
        }
        if let Some(unit) = &options.indent {
            push_newline_indent(out, unit, depth + 1);
        }
        write_item(out, item)?;
    }
    if let Some(unit) = &options.indent {
        push_newline_indent(out, unit, depth);
    }
    out.push(close);
    Ok(())
}

fn push_newline_indent(out: &mut String, unit: &str, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str(unit);
    }
}

/// Python converts `str`, `int`, `float`, `bool` and `None` keys to strings and rejects
/// anything else.
fn key_string(key: &Value) -> Result<String, Error> {
    match key.kind() {
        ValueKind::String => Ok(key.as_str().unwrap_or_default().to_owned()),
        ValueKind::None => Ok("null".to_owned()),
        ValueKind::Bool => Ok(if key.is_true() { "true" } else { "false" }.to_owned()),
        ValueKind::Number => {
            let mut out = String::new();
            write_number(&mut out, key);
            Ok(out)
        }
        kind => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("keys must be str, int, float, bool or None, not {kind}"),
        )),
    }
}

fn write_number(out: &mut String, value: &Value) {
    if value.is_integer() {
        let _ = write!(out, "{value}");
        return;
    }
    match f64::try_from(value.clone()) {
        Ok(f) if f.is_nan() => out.push_str("NaN"),
        Ok(f) if f.is_infinite() => out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" }),
        Ok(f) => out.push_str(&float_repr(f)),
        Err(_) => {
            let _ = write!(out, "{value}");
        }
    }
}

/// A JSON string literal the way Python's encoder writes it: `\"`, `\\`, `\n`, `\r`, `\t`,
/// `\b`, `\f`, other control characters as `\u00XX`; with `ensure_ascii` everything
/// outside printable ASCII as `\uXXXX` (UTF-16 surrogate pairs above the BMP).
fn write_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if c < ' ' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if ensure_ascii && !(' '..='~').contains(&c) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
