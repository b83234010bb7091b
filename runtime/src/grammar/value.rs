//! A minimal JSON value for schemas given at run time.
//!
//! The runtime takes JSON schemas (tool parameters, response formats) as text
//! and has no JSON library, so this is the smallest value type the schema
//! converter needs: numbers keep the text they were written as (a schema's
//! `const: 1.0` stays `1.0`), and objects keep their key order (properties
//! are matched in declared order).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// The deepest nesting of arrays and objects [`Value::parse`] accepts; deeper
/// input is an error rather than a stack overflow.
pub const MAX_DEPTH: usize = 128;

/// A JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Bool(bool),
    /// The number's text as written (valid JSON number syntax).
    Number(String),
    String(String),
    Array(Vec<Value>),
    /// Members in the order written; duplicate keys are kept.
    Object(Vec<(String, Value)>),
}

/// Why a text is not one JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueError {
    /// Byte offset of the problem in the input.
    pub offset: usize,
    /// What was wrong there.
    pub kind: ValueErrorKind,
}

/// The kind of a [`ValueError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueErrorKind {
    /// A character that cannot start or continue a value here.
    Unexpected,
    /// The text ended inside a value.
    Eof,
    /// A bad `\` escape or lone surrogate in a string.
    Escape,
    /// A raw control character in a string.
    ControlChar,
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// More text after the value.
    Trailing,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ValueErrorKind::Unexpected => "unexpected character",
            ValueErrorKind::Eof => "unexpected end of text",
            ValueErrorKind::Escape => "invalid escape in string",
            ValueErrorKind::ControlChar => "control character in string",
            ValueErrorKind::TooDeep => "nested too deeply",
            ValueErrorKind::Trailing => "text after the value",
        };
        write!(f, "invalid JSON at byte {}: {what}", self.offset)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ValueError {}

impl Value {
    /// Parses one JSON value (strict JSON; whitespace around it allowed).
    ///
    /// # Example
    /// ```
    /// use chat_parser_runtime::grammar::value::Value;
    /// let v = Value::parse(r#"{"type": "integer", "minimum": 1.5e1, "tags": ["a"]}"#).unwrap();
    /// assert_eq!(v.get("type").and_then(Value::as_str), Some("integer"));
    /// assert_eq!(v.get("minimum").and_then(Value::as_f64), Some(15.0));
    /// assert_eq!(v.to_string(), r#"{"type":"integer","minimum":1.5e1,"tags":["a"]}"#);
    /// assert!(Value::parse("[1,]").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Value, ValueError> {
        let mut p = Parser { s: text.as_bytes(), at: 0 };
        p.ws();
        let v = p.value(0)?;
        p.ws();
        if p.at < p.s.len() {
            return Err(p.err(ValueErrorKind::Trailing));
        }
        Ok(v)
    }

    /// The value of the first member named `key`, if this is an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as a float (the nearest one; huge exponents give infinity).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.parse().ok(),
            _ => None,
        }
    }

    /// The number as an integer, if it is one that fits (`3`, also `3.0` and
    /// `3e2`, as JSON schema counts them as integers).
    pub fn as_i64(&self) -> Option<i64> {
        let Value::Number(n) = self else { return None };
        if let Ok(i) = n.parse::<i64>() {
            return Some(i);
        }
        let f: f64 = n.parse().ok()?;
        // -2^63 and 2^63 are exact as f64; the integers in between fit.
        let limit = -(i64::MIN as f64);
        let i = f as i64;
        ((-limit..limit).contains(&f) && i as f64 == f).then_some(i)
    }

    /// The name of the JSON type (`"integer"` for numbers written without
    /// fraction or exponent), as in a schema's `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.bytes().all(|b| b == b'-' || b.is_ascii_digit()) => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
}

