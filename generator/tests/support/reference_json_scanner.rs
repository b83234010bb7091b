//! The naive model of the runtime's JSON scanner: same semantics, written
//! for clarity (owned output, a `Vec` stack). Property tests in
//! `runtime_primitives.rs` check the allocation-free scanner the parsers use
//! against it.

/// Result of scanning the available text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// The value is complete.
    Done,
    /// The text ended inside the value.
    NeedMore,
    /// Not JSON: the byte at the consumed position is the first bad one.
    Invalid,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (the top level, after `:`, after `,` in an array).
    Value,
    /// A value or `]` (right after `[`).
    ValueOrClose,
    /// A key or `}` (right after `{`).
    KeyOrClose,
    /// A key (after `,` in an object).
    Key,
    /// `:` after a key.
    Colon,
    /// `,` or the container's close.
    CommaOrClose,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    None,
    /// Inside a string: its quote, whether a backslash is pending, how many
    /// hex digits of a `\u` escape remain, and whether it is an object key.
    Str { quote: u8, escape: bool, hex: u8, key: bool },
    /// Inside a number, at this point of its syntax.
    Number(Num),
    /// Inside a literal word: what it must spell, and how far we are.
    Word { word: &'static str, at: usize },
}

/// Where a number stands: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpDigits,
}

impl Num {
    fn next(self, b: u8) -> Option<Num> {
        use Num::*;
        Some(match (self, b) {
            (Minus, b'0') => Zero,
            (Minus, b'1'..=b'9') => Int,
            (Int, b'0'..=b'9') => Int,
            (Zero | Int, b'.') => Dot,
            (Dot | Frac, b'0'..=b'9') => Frac,
            (Zero | Int | Frac, b'e' | b'E') => Exp,
            (Exp, b'+' | b'-') => ExpSign,
            (Exp | ExpSign | ExpDigits, b'0'..=b'9') => ExpDigits,
            _ => return None,
        })
    }
    fn complete(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpDigits)
    }
}

/// Scans one JSON value incrementally.
#[derive(Debug, Clone)]
pub struct JsonScanner {
    python: bool,
    /// Only an object is acceptable (a call's arguments).
    object_only: bool,
    stack: Vec<Container>,
    expect: Expect,
    token: Token,
    done: bool,
    output: String,
    /// Arguments written as a JSON string holding the object: where its
    /// decoding stands (`None` when they are not).
    encoded: Option<Encoded>,
    /// Reading the decoded text of that string.
    decoding: bool,
}

/// Decoding the string that holds the arguments.
#[derive(Debug, Clone, Copy, Default)]
struct Encoded {
    /// A backslash was read.
    escape: bool,
    /// In a `\u` escape: the digits read and their value.
    hex: Option<(u8, u32)>,
}

impl JsonScanner {
    /// `python` also accepts `True`, `False`, `None` and single-quoted
    /// strings, and reports them as JSON.
    pub fn new(python: bool, object_only: bool) -> JsonScanner {
        JsonScanner { python, object_only, stack: Vec::new(), expect: Expect::Value, token: Token::None, done: false, output: String::new(), encoded: None, decoding: false }
    }

    /// The JSON text of what was consumed since the last call.
    pub fn take_output(&mut self) -> String {
        std::mem::take(&mut self.output)
    }

