//! Python methods on strings, lists and dicts (`s.strip()`, `d.items()`, `l.index(x)`).
//!
//! minijinja-contrib's `pycompat` callback covers most of what templates call; this
//! callback adds what it lacks (`removeprefix`, `rsplit`, `index`, `partition`, `copy`,
//! ...), and replaces the ones whose details differ from Python in ways templates can
//! observe: `split` with an empty separator or keyword arguments, `strip` with Python's
//! whitespace set, and `find`/`count` with start/end arguments. Everything it does not
//! know falls through to `pycompat`.
//!
//! Mutating methods on lists and dicts that are not [`MutableList`]s fail with an error
//! that says why (minijinja values are immutable); the lists inside a `namespace()` are
//! mutable and implement those methods themselves.

use minijinja::value::{from_args, Kwargs, Tuple, Value, ValueKind};
use minijinja::{Error, ErrorKind, State};
use minijinja_contrib::pycompat;

use super::mutable_list::MutableList;

/// The environment's unknown-method callback.
pub(crate) fn call_method(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    let handled = match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args)?,
        ValueKind::Seq => seq_method(value, method, args)?,
        ValueKind::Map => map_method(value, method, args)?,
        _ => None,
    };
    match handled {
        Some(rv) => Ok(rv),
        None => pycompat::unknown_method_callback(state, value, method, args),
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, message.into())
}

