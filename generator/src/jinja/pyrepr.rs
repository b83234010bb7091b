//! Python's `str()` and `repr()` of template values.
//!
//! jinja2 prints values with Python's `str()`: `{{ true }}` is `True`, `{{ none }}` is
//! `None`, `{{ 1.0 }}` is `1.0` and a dict prints as `{'a': 1}`. Templates reach this
//! through `{{ ... }}`, `|string` and `|join`, and some of them put that text into the
//! prompt (Apriel prints each tool with `{{ tool|string }}`; Qwen3-Coder prints scalar
//! tool-call arguments with `|string`, so a boolean argument must come out as `True`).
//! minijinja's own `Display` follows JSON/Rust conventions instead, so the module's
//! formatter and filters go through these functions.

use std::fmt::Write;

use minijinja::value::{Value, ValueKind};

/// Containers nested deeper than this print as `[...]` / `{...}`, like Python prints a
/// list that contains itself; it keeps a pathological value from exhausting the stack.
const MAX_DEPTH: usize = 100;

/// Python's `str(value)`: strings unchanged, undefined as the empty string (jinja2's
/// `Undefined.__str__`), everything else as its `repr`.
pub(crate) fn py_str(value: &Value) -> String {
    if let Some(s) = value.as_str() {
        return s.to_owned();
    }
    let mut out = String::new();
    write_py_str(&mut out, value);
    out
}

/// Appends Python's `str(value)` to `out` (see [`py_str`]).
pub(crate) fn write_py_str(out: &mut String, value: &Value) {
    match value.kind() {
        ValueKind::String => out.push_str(value.as_str().unwrap_or_default()),
        ValueKind::Undefined => {}
        _ => write_repr(out, value, 0),
    }
}

fn write_repr(out: &mut String, value: &Value, depth: usize) {
    match value.kind() {
        ValueKind::Undefined => out.push_str("Undefined"),
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => write_number(out, value),
        ValueKind::String => write_str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Bytes => {
            out.push('b');
            let text = String::from_utf8_lossy(value.as_bytes().unwrap_or_default()).into_owned();
            write_str_repr(out, &text);
        }
        ValueKind::Seq | ValueKind::Iterable => write_seq_repr(out, value, depth),
        ValueKind::Map => write_map_repr(out, value, depth),
        // Macros, the loop object and other engine objects have no Python twin worth
        // imitating; minijinja's own rendering is as good as any.
        _ => {
            let _ = write!(out, "{value}");
        }
    }
}

fn write_number(out: &mut String, value: &Value) {
    if value.is_integer() {
        let _ = write!(out, "{value}");
    } else {
        match f64::try_from(value.clone()) {
            Ok(f) => out.push_str(&float_repr(f)),
            Err(_) => {
                let _ = write!(out, "{value}");
            }
        }
    }
}

fn write_seq_repr(out: &mut String, value: &Value, depth: usize) {
    let (open, close) = if value.is_tuple() {
        ("(", ")")
    } else {
        ("[", "]")
    };
    if depth >= MAX_DEPTH {
        out.push_str(open);
        out.push_str("...");
        out.push_str(close);
        return;
    }
    out.push_str(open);
    let mut count = 0;
    if let Ok(iter) = value.try_iter() {
        for (idx, item) in iter.enumerate() {
            if idx > 0 {
                out.push_str(", ");
            }
            write_repr(out, &item, depth + 1);
            count += 1;
        }
    }
    if value.is_tuple() && count == 1 {
        out.push(',');
    }
    out.push_str(close);
}

fn write_map_repr(out: &mut String, value: &Value, depth: usize) {
    if depth >= MAX_DEPTH {
        out.push_str("{...}");
        return;
    }
    out.push('{');
    if let Some(pairs) = value.as_object().and_then(|obj| obj.try_iter_pairs()) {
        for (idx, (key, item)) in pairs.enumerate() {
            if idx > 0 {
                out.push_str(", ");
            }
            write_repr(out, &key, depth + 1);
            out.push_str(": ");
            write_repr(out, &item, depth + 1);
        }
    }
    out.push('}');
}

/// Python's `repr(str)`: single quotes unless the text contains `'` and no `"`,
/// backslash escapes for the quote, `\\`, `\n`, `\r`, `\t`, and `\x`/`\u`/`\U` escapes
/// for characters Python does not consider printable.
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let code = u32::from(c);
                let _ = if code < 0x100 {
                    write!(out, "\\x{code:02x}")
                } else if code < 0x10000 {
                    write!(out, "\\u{code:04x}")
                } else {
                    write!(out, "\\U{code:08x}")
                };
            }
        }
    }
    out.push(quote);
}

/// An approximation of Python's `str.isprintable` for one character: everything except
/// control characters (Cc), separators other than the ASCII space (Zs/Zl/Zp), the common
/// format characters (Cf), private-use characters (Co) and noncharacters. Unassigned code
/// points (Cn) are treated as printable because that needs the Unicode tables.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let code = u32::from(c);
    let format_char = matches!(
        code,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private_use = matches!(code, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let noncharacter = matches!(code, 0xFDD0..=0xFDEF) || code & 0xFFFE == 0xFFFE;
    !(format_char || private_use || noncharacter)
}

/// Python's `repr(float)`: the shortest text that round-trips, with a `.0` on integral
/// values and scientific notation (`1e+16`, `1e-05`) outside `1e-4 <= |x| < 1e16`.
pub(crate) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // `{:e}` gives the shortest round-trip digits as `d.ddde<exp>`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    // Position of the decimal point relative to the start of `digits`.
    let point = exponent + 1;
    if !(-4 < point && point <= 16) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let sign = if exponent < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exponent.unsigned_abs());
    } else if point <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat(point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let point = point as usize;
        if point >= digits.len() {
            out.push_str(&digits);
            out.push_str(&"0".repeat(point - digits.len()));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}