    /// Consumes as much of `text` as belongs to the value. Returns the number
    /// of bytes consumed and where the value stands. `last` says no more text
    /// will come.
    pub fn scan(&mut self, text: &str, last: bool) -> (usize, Scan) {
        if self.encoded.is_some() {
            return self.scan_encoded(text, last);
        }
        if self.done {
            return (0, Scan::Done);
        }
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.token.clone() {
                Token::Str { quote, escape, hex, key } => {
                    // Copy whole characters of the string.
                    let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
                    let n = c.len_utf8();
                    if hex > 0 {
                        if !c.is_ascii_hexdigit() {
                            return (i, Scan::Invalid);
                        }
                        self.output.push(c);
                        self.token = Token::Str { quote, escape: false, hex: hex - 1, key };
                    } else if escape {
                        let lead = if quote == b'"' { "" } else { "\\" };
                        match (c, quote) {
                            ('\'', b'\'') => self.output.push('\''),
                            ('\'', _) => return (i, Scan::Invalid),
                            ('u', _) => {
                                self.output.push_str(lead);
                                self.output.push('u');
                                self.token = Token::Str { quote, escape: false, hex: 4, key };
                                i += n;
                                continue;
                            }
                            ('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't', _) => {
                                self.output.push_str(lead);
                                self.output.push(c);
                            }
                            _ => {
                                // A Python string's held backslash is
                                // reported after all, as a JSON string's is.
                                self.output.push_str(lead);
                                return (i, Scan::Invalid);
                            }
                        }
                        self.token = Token::Str { quote, escape: false, hex: 0, key };
                    } else if c == '\\' {
                        // Reported at once (never lost if what follows is bad),
                        // except in Python strings where `\'` becomes `'`.
                        if quote == b'"' {
                            self.output.push('\\');
                        }
                        self.token = Token::Str { quote, escape: true, hex: 0, key };
                    } else if b == quote {
                        self.output.push('"');
                        self.token = Token::None;
                        self.after_value(key);
                        if self.done {
                            return (i + 1, Scan::Done);
                        }
                    } else if c == '"' {
                        // A double quote inside a single-quoted Python string.
                        self.output.push_str("\\\"");
                    } else if (c as u32) < 0x20 {
                        if quote == b'\'' {
                            self.output.push_str(&crate::interp::json_escape(&c.to_string()));
                        } else {
                            return (i, Scan::Invalid);
                        }
                    } else {
                        self.output.push(c);
                    }
                    i += n;
                    continue;
                }
                Token::Number(state) => {
                    if let Some(next) = state.next(b) {
                        self.output.push(b as char);
                        self.token = Token::Number(next);
                        i += 1;
                        continue;
                    }
                    if !state.complete() || b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-') {
                        return (i, Scan::Invalid);
                    }
                    self.token = Token::None;
                    self.after_value(false);
                    if self.done {
                        return (i, Scan::Done);
                    }
                    continue;
                }
                Token::Word { word, at } => {
                    if word.as_bytes().get(at) == Some(&b) {
                        // `None` and `null` have the same length, so a Python
                        // word maps onto its JSON word letter by letter.
                        self.output.push(json_word(word).as_bytes()[at] as char);
                        if at + 1 == word.len() {
                            self.token = Token::None;
                            self.after_value(false);
                            if self.done {
                                return (i + 1, Scan::Done);
                            }
                        } else {
                            self.token = Token::Word { word, at: at + 1 };
                        }
                        i += 1;
                        continue;
                    }
                    return (i, Scan::Invalid);
                }
                Token::None => {}
            }
            // Between tokens.
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.output.push(b as char);
                i += 1;
                continue;
            }
            match self.expect {
                Expect::Value | Expect::ValueOrClose => {
                    if b == b']' && self.expect == Expect::ValueOrClose {
                        self.close(']');
                    } else if b == b'"' && self.object_only && self.stack.is_empty() && !self.decoding {
                        // Arguments written as a string holding the object.
                        self.encoded = Some(Encoded::default());
                        let (n, r) = self.scan_encoded(&text[i + 1..], last);
                        return (i + 1 + n, r);
                    } else if !self.start_value(b) {
                        return (i, Scan::Invalid);
                    }
                }
                Expect::KeyOrClose | Expect::Key => {
                    if b == b'}' && self.expect == Expect::KeyOrClose {
                        self.close('}');
                    } else if b == b'"' || (self.python && b == b'\'') {
                        self.output.push('"');
                        self.token = Token::Str { quote: b, escape: false, hex: 0, key: true };
                    } else {
                        return (i, Scan::Invalid);
                    }
                }
                Expect::Colon => {
                    if b != b':' {
                        return (i, Scan::Invalid);
                    }
                    self.output.push(':');
                    self.expect = Expect::Value;
                }
                Expect::CommaOrClose => match (b, self.stack.last()) {
                    (b',', Some(Container::Object)) => {
                        self.output.push(',');
                        self.expect = Expect::Key;
                    }
                    (b',', Some(Container::Array)) => {
                        self.output.push(',');
                        self.expect = Expect::Value;
                    }
                    (b'}', Some(Container::Object)) => self.close('}'),
                    (b']', Some(Container::Array)) => self.close(']'),
                    _ => return (i, Scan::Invalid),
                },
            }
            i += 1;
            if self.done {
                return (i, Scan::Done);
            }
        }
        // The text ran out.
        if last && matches!(self.token, Token::Number(n) if n.complete()) && self.stack.is_empty() {
            self.token = Token::None;
            self.done = true;
            return (i, Scan::Done);
        }
        if last {
            if let Token::Str { quote: b'\'', escape: true, .. } = self.token {
                self.output.push('\\');
            }
            return (i, Scan::Invalid);
        }
        (i, Scan::NeedMore)
    }

    /// The string holding the arguments, after its opening quote: decoded
    /// one character at a time, each decoded character read as the
    /// object's text, up to the closing quote.
    fn scan_encoded(&mut self, text: &str, last: bool) -> (usize, Scan) {
        for (i, c) in text.char_indices() {
            let Some(mut enc) = self.encoded else { return (i, Scan::Done) };
            let decoded = if let Some((digits, code)) = enc.hex {
                let Some(d) = c.to_digit(16) else { return (i, Scan::Invalid) };
                let code = code << 4 | d;
                if digits < 3 {
                    enc.hex = Some((digits + 1, code));
                    None
                } else {
                    enc.hex = None;
                    match char::from_u32(code) {
                        Some(ch) => Some(ch),
                        None => return (i, Scan::Invalid),
                    }
                }
            } else if enc.escape {
                enc.escape = false;
                match c {
                    '"' | '\\' | '/' => Some(c),
                    'b' => Some('\u{8}'),
                    'f' => Some('\u{c}'),
                    'n' => Some('\n'),
                    'r' => Some('\r'),
                    't' => Some('\t'),
                    'u' => {
                        enc.hex = Some((0, 0));
                        None
                    }
                    _ => return (i, Scan::Invalid),
                }
            } else if c == '\\' {
                enc.escape = true;
                None
            } else if c == '"' {
                if !self.done {
                    return (i, Scan::Invalid);
                }
                self.encoded = None;
                return (i + 1, Scan::Done);
            } else {
                Some(c)
            };
            self.encoded = Some(enc);
            if let Some(ch) = decoded {
                if !self.read_decoded(ch) {
                    return (i, Scan::Invalid);
                }
            }
        }
        (text.len(), if last { Scan::Invalid } else { Scan::NeedMore })
    }

    /// One decoded character of the arguments' string: the object's text,
    /// then only whitespace.
    fn read_decoded(&mut self, ch: char) -> bool {
        if self.done {
            return matches!(ch, ' ' | '\t' | '\n' | '\r');
        }
        // (Read as plain JSON: a quote in the decoded text is the object's.)
        let enc = self.encoded.take();
        self.decoding = true;
        let (_, r) = self.scan(ch.encode_utf8(&mut [0u8; 4]), false);
        self.decoding = false;
        self.encoded = enc;
        r != Scan::Invalid
    }

    fn start_value(&mut self, b: u8) -> bool {
        if self.object_only && self.stack.is_empty() && b != b'{' {
            return false;
        }
        match b {
            b'{' => {
                self.output.push('{');
                self.stack.push(Container::Object);
                self.expect = Expect::KeyOrClose;
            }
            b'[' => {
                self.output.push('[');
                self.stack.push(Container::Array);
                self.expect = Expect::ValueOrClose;
            }
            b'"' => {
                self.output.push('"');
                self.token = Token::Str { quote: b'"', escape: false, hex: 0, key: false };
            }
            b'\'' if self.python => {
                self.output.push('"');
                self.token = Token::Str { quote: b'\'', escape: false, hex: 0, key: false };
            }
            b'-' => {
                self.output.push('-');
                self.token = Token::Number(Num::Minus);
            }
            b'0' => {
                self.output.push('0');
                self.token = Token::Number(Num::Zero);
            }
            b'1'..=b'9' => {
                self.output.push(b as char);
                self.token = Token::Number(Num::Int);
            }
            b't' | b'f' | b'n' => return self.start_word(b, false),
            b'T' | b'F' | b'N' if self.python => return self.start_word(b, true),
            _ => return false,
        }
        true
    }

    fn start_word(&mut self, b: u8, python: bool) -> bool {
        let word = match (b, python) {
            (b't', _) => "true",
            (b'f', _) => "false",
            (b'n', _) => "null",
            (b'T', _) => "True",
            (b'F', _) => "False",
            _ => "None",
        };
        self.output.push(json_word(word).as_bytes()[0] as char);
        self.token = Token::Word { word, at: 1 };
        true
    }

    fn close(&mut self, c: char) {
        self.output.push(c);
        self.stack.pop();
        self.after_value(false);
    }

    fn after_value(&mut self, was_key: bool) {
        if was_key {
            self.expect = Expect::Colon;
        } else if self.stack.is_empty() {
            self.done = true;
        } else {
            self.expect = Expect::CommaOrClose;
        }
    }
}