/// Compact JSON (no spaces); strings escape `"`, `\` and control characters.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("null"),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Number(n) => f.write_str(n),
            Value::String(s) => write_json_string(f, s),
            Value::Array(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Object(members) => {
                f.write_str("{")?;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write_json_string(f, k)?;
                    write!(f, ":{v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

/// `s` as a JSON string literal.
pub(crate) fn write_json_string(out: &mut impl fmt::Write, s: &str) -> fmt::Result {
    out.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => out.write_str("\\\"")?,
            '\\' => out.write_str("\\\\")?,
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            '\u{8}' => out.write_str("\\b")?,
            '\u{c}' => out.write_str("\\f")?,
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32)?,
            c => out.write_char(c)?,
        }
    }
    out.write_char('"')
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err(&self, kind: ValueErrorKind) -> ValueError {
        let kind = if self.at >= self.s.len() && kind == ValueErrorKind::Unexpected { ValueErrorKind::Eof } else { kind };
        ValueError { offset: self.at, kind }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn word(&mut self, w: &[u8], v: Value) -> Result<Value, ValueError> {
        if self.s[self.at..].starts_with(w) {
            self.at += w.len();
            Ok(v)
        } else {
            Err(self.err(ValueErrorKind::Unexpected))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ValueError> {
        match self.peek() {
            Some(b'n') => self.word(b"null", Value::Null),
            Some(b't') => self.word(b"true", Value::Bool(true)),
            Some(b'f') => self.word(b"false", Value::Bool(false)),
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(open @ (b'[' | b'{')) => {
                if depth >= MAX_DEPTH {
                    return Err(self.err(ValueErrorKind::TooDeep));
                }
                self.at += 1;
                self.container(open, depth + 1)
            }
            _ => Err(self.err(ValueErrorKind::Unexpected)),
        }
    }

    /// The rest of an array or object after its opening bracket.
    fn container(&mut self, open: u8, depth: usize) -> Result<Value, ValueError> {
        let close = if open == b'[' { b']' } else { b'}' };
        let mut items = Vec::new();
        let mut members = Vec::new();
        self.ws();
        if !self.eat(close) {
            loop {
                self.ws();
                if open == b'{' {
                    if self.peek() != Some(b'"') {
                        return Err(self.err(ValueErrorKind::Unexpected));
                    }
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b':') {
                        return Err(self.err(ValueErrorKind::Unexpected));
                    }
                    self.ws();
                    members.push((key, self.value(depth)?));
                } else {
                    items.push(self.value(depth)?);
                }
                self.ws();
                if self.eat(close) {
                    break;
                }
                if !self.eat(b',') {
                    return Err(self.err(ValueErrorKind::Unexpected));
                }
            }
        }
        Ok(if open == b'[' { Value::Array(items) } else { Value::Object(members) })
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        self.at - start
    }

    fn number(&mut self) -> Result<Value, ValueError> {
        let start = self.at;
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => self.at += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err(ValueErrorKind::Unexpected)),
        }
        if self.eat(b'.') && self.digits() == 0 {
            return Err(self.err(ValueErrorKind::Unexpected));
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(self.err(ValueErrorKind::Unexpected));
            }
        }
        // Only ASCII was consumed, so this slice is on char boundaries.
        let text = core::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.err(ValueErrorKind::Unexpected))?;
        Ok(Value::Number(text.into()))
    }

    fn hex4(&mut self) -> Result<u32, ValueError> {
        let mut n = 0;
        for _ in 0..4 {
            let d = self.peek().and_then(|b| (b as char).to_digit(16)).ok_or_else(|| self.err(ValueErrorKind::Escape))?;
            n = n * 16 + d;
            self.at += 1;
        }
        Ok(n)
    }

    /// A string, the opening quote at the current position.
    fn string(&mut self) -> Result<String, ValueError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            // Copy the run of plain bytes at once; the input is a &str, and
            // runs end at ASCII bytes, so they are whole UTF-8 sequences.
            let start = self.at;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            out.push_str(core::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.err(ValueErrorKind::Unexpected))?);
            match self.peek() {
                None => return Err(self.err(ValueErrorKind::Eof)),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.at += 1;
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                // A high surrogate must be followed by a low one.
                                if !(self.eat(b'\\') && self.eat(b'u')) {
                                    return Err(self.err(ValueErrorKind::Escape));
                                }
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(self.err(ValueErrorKind::Escape));
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            out.push(char::from_u32(code).ok_or_else(|| self.err(ValueErrorKind::Escape))?);
                            continue;
                        }
                        _ => return Err(self.err(ValueErrorKind::Escape)),
                    };
                    self.at += 1;
                    out.push(c);
                }
                Some(_) => return Err(self.err(ValueErrorKind::ControlChar)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn parses_and_round_trips() {
        for text in ["null", "true", "-0.5e+3", r#""a\"b\\c\n\u0001é""#, r#"{"b":1,"a":[true,false,null,{}],"c":[]}"#, "[[[]]]"] {
            let v = Value::parse(text).unwrap();
            assert_eq!(Value::parse(&v.to_string()).unwrap(), v, "{text}");
        }
        assert_eq!(Value::parse(r#" "\ud83d\ude00\/" "#).unwrap(), Value::String("😀/".into()));
        let v = Value::parse(r#"{"k": [1, 2.0, 3e2, 1.5]}"#).unwrap();
        let ints: Vec<_> = v.get("k").unwrap().as_array().unwrap().iter().map(Value::as_i64).collect();
        assert_eq!(ints, vec![Some(1), Some(2), Some(300), None]);
        assert_eq!(Value::parse("1e999").unwrap().as_i64(), None);
    }

    #[test]
    fn rejects_bad_json_without_panicking() {
        for bad in [
            "",
            "[",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "[1,]",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"a\nb\"",
            "\"abc",
            "{'a':1}",
            "1 2",
            "[1 2]",
            "{\"a\":1,}",
            "\"\\u12\"",
        ] {
            assert!(Value::parse(bad).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(100_000);
        assert_eq!(Value::parse(&deep).unwrap_err().kind, ValueErrorKind::TooDeep);
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(Value::parse(&ok).is_ok());
        assert_eq!(Value::parse("[1,]").unwrap_err().to_string(), "invalid JSON at byte 3: unexpected character");
    }
}