/// Python's `str.isspace` set: Unicode whitespace plus the ASCII separators 0x1c-0x1f.
fn is_py_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.strip`/`lstrip`/`rstrip` with Python's argument handling: no argument or `None`
/// strips whitespace, a string strips any of its characters.
pub(crate) fn py_strip<'a>(s: &'a str, chars: Option<&str>, left: bool, right: bool) -> &'a str {
    let strip_char = |c: char| match chars {
        Some(chars) => chars.contains(c),
        None => is_py_whitespace(c),
    };
    let s = if left {
        s.trim_start_matches(strip_char)
    } else {
        s
    };
    if right {
        s.trim_end_matches(strip_char)
    } else {
        s
    }
}

fn string_method(s: &str, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let rv = match method {
        "strip" | "lstrip" | "rstrip" => {
            let (chars,): (Option<&str>,) = from_args(args)?;
            let left = method != "rstrip";
            let right = method != "lstrip";
            Value::from(py_strip(s, chars, left, right))
        }
        "split" | "rsplit" => {
            let (sep, maxsplit, kwargs): (Option<Value>, Option<i64>, Kwargs) = from_args(args)?;
            let sep = match sep {
                Some(sep) => Some(sep),
                None => kwargs.get::<Option<Value>>("sep")?,
            };
            let maxsplit = match maxsplit {
                Some(n) => Some(n),
                None => kwargs.get::<Option<i64>>("maxsplit")?,
            };
            kwargs.assert_all_used()?;
            let sep = match sep.as_ref().filter(|v| !v.is_none()) {
                Some(sep) => Some(sep.as_str().ok_or_else(|| invalid("must be str or None"))?),
                None => None,
            };
            let maxsplit = maxsplit.and_then(|n| usize::try_from(n).ok());
            let parts = if method == "split" {
                py_split(s, sep, maxsplit)?
            } else {
                py_rsplit(s, sep, maxsplit)?
            };
            parts.into_iter().map(Value::from).collect()
        }
        "removeprefix" => {
            let (prefix,): (&str,) = from_args(args)?;
            Value::from(s.strip_prefix(prefix).unwrap_or(s))
        }
        "removesuffix" => {
            let (suffix,): (&str,) = from_args(args)?;
            Value::from(s.strip_suffix(suffix).unwrap_or(s))
        }
        "find" | "rfind" | "index" | "rindex" => {
            let (sub, start, end): (&str, Option<i64>, Option<i64>) = from_args(args)?;
            let from_right = method.starts_with('r');
            match find_in_window(s, sub, start, end, from_right) {
                Some(idx) => Value::from(idx),
                None if method.ends_with("find") => Value::from(-1),
                None => return Err(invalid("substring not found")),
            }
        }
        "count" => {
            let (sub, start, end): (&str, Option<i64>, Option<i64>) = from_args(args)?;
            let (from, to) = char_window(s, start, end);
            let window = &s[from..to];
            Value::from(window.matches(sub).count())
        }
        "partition" | "rpartition" => {
            let (sep,): (&str,) = from_args(args)?;
            if sep.is_empty() {
                return Err(invalid("empty separator"));
            }
            let found = if method == "partition" {
                s.find(sep)
            } else {
                s.rfind(sep)
            };
            let parts = match found {
                Some(at) => [&s[..at], sep, &s[at + sep.len()..]],
                None if method == "partition" => [s, "", ""],
                None => ["", "", s],
            };
            Value::from(Tuple::from(parts.map(Value::from)))
        }
        "zfill" => {
            let (width,): (i64,) = from_args(args)?;
            let missing = pad_width(width)?.saturating_sub(s.chars().count());
            let (sign, digits) = match s.chars().next() {
                Some(c @ ('+' | '-')) => (c.to_string(), &s[1..]),
                _ => (String::new(), s),
            };
            Value::from(format!("{sign}{}{digits}", "0".repeat(missing)))
        }
        "center" | "ljust" | "rjust" => {
            let (width, fill): (i64, Option<&str>) = from_args(args)?;
            let fill = match fill {
                None => ' ',
                Some(fill) => {
                    let mut chars = fill.chars();
                    match (chars.next(), chars.next()) {
                        (Some(c), None) => c,
                        _ => {
                            return Err(invalid(
                                "The fill character must be exactly one character long",
                            ))
                        }
                    }
                }
            };
            let missing = pad_width(width)?.saturating_sub(s.chars().count());
            let left = match method {
                "ljust" => 0,
                "rjust" => missing,
                // Python puts the odd extra character on the left when the width is odd.
                _ => missing / 2 + (missing & width as usize & 1),
            };
            let pad = |n: usize| fill.to_string().repeat(n);
            Value::from(format!("{}{s}{}", pad(left), pad(missing - left)))
        }
        "casefold" => {
            let () = from_args(args)?;
            Value::from(s.to_lowercase())
        }
        "swapcase" => {
            let () = from_args(args)?;
            let swapped: String = s
                .chars()
                .flat_map(|c| -> Box<dyn Iterator<Item = char>> {
                    if c.is_uppercase() {
                        Box::new(c.to_lowercase())
                    } else if c.is_lowercase() {
                        Box::new(c.to_uppercase())
                    } else {
                        Box::new(std::iter::once(c))
                    }
                })
                .collect();
            Value::from(swapped)
        }
        _ => return Ok(None),
    };
    Ok(Some(rv))
}

/// Guards the padding methods against widths no prompt needs.
fn pad_width(width: i64) -> Result<usize, Error> {
    match usize::try_from(width) {
        Ok(w) if w > 1 << 20 => Err(invalid("padding width is too large")),
        Ok(w) => Ok(w),
        Err(_) => Ok(0),
    }
}

/// `str.split(sep, maxsplit)`: with `sep=None`, runs of whitespace separate and leading
/// or trailing whitespace yields no empty strings; an empty `sep` is an error.
fn py_split<'a>(
    s: &'a str,
    sep: Option<&str>,
    maxsplit: Option<usize>,
) -> Result<Vec<&'a str>, Error> {
    match sep {
        Some("") => Err(invalid("empty separator")),
        Some(sep) => Ok(match maxsplit {
            Some(n) => s.splitn(n.saturating_add(1), sep).collect(),
            None => s.split(sep).collect(),
        }),
        None => {
            let mut parts = Vec::new();
            let mut rest = py_strip(s, None, true, false);
            while !rest.is_empty() {
                if maxsplit.is_some_and(|n| parts.len() >= n) {
                    parts.push(rest);
                    break;
                }
                let end = rest.find(is_py_whitespace).unwrap_or(rest.len());
                parts.push(&rest[..end]);
                rest = py_strip(&rest[end..], None, true, false);
            }
            Ok(parts)
        }
    }
}

/// `str.rsplit(sep, maxsplit)`: like [`py_split`] but the splits are taken from the right.
fn py_rsplit<'a>(
    s: &'a str,
    sep: Option<&str>,
    maxsplit: Option<usize>,
) -> Result<Vec<&'a str>, Error> {
    let Some(n) = maxsplit else {
        return py_split(s, sep, None);
    };
    let mut parts = match sep {
        Some("") => return Err(invalid("empty separator")),
        Some(sep) => s.rsplitn(n.saturating_add(1), sep).collect::<Vec<_>>(),
        None => {
            let mut parts = Vec::new();
            let mut rest = py_strip(s, None, false, true);
            while !rest.is_empty() {
                if parts.len() >= n {
                    parts.push(rest);
                    break;
                }
                let start = rest
                    .char_indices()
                    .rev()
                    .find(|&(_, c)| is_py_whitespace(c))
                    .map_or(0, |(at, c)| at + c.len_utf8());
                parts.push(&rest[start..]);
                rest = py_strip(&rest[..start], None, false, true);
            }
            parts
        }
    };
    parts.reverse();
    Ok(parts)
}

/// Byte range of the Python slice `s[start:end]`, where the bounds count characters.
fn char_window(s: &str, start: Option<i64>, end: Option<i64>) -> (usize, usize) {
    let len = s.chars().count();
    let resolve = |bound: i64| -> usize {
        let len_i = i64::try_from(len).unwrap_or(i64::MAX);
        let at = if bound < 0 {
            (len_i + bound).max(0)
        } else {
            bound.min(len_i)
        };
        usize::try_from(at).unwrap_or(len)
    };
    let from = start.map_or(0, resolve);
    let to = end.map_or(len, resolve).max(from);
    let byte_at = |chars: usize| s.char_indices().nth(chars).map_or(s.len(), |(at, _)| at);
    (byte_at(from), byte_at(to))
}

/// Character index of `sub` within `s[start:end]`, searching from the left or right.
fn find_in_window(
    s: &str,
    sub: &str,
    start: Option<i64>,
    end: Option<i64>,
    from_right: bool,
) -> Option<usize> {
    let (from, to) = char_window(s, start, end);
    let window = &s[from..to];
    let found = if from_right {
        window.rfind(sub)
    } else {
        window.find(sub)
    }?;
    Some(s[..from + found].chars().count())
}

fn seq_method(value: &Value, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let rv = match method {
        "index" => {
            let (needle, start, end): (Value, Option<i64>, Option<i64>) = from_args(args)?;
            let items: Vec<Value> = value.try_iter()?.collect();
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
            let clamp = |bound: i64| {
                if bound < 0 {
                    (len + bound).max(0)
                } else {
                    bound.min(len)
                }
            };
            let from = usize::try_from(start.map_or(0, clamp)).unwrap_or(0);
            let to = usize::try_from(end.map_or(len, clamp)).unwrap_or(0);
            let found = items
                .get(from..to.max(from))
                .and_then(|window| window.iter().position(|item| *item == needle));
            match found {
                Some(at) => Value::from(from + at),
                None => return Err(invalid(format!("{needle} is not in list"))),
            }
        }
        "copy" => {
            let () = from_args(args)?;
            MutableList::new_value(value.try_iter()?.collect())
        }
        "append" | "extend" | "insert" | "pop" | "remove" | "clear" | "reverse" | "sort" => {
            return Err(invalid(format!(
                "list.{method}() needs a mutable list: only lists held by a namespace() can be \
                 changed in place (template values are immutable)"
            )));
        }
        _ => return Ok(None),
    };
    Ok(Some(rv))
}

fn map_method(value: &Value, method: &str, args: &[Value]) -> Result<Option<Value>, Error> {
    let rv = match method {
        "copy" => {
            let () = from_args(args)?;
            let pairs = value
                .as_object()
                .and_then(|obj| obj.try_iter_pairs())
                .into_iter()
                .flatten();
            Value::from_pairs(pairs)
        }
        "pop" | "popitem" | "update" | "setdefault" | "clear" => {
            return Err(invalid(format!(
                "dict.{method}() is not supported: template values are immutable"
            )));
        }
        _ => return Ok(None),
    };
    Ok(Some(rv))
}