fn json_word(word: &str) -> &'static str {
    match word {
        "true" | "True" => "true",
        "false" | "False" => "false",
        _ => "null",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(text: &str, chunk: usize, python: bool) -> (String, Scan, usize) {
        let mut s = JsonScanner::new(python, false);
        let mut out = String::new();
        let mut pos = 0;
        let mut fed = 0;
        loop {
            fed = (fed + chunk).min(text.len());
            while !text.is_char_boundary(fed) {
                fed += 1;
            }
            let last = fed == text.len();
            let (n, r) = s.scan(&text[pos..fed], last);
            out.push_str(&s.take_output());
            pos += n;
            if r != Scan::NeedMore || last {
                return (out, r, pos);
            }
        }
    }

    #[test]
    fn finds_the_end_of_values_in_any_chunking() {
        for chunk in [1, 2, 3, 100] {
            let (out, r, n) = scan_all("{\"a\": [1, 2.5e3, \"x\\\"y\"], \"b\": {\"c\": null}} trailing", chunk, false);
            assert_eq!(r, Scan::Done);
            assert_eq!(out, "{\"a\": [1, 2.5e3, \"x\\\"y\"], \"b\": {\"c\": null}}");
            assert_eq!(n, out.len());
        }
    }

    #[test]
    fn numbers_end_at_the_first_other_byte() {
        let (out, r, n) = scan_all("42\n</p>", 1, false);
        assert_eq!((out.as_str(), r, n), ("42", Scan::Done, 2));
        let (out, r, _) = scan_all("-3.14", 2, false);
        assert_eq!((out.as_str(), r), ("-3.14", Scan::Done));
    }

    #[test]
    fn python_literals_become_json() {
        let (out, r, _) = scan_all("{'a': True, 'b': None, 'c': 'it\\'s \"q\"'}", 3, true);
        assert_eq!(r, Scan::Done);
        assert_eq!(out, "{\"a\": true, \"b\": null, \"c\": \"it's \\\"q\\\"\"}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["c"], "it's \"q\"");
    }

    #[test]
    fn rejects_broken_json() {
        for bad in ["{\"a\" 1}", "{\"a\": tru}", "[1,,2]", "{'a': 1}", "}", "{\"a\": 1-2}", "{\"a\": 01}", "{\"a\": 1e}", "{\"a\": -}"] {
            let (_, r, _) = scan_all(bad, 100, false);
            assert_eq!(r, Scan::Invalid, "{bad}");
        }
        let (_, r, _) = scan_all("{\"a\": 1", 100, false);
        assert_eq!(r, Scan::Invalid, "cut off at the end");
    }
}
