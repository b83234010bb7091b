//! JSON schema to grammar rules: the arguments of a tool call, or a reply in
//! a requested JSON shape, constrained while the model writes them.
//!
//! [`schema_rule`] turns a schema into rules of a [`Grammar`] matching the
//! JSON texts valid under it (or, with [`SchemaOptions::python`], the same
//! values written as Python literals). The conventions follow llama.cpp's
//! `json-schema-to-grammar`, so a grammar written here and one written there
//! accept the same texts in the common cases:
//!
//! * **Whitespace**: after every value and around `:` and `,` the `space`
//!   rule, `"" | " " | "\n"{1,2} [ \t]{0,20}`: `{"a": 1, "b": 2}` (Python's
//!   `json.dumps`, what templates render with `tojson`), compact and
//!   pretty-printed JSON are accepted, unbounded whitespace is not. (The
//!   rule has a fourth alternative that never matches; see the end.)
//! * **Properties** are written in declared order. Required ones must be
//!   present, optional ones may each be left out (any subset), and none
//!   repeats. Allowed extra keys (see below) come after the declared ones.
//! * **`additionalProperties`**: `false` or absent closes the object,
//!   `true` or a schema allows extra keys (not equal to a declared one) after
//!   the declared properties. Absent means closed, unlike JSON schema (where
//!   absent allows anything) and like llama.cpp and OpenAI's strict mode: a
//!   grammar says what the model may write, and a key the tool does not
//!   declare is a hallucination, not a feature. An object schema without
//!   `properties` (`{"type": "object"}`) accepts any object. Arrays follow
//!   the same rule: `prefixItems` without `items` is a closed tuple.
//! * **Integers**: bounds (`minimum`, `maximum`, `exclusiveMinimum`,
//!   `exclusiveMaximum`, also draft 4's boolean form) become exact
//!   digit-range rules. Without an upper bound, at most 16 digits are
//!   accepted (as llama.cpp: beyond 2^53 JSON numbers lose precision in most
//!   readers, and an unbounded digit run lets a model ramble). Integers are
//!   written without fraction or exponent.
//! * **Numbers**: without bounds, JSON numbers (16 digits at most per part).
//!   With bounds, no exponent is accepted, and the bound is exact when it is
//!   an integer (`"minimum": 0, "maximum": 1` accepts `0.5` and `1.0`, not
//!   `1.5`); a fractional bound is applied to the integer part only (with
//!   `"maximum": 2.5`, `2.9` is accepted).
//! * **Strings** are exactly JSON strings (escapes `\" \\ \/ \b \f \n \r \t
//!   \uXXXX`, no raw control characters); `minLength`/`maxLength` count
//!   characters, an escape being one. `format` `date`, `time`, `date-time`
//!   and `uuid` are checked; other formats accept any string. `pattern` is
//!   translated (literals, classes, `\d \w \s`, `.`, groups, alternation,
//!   `* + ? {m,n}`, `^`/`$` at the ends; unanchored ends match any text, as
//!   in JSON schema); other regex syntax (backreferences, lookaround, word
//!   boundaries, flags, Unicode properties) accepts any string, with a
//!   warning. In a pattern, a character outside ASCII may also be written
//!   as `\uXXXX` (any `\uXXXX` is accepted where such a character is).
//! * **`enum`/`const`** match the value's compact JSON text, with the
//!   whitespace rule between tokens: numbers as written in the schema
//!   (`1.0` is not `1`), strings escaped as JSON writes them (non-ASCII
//!   characters as they are).
//! * **`$ref`** to `#`, `#/$defs/...`, `#/definitions/...` or any `#/...`
//!   JSON pointer; each target becomes one rule, so recursive schemas work.
//!   Other keywords next to `$ref` are ignored.
//! * **`anyOf`/`oneOf`** are alternatives (`oneOf` does not exclude texts
//!   valid under two); keywords beside them apply to each alternative.
//!   **`allOf`** merges its schemas (properties, required, types,
//!   tighter bounds); schemas that conflict otherwise give any value, with a
//!   warning.
//! * Without `type`, the type is inferred from the keywords present
//!   (`properties` → object, `items` → array, `pattern` → string, ...); none
//!   → any value. `nullable: true` (OpenAPI) adds `null`.
//!
//! Keywords that constrain but are not enforced (`multipleOf`,
//! `uniqueItems`, `not`, `if`, `patternProperties`, `minProperties`, ...)
//! are ignored with a warning; unknown keywords are ignored silently. An
//! invalid schema (or part) becomes "any value", with a warning. Conversion
//! never panics and its work is bounded: huge `minLength`/`maxItems` become
//! `{m,n}` repetitions, not copies.
//!
//! Two choices serve llguidance, whose lexer takes the longest token it can
//! and does not back up: a token that outruns a shorter one and then fails
//! rejects text the grammar accepts. So every multi-character string or
//! number literal (keys, `const`, `enum`) is written as single-character
//! literals (else a literal `"\"ab\""` next to a generic string would take
//! `"a` and then reject `"ac"`), and `space` has an alternative that never
//! matches, `[^\x00-\U0010FFFF] space`, which makes it recursive: llguidance's
//! GBNF converter fuses a non-recursive rule into one token, and a fused
//! object next to a rule reading objects character by character fails the
//! same way. llama.cpp's own engine reads characters and is not affected.

use super::value::{write_json_string, Value};
use super::{rule_name, Expr, Grammar};
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

/// How values are written.
///
/// # Example
/// ```
/// use chat_parser_runtime::grammar::schema::{schema_rule, SchemaOptions};
/// use chat_parser_runtime::grammar::value::Value;
/// use chat_parser_runtime::grammar::Grammar;
/// let schema = Value::parse(r#"{"enum": ["it's", true, null]}"#).unwrap();
/// let mut g = Grammar::new();
/// schema_rule(&mut g, "flag", &schema, &SchemaOptions { python: true, ..Default::default() }, &mut Vec::new());
/// // Python's repr ("it's" in double quotes, True, None), and JSON as well.
/// assert!(g.to_gbnf().contains(r#"flag ::= "\"" "i" "t" "'" "s" "\"" space | ("true" | "True") space | ("null" | "None") space"#));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchemaOptions<'m> {
    /// Values may be Python literals (the template writes arguments with
    /// Python's `repr`): `True`/`False`/`None`, strings in single quotes (or
    /// double quotes, as `repr` writes a string containing `'` and no `"`),
    /// dict keys as strings. JSON is accepted as well: templates that write
    /// scalars with `repr` write nested objects with `tojson`.
    pub python: bool,
    /// Not empty: values are written in the marked dialect of
    /// [`crate::json::JsonScanner::scan_marked`] (Gemma 4), as the template
    /// writes them: every string is raw text between two markers, object
    /// keys are bare words (a key that cannot be bare is a marked string).
    /// A string's `pattern`, `format` and lengths are not enforced there:
    /// any text without the marker is accepted.
    ///
    /// ```
    /// use chat_parser_runtime::grammar::schema::{schema_rule, SchemaOptions};
    /// use chat_parser_runtime::grammar::value::Value;
    /// use chat_parser_runtime::grammar::Grammar;
    /// let schema = Value::parse(r#"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"#).unwrap();
    /// let mut g = Grammar::new();
    /// schema_rule(&mut g, "args", &schema, &SchemaOptions { marker: "<|\"|>", ..Default::default() }, &mut Vec::new());
    /// assert!(g.to_gbnf().contains(r#"args ::= "{" space "c" "i" "t" "y" space ":" space marked-string"#));
    /// ```
    pub marker: &'m str,
}

/// Adds rules matching the texts valid under `schema` and returns an
/// expression for them (a reference to a rule named after `hint` unless the
/// schema is a plain type). Problems in the schema are pushed to `warnings`
/// and make that part accept any value; see the module docs for what is
/// enforced.
///
/// # Example
/// ```
/// use chat_parser_runtime::grammar::schema::{schema_rule, SchemaOptions};
/// use chat_parser_runtime::grammar::value::Value;
/// use chat_parser_runtime::grammar::{Expr, Grammar};
/// let schema = Value::parse(r#"{"type": "object", "properties": {
///     "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
///     "required": ["city"]}"#).unwrap();
/// let mut g = Grammar::new();
/// let mut warnings = Vec::new();
/// let args = schema_rule(&mut g, "weather-args", &schema, &SchemaOptions::default(), &mut warnings);
/// assert_eq!(args, Expr::Ref("weather-args".into()));
/// assert!(warnings.is_empty());
/// let gbnf = g.to_gbnf();
/// assert!(gbnf.contains("weather-args ::= \"{\" space \"\\\"\" \"c\" \"i\" \"t\" \"y\" \"\\\"\" space \":\" space string"));
/// assert!(gbnf.contains("space ::= \"\" | \" \" | \"\\n\"{1,2} [ \\t]{0,20}"));
/// ```
pub fn schema_rule(g: &mut Grammar, hint: &str, schema: &Value, options: &SchemaOptions<'_>, warnings: &mut Vec<String>) -> Expr {
    let mut c = Conv { g, root: schema, py: options.python, marker: options.marker.to_owned(), base: hint.to_owned(), warnings, refs: Vec::new(), work: 0 };
    c.reference("#", 0)
}

/// Adds the rules for any JSON value (or Python literal) and returns a
/// reference to them.
///
/// # Example
/// ```
/// use chat_parser_runtime::grammar::schema::{any_value, SchemaOptions};
/// use chat_parser_runtime::grammar::{Expr, Grammar};
/// let mut g = Grammar::new();
/// assert_eq!(any_value(&mut g, &SchemaOptions::default()), Expr::Ref("value".into()));
/// assert_eq!(any_value(&mut g, &SchemaOptions { python: true, ..Default::default() }), Expr::Ref("py-value".into()));
/// assert!(g.to_gbnf().contains("py-null ::= (\"null\" | \"None\") space"));
/// ```
pub fn any_value(g: &mut Grammar, options: &SchemaOptions<'_>) -> Expr {
    Prims { g, py: options.python, marker: options.marker }.generic().0
}

/// Adds the rules for any JSON object (or Python dict with string keys) and
/// returns a reference to them: the arguments of a tool without a schema.
///
/// # Example
/// ```
/// use chat_parser_runtime::grammar::schema::{any_object, SchemaOptions};
/// use chat_parser_runtime::grammar::{Expr, Grammar};
/// let mut g = Grammar::new();
/// assert_eq!(any_object(&mut g, &SchemaOptions::default()), Expr::Ref("object".into()));
/// assert!(g.to_gbnf().contains("object ::= \"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? \"}\" space"));
/// ```
pub fn any_object(g: &mut Grammar, options: &SchemaOptions<'_>) -> Expr {
    Prims { g, py: options.python, marker: options.marker }.generic().1
}

/// Nesting of schemas (without `$ref` indirection) beyond which a part
/// becomes any value; values from [`Value::parse`] are shallower anyway.
const MAX_NESTING: usize = 96;
/// Schema nodes converted per call, bounding the work (and the grammar) for
/// hostile schemas, e.g. `anyOf`s whose merging multiplies.
const MAX_WORK: usize = 20_000;
/// Digits of an integer (part) without an upper bound.
const MAX_DIGITS: u32 = 16;
/// Bounds beyond this magnitude are ignored (digit ranges stay in `u64`).
const MAX_BOUND: f64 = 1e18;
/// Repetition counts are capped here (llguidance reads them as `i32`).
const MAX_COUNT: u64 = i32::MAX as u64;
/// Longest `pattern` translated.
const MAX_PATTERN: usize = 4096;

/// Keywords that describe rather than constrain.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "example",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$defs",
    "definitions",
    "contentMediaType",
    "contentEncoding",
    "discriminator",
    "externalDocs",
];

/// Keywords that constrain but are not enforced.
const UNENFORCED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "multipleOf",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

// ---------------------------------------------------------------------------
// Expression helpers

/// A sequence, flattened, without empty literals. Unlike [`Expr::seq`]
/// adjacent literals stay apart, so single-character literals stay single
/// tokens for llguidance's lexer (see the module docs).
fn cat(items: impl IntoIterator<Item = Expr>) -> Expr {
    let mut flat = Vec::new();
    for e in items {
        match e {
            Expr::Seq(inner) => flat.extend(inner),
            e if e.is_empty() => {}
            e => flat.push(e),
        }
    }
    match flat.len() {
        0 => Expr::empty(),
        1 => flat.pop().unwrap_or_else(Expr::empty),
        _ => Expr::Seq(flat),
    }
}

/// `text` as one literal per character.
fn chars(text: &str) -> Expr {
    cat(text.chars().map(|c| Expr::Lit(c.into())))
}

fn lit(s: &str) -> Expr {
    Expr::lit(s)
}

fn digit() -> Expr {
    Expr::class(&[('0', '9')])
}

fn hex_digit() -> Expr {
    Expr::class(&[('0', '9'), ('a', 'f'), ('A', 'F')])
}

fn count(n: u64) -> u32 {
    n.min(MAX_COUNT) as u32
}

/// A hex digit of an escape, either case.
fn hex_of(d: u32) -> Expr {
    let c = char::from_digit(d, 16).unwrap_or('0');
    if c.is_ascii_digit() {
        Expr::Lit(c.into())
    } else {
        Expr::class(&[(c, c), (c.to_ascii_uppercase(), c.to_ascii_uppercase())])
    }
}

/// `value` as a JSON string literal.
fn json_quote(value: &str) -> String {
    let mut out = String::new();
    let _ = write_json_string(&mut out, value);
    out
}

/// `value` as Python's `repr` writes a `str`.
fn py_repr(value: &str) -> String {
    let q = if value.contains('\'') && !value.contains('"') { '"' } else { '\'' };
    let mut out = String::new();
    out.push(q);
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if py_escaped(c) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// Characters Python's `repr` writes as `\xNN` (ASCII and C1 controls).
fn py_escaped(c: char) -> bool {
    matches!(c as u32, 0..=0x1f | 0x7f..=0x9f)
}

// ---------------------------------------------------------------------------
// Character sets (sorted, merged, inclusive ranges of chars)

type Set = Vec<(char, char)>;

fn succ(c: char) -> Option<char> {
    match c as u32 {
        0xD7FF => Some('\u{E000}'),
        n => char::from_u32(n + 1),
    }
}

fn pred(c: char) -> Option<char> {
    match c as u32 {
        0 => None,
        0xE000 => Some('\u{D7FF}'),
        n => char::from_u32(n - 1),
    }
}

fn normalize(mut set: Set) -> Set {
    set.retain(|&(lo, hi)| lo <= hi);
    set.sort_unstable();
    let mut out: Set = Vec::with_capacity(set.len());
    for (lo, hi) in set {
        match out.last_mut() {
            Some(last) if succ(last.1).is_none_or(|n| lo <= n) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

fn complement(set: &[(char, char)]) -> Set {
    let mut out = Vec::new();
    let mut next = Some('\0');
    for &(lo, hi) in set {
        if let Some(n) = next {
            if n < lo {
                if let Some(p) = pred(lo) {
                    out.push((n, p));
                }
            }
        }
        next = succ(hi);
    }
    if let Some(n) = next {
        out.push((n, char::MAX));
    }
    out
}

fn contains(set: &[(char, char)], c: char) -> bool {
    set.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

fn minus(set: &[(char, char)], remove: &[(char, char)]) -> Set {
    let mut both = complement(set);
    both.extend_from_slice(remove);
    complement(&normalize(both))
}

/// A class for `set`, negated when that is shorter. None for the empty set.
fn set_class(set: &[(char, char)]) -> Option<Expr> {
    if set.is_empty() {
        return None;
    }
    let comp = complement(set);
    Some(if comp.len() < set.len() {
        Expr::Class { negated: true, ranges: comp }
    } else {
        Expr::Class { negated: false, ranges: set.to_vec() }
    })
}

/// A trie of `keys`: per node, its children by character and whether a key
/// ends there; node 0 is the root, and a child always comes after its parent.
fn key_trie<'k>(keys: impl Iterator<Item = &'k str>) -> Vec<(Vec<(char, usize)>, bool)> {
    let mut nodes: Vec<(Vec<(char, usize)>, bool)> = vec![(Vec::new(), false)];
    for k in keys {
        let mut at = 0;
        for c in k.chars() {
            at = match nodes[at].0.iter().find(|(d, _)| *d == c) {
                Some(&(_, next)) => next,
                None => {
                    nodes.push((Vec::new(), false));
                    let next = nodes.len() - 1;
                    nodes[at].0.push((c, next));
                    next
                }
            };
        }
        nodes[at].1 = true;
    }
    nodes
}

/// JSON's short escapes.
const JSON_ESCAPES: &[(char, &str)] =
    &[('"', "\\\""), ('\\', "\\\\"), ('/', "\\/"), ('\n', "\\n"), ('\r', "\\r"), ('\t', "\\t"), ('\u{8}', "\\b"), ('\u{c}', "\\f")];

/// One character of `set`, as written inside a string quoted with `quote`
/// (`"` for JSON; `'` or `"` for Python): raw where the syntax allows it,
/// else escaped. For JSON, any `\uXXXX` is accepted where the set has a
/// character outside ASCII (an approximation: the escape is not decoded).
fn encode_set(set: &[(char, char)], quote: char, python: bool) -> Expr {
    let mut alts = Vec::new();
    if python {
        let raw = minus(set, &[(quote, quote), ('\\', '\\'), ('\0', '\u{1f}'), ('\u{7f}', '\u{9f}')]);
        alts.extend(set_class(&raw));
        for (c, esc) in [(quote, ""), ('\\', "\\\\"), ('\n', "\\n"), ('\r', "\\r"), ('\t', "\\t")] {
            if contains(set, c) {
                alts.push(if esc.is_empty() { cat([lit("\\"), Expr::Lit(c.into())]) } else { chars(esc) });
            }
        }
        for n in (0..0x20u32).chain(0x7f..0xa0) {
            let c = char::from_u32(n).unwrap_or('\0');
            if contains(set, c) && !matches!(c, '\n' | '\r' | '\t') {
                alts.push(cat([lit("\\"), lit("x"), hex_of(n >> 4), hex_of(n & 15)]));
            }
        }
    } else {
        let raw = minus(set, &[('"', '"'), ('\\', '\\'), ('\0', '\u{1f}')]);
        alts.extend(set_class(&raw));
        for &(c, esc) in JSON_ESCAPES {
            if contains(set, c) {
                alts.push(chars(esc));
            }
        }
        if set.iter().any(|&(_, hi)| hi > '\u{7f}') {
            alts.push(cat([lit("\\"), lit("u"), Expr::repeat(hex_digit(), 4, Some(4))]));
        } else {
            for n in 0..0x20u32 {
                let c = char::from_u32(n).unwrap_or('\0');
                if contains(set, c) && !JSON_ESCAPES.iter().any(|&(e, _)| e == c) {
                    alts.push(cat([lit("\\"), lit("u"), lit("0"), lit("0"), hex_of(n >> 4), hex_of(n & 15)]));
                }
            }
        }
    }
    Expr::alt(alts)
}

// ---------------------------------------------------------------------------
// Shared rules

struct Prims<'g, 'm> {
    g: &'g mut Grammar,
    py: bool,
    /// The string marker of the marked dialect (`""`: JSON or Python).
    marker: &'m str,
}

/// Whether `c` may be part of a bare key in the marked dialect: what the
/// JSON scanner reads as one ([`crate::json::bare_key_byte`]).
fn bare_key_char(c: char) -> bool {
    !c.is_ascii() || crate::json::bare_key_byte(c as u8)
}

/// The characters of bare keys, as a class (the same set as
/// [`bare_key_char`]; a test checks it).
const BARE_KEY_SET: &[(char, char)] = &[('$', '$'), ('-', '.'), ('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z'), ('\u{80}', char::MAX)];

impl Prims<'_, '_> {
    /// `"" | " " | "\n"{1,2} [ \t]{0,20} | [^\x00-\U0010FFFF] space`. The
    /// last alternative never matches (no character is outside that
    /// class); it makes the rule recursive, so llguidance's GBNF converter
    /// keeps every rule that ends in space (every value) a grammar rule
    /// instead of fusing it into one regex token (see the module docs).
    fn space(&mut self) -> Expr {
        let newline = cat([Expr::repeat(lit("\n"), 1, Some(2)), Expr::repeat(Expr::class(&[(' ', ' '), ('\t', '\t')]), 0, Some(20))]);
        let never = Expr::not_class(&[('\0', char::MAX)]);
        let mut n = 1;
        loop {
            let name = if n == 1 { "space".to_owned() } else { format!("space-{n}") };
            let body = Expr::Alt(vec![Expr::empty(), lit(" "), newline.clone(), cat([never.clone(), Expr::Ref(name.clone())])]);
            match self.g.get(&name) {
                Some(existing) if *existing != body => n += 1,
                Some(_) => return Expr::Ref(name),
                None => {
                    self.g.define(&name, body);
                    return Expr::Ref(name);
                }
            }
        }
    }

    /// One string character inside `quote`.
    fn char(&mut self, quote: char) -> Expr {
        if self.py {
            let other = if quote == '\'' { '"' } else { '\'' };
            let body = Expr::alt([
                Expr::not_class(&[(quote, quote), ('\\', '\\'), ('\0', '\u{1f}'), ('\u{7f}', '\u{7f}')]),
                cat([
                    lit("\\"),
                    Expr::alt([
                        Expr::class(&[
                            (quote, quote),
                            (other, other),
                            ('\\', '\\'),
                            ('n', 'n'),
                            ('r', 'r'),
                            ('t', 't'),
                            ('0', '0'),
                            ('a', 'b'),
                            ('f', 'f'),
                            ('v', 'v'),
                        ]),
                        cat([lit("x"), Expr::repeat(hex_digit(), 2, Some(2))]),
                        cat([lit("u"), Expr::repeat(hex_digit(), 4, Some(4))]),
                        cat([lit("U"), Expr::repeat(hex_digit(), 8, Some(8))]),
                    ]),
                ]),
            ]);
            self.g.rule(if quote == '\'' { "py-char-sq" } else { "py-char-dq" }, body)
        } else {
            let body = Expr::alt([
                Expr::not_class(&[('"', '"'), ('\\', '\\'), ('\0', '\u{1f}')]),
                cat([
                    lit("\\"),
                    Expr::alt([
                        Expr::class(&[('"', '"'), ('\\', '\\'), ('/', '/'), ('b', 'b'), ('f', 'f'), ('n', 'n'), ('r', 'r'), ('t', 't')]),
                        cat([lit("u"), Expr::repeat(hex_digit(), 4, Some(4))]),
                    ]),
                ]),
            ]);
            self.g.rule("char", body)
        }
    }

    fn quotes(&self) -> &'static [char] {
        if self.py {
            &['\'', '"']
        } else {
            &['"']
        }
    }

    /// A string whose characters (between the quotes) match `inner(quote)`,
    /// then space. In the marked dialect, any marked string (see
    /// [`SchemaOptions::marker`]).
    fn quoted(&mut self, mut inner: impl FnMut(&mut Self, char) -> Expr) -> Expr {
        if !self.marker.is_empty() {
            return self.string();
        }
        let mut alts = Vec::new();
        for &q in self.quotes() {
            let body = inner(self, q);
            alts.push(cat([Expr::Lit(q.into()), body, Expr::Lit(q.into())]));
        }
        let space = self.space();
        cat([Expr::alt(alts), space])
    }

    fn string(&mut self) -> Expr {
        if !self.marker.is_empty() {
            let marker = self.marker;
            let text = self.g.text_without("marked-text", &[marker]);
            let space = self.space();
            return self.g.rule("marked-string", cat([chars(marker), text, chars(marker), space]));
        }
        let body = self.quoted(|p, q| Expr::star(p.char(q)));
        self.g.rule(if self.py { "py-string" } else { "string" }, body)
    }

    fn keyword(&mut self, json: &str, python: &str) -> Expr {
        let space = self.space();
        // Python mode takes JSON too: templates that write scalars with
        // Python's repr still write nested objects with `tojson`.
        let word = if self.py { Expr::alt([lit(json), lit(python)]) } else { lit(json) };
        cat([word, space])
    }

    fn boolean(&mut self) -> Expr {
        let space = self.space();
        let words = if self.py {
            vec![lit("true"), lit("false"), lit("True"), lit("False")]
        } else {
            vec![lit("true"), lit("false")]
        };
        self.g.rule(if self.py { "py-boolean" } else { "boolean" }, cat([Expr::alt(words), space]))
    }

    fn null(&mut self) -> Expr {
        let body = self.keyword("null", "None");
        self.g.rule(if self.py { "py-null" } else { "null" }, body)
    }

    /// Digits of a non-negative integer without leading zeros, at most
    /// [`MAX_DIGITS`].
    fn integral(&mut self) -> Expr {
        let body = Expr::alt([lit("0"), cat([Expr::class(&[('1', '9')]), Expr::repeat(digit(), 0, Some(MAX_DIGITS - 1))])]);
        self.g.rule("integral-part", body)
    }

    fn integer(&mut self) -> Expr {
        let (integral, space) = (self.integral(), self.space());
        self.g.rule("integer", cat([Expr::opt(lit("-")), integral, space]))
    }

    fn number(&mut self) -> Expr {
        let (integral, space) = (self.integral(), self.space());
        let body = cat([
            Expr::opt(lit("-")),
            integral,
            Expr::opt(cat([lit("."), Expr::repeat(digit(), 1, Some(MAX_DIGITS))])),
            Expr::opt(cat([
                Expr::class(&[('e', 'e'), ('E', 'E')]),
                Expr::opt(Expr::class(&[('+', '+'), ('-', '-')])),
                Expr::repeat(digit(), 1, Some(MAX_DIGITS)),
            ])),
            space,
        ]);
        self.g.rule("number", body)
    }

    /// (any value, any object, any array), defined together as they refer
    /// to each other.
    fn generic(&mut self) -> (Expr, Expr, Expr) {
        let (string, number, boolean, null, space) = (self.string(), self.number(), self.boolean(), self.null(), self.space());
        let prefix = match (self.marker.is_empty(), self.py) {
            (false, _) => "marked-",
            (true, true) => "py-",
            (true, false) => "",
        };
        // The first free (or identical) set of names: another part of the
        // grammar may already use `value` for something else.
        let mut n = 1;
        loop {
            let suffix = if n == 1 { String::new() } else { format!("-{n}") };
            let names = [format!("{prefix}value{suffix}"), format!("{prefix}object{suffix}"), format!("{prefix}array{suffix}")];
            let [value, object, array] = names.clone().map(Expr::Ref);
            let key = if self.marker.is_empty() {
                string.clone()
            } else {
                let bare = Expr::class(BARE_KEY_SET);
                Expr::alt([cat([bare.clone(), Expr::star(bare), space.clone()]), string.clone()])
            };
            let member = cat([key, lit(":"), space.clone(), value.clone()]);
            let bodies = [
                Expr::alt([object.clone(), array.clone(), string.clone(), number.clone(), boolean.clone(), null.clone()]),
                cat([
                    lit("{"),
                    space.clone(),
                    Expr::opt(cat([member.clone(), Expr::star(cat([lit(","), space.clone(), member]))])),
                    lit("}"),
                    space.clone(),
                ]),
                cat([
                    lit("["),
                    space.clone(),
                    Expr::opt(cat([value.clone(), Expr::star(cat([lit(","), space.clone(), value.clone()]))])),
                    lit("]"),
                    space.clone(),
                ]),
            ];
            let fits = names.iter().zip(&bodies).all(|(name, body)| self.g.get(name).is_none_or(|e| e == body));
            if fits {
                for (name, body) in names.iter().zip(bodies) {
                    if self.g.get(name).is_none() {
                        self.g.define(name, body);
                    }
                }
                return (value, object, array);
            }
            n += 1;
        }
    }
}

// ---------------------------------------------------------------------------
// The converter

/// Where a `$ref` target stands.
enum RefState {
    /// Being converted; a name is reserved once it refers to itself.
    Converting {
        hint: String,
        name: Option<String>,
    },
    Done(Expr),
}

struct Conv<'a, 'g> {
    g: &'g mut Grammar,
    root: &'a Value,
    py: bool,
    /// See [`SchemaOptions::marker`].
    marker: String,
    /// The caller's hint: rules are named after it.
    base: String,
    warnings: &'g mut Vec<String>,
    refs: Vec<(String, RefState)>,
    work: usize,
}

/// Inclusive or exclusive bound.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bound {
    value: f64,
    exclusive: bool,
}

fn floor(x: f64) -> i64 {
    let t = x as i64;
    if (t as f64) > x {
        t - 1
    } else {
        t
    }
}

fn ceil(x: f64) -> i64 {
    let t = x as i64;
    if (t as f64) < x {
        t + 1
    } else {
        t
    }
}

fn is_integral(x: f64) -> bool {
    floor(x) as f64 == x
}

fn number_of(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// A non-negative count keyword (`minLength` ...), read leniently.
fn count_of(v: Option<&Value>) -> Option<u64> {
    let f = v?.as_f64()?;
    if f < 0.0 {
        return Some(0);
    }
    Some(if f >= MAX_COUNT as f64 { MAX_COUNT } else { floor(f) as u64 })
}

fn type_matches(v: &Value, t: &str) -> bool {
    let vt = v.type_name();
    vt == t || (t == "number" && vt == "integer") || (t == "integer" && v.as_i64().is_some() && vt == "number")
}

impl<'a> Conv<'a, '_> {
    fn warn(&mut self, at: &str, msg: impl core::fmt::Display) {
        let line = format!("{at}: {msg}");
        if !self.warnings.contains(&line) {
            self.warnings.push(line);
        }
    }

    fn prims(&mut self) -> Prims<'_, '_> {
        Prims { g: self.g, py: self.py, marker: &self.marker }
    }

    fn space(&mut self) -> Expr {
        self.prims().space()
    }

    fn any(&mut self) -> Expr {
        self.prims().generic().0
    }

    /// `e` as a rule named after `name`, unless it is a reference already.
    fn named(&mut self, name: &str, e: Expr) -> Expr {
        match e {
            Expr::Ref(_) => e,
            e => self.g.rule(name, e),
        }
    }

    /// A rule for the schema at `pointer`, converted once.
    fn reference(&mut self, pointer: &str, depth: usize) -> Expr {
        if let Some(i) = self.refs.iter().position(|(p, _)| p == pointer) {
            return match &mut self.refs[i].1 {
                RefState::Done(e) => e.clone(),
                RefState::Converting { name: Some(n), .. } => Expr::Ref(n.clone()),
                RefState::Converting { hint, name } => {
                    // It refers to itself: reserve the name now, define it
                    // when the body is done.
                    let base = rule_name(hint);
                    let mut n = base.clone();
                    let mut k = 1;
                    while self.g.get(&n).is_some() {
                        k += 1;
                        n = format!("{base}-{k}");
                    }
                    *name = Some(n.clone());
                    self.g.define(&n, Expr::Ref(n.clone()));
                    Expr::Ref(n)
                }
            };
        }
        let Some(target) = self.resolve(pointer) else {
            let at = self.base.clone();
            self.warn(&at, format_args!("$ref {pointer:?} not found (only local \"#/...\" pointers are); any value accepted"));
            return self.any();
        };
        let hint = if pointer == "#" {
            self.base.clone()
        } else {
            let last = pointer.rsplit('/').next().unwrap_or("ref");
            format!("{}-{}", self.base, last)
        };
        self.refs.push((pointer.to_owned(), RefState::Converting { hint: hint.clone(), name: None }));
        let body = self.expr(&hint, target, depth + 1);
        let i = self.refs.iter().position(|(p, _)| p == pointer).unwrap_or(0);
        let e = match &self.refs[i].1 {
            RefState::Converting { name: Some(n), .. } => {
                let n = n.clone();
                let body = if self.aliases_back(&body, &n) {
                    self.warn(&hint, format_args!("$ref {pointer:?} only refers to itself; any value accepted"));
                    self.any()
                } else {
                    body
                };
                self.g.define(&n, body);
                Expr::Ref(n)
            }
            _ => self.named(&hint, body),
        };
        self.refs[i].1 = RefState::Done(e.clone());
        e
    }

    /// Whether `e` is a chain of plain rule references leading to `name`
    /// (a rule that would only ever be itself).
    fn aliases_back(&self, e: &Expr, name: &str) -> bool {
        let mut cur = e;
        for _ in 0..1000 {
            match cur {
                Expr::Ref(n) if n == name => return true,
                Expr::Ref(n) => match self.g.get(n) {
                    Some(next) => cur = next,
                    None => return false,
                },
                _ => return false,
            }
        }
        true
    }

    /// The schema at a local JSON pointer (`#`, `#/$defs/a`, `#/a~1b/0`).
    fn resolve(&self, pointer: &str) -> Option<&'a Value> {
        let path = pointer.strip_prefix('#')?;
        let mut cur = self.root;
        if path.is_empty() {
            return Some(cur);
        }
        for raw in path.strip_prefix('/')?.split('/') {
            let seg = percent_decode(raw).replace("~1", "/").replace("~0", "~");
            cur = match cur {
                Value::Object(_) => cur.get(&seg)?,
                Value::Array(items) => items.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }

    /// A schema converted and named after `name`.
    fn convert(&mut self, name: &str, s: &Value, depth: usize) -> Expr {
        let e = self.expr(name, s, depth);
        self.named(name, e)
    }

    /// The expression for a schema (sub-rules named after `name`).
    fn expr(&mut self, name: &str, s: &Value, depth: usize) -> Expr {
        self.work += 1;
        if self.work > MAX_WORK {
            let at = self.base.clone();
            self.warn(&at, "schema too large to convert; the rest accepts any value");
            return self.any();
        }
        if depth > MAX_NESTING {
            self.warn(name, "schema nested too deeply; any value accepted");
            return self.any();
        }
        let obj = match s {
            Value::Bool(true) => return self.any(),
            Value::Bool(false) => {
                self.warn(name, "schema `false` matches nothing; any value accepted");
                return self.any();
            }
            Value::Object(o) => o,
            _ => {
                self.warn(name, "a schema must be an object or a boolean; any value accepted");
                return self.any();
            }
        };
        if let Some(r) = s.get("$ref") {
            return match r.as_str() {
                Some(r) => self.reference(r, depth),
                None => {
                    self.warn(name, "$ref is not a string; any value accepted");
                    self.any()
                }
            };
        }
        for (k, v) in obj {
            if UNENFORCED.contains(&k.as_str()) && *v != Value::Bool(false) {
                self.warn(name, format_args!("`{k}` is not enforced"));
            }
        }
        if s.get("allOf").is_some() {
            return match self.merge_all(s) {
                Ok(merged) => self.expr(name, &merged, depth + 1),
                Err(msg) => {
                    self.warn(name, format_args!("allOf: {msg}; any value accepted"));
                    self.any()
                }
            };
        }
        let core = self.core(name, s, obj, depth);
        if s.get("nullable") == Some(&Value::Bool(true)) {
            let null = self.prims().null();
            return Expr::alt([core, null]);
        }
        core
    }

    fn core(&mut self, name: &str, s: &Value, obj: &[(String, Value)], depth: usize) -> Expr {
        if let Some(list) = s.get("anyOf").or_else(|| s.get("oneOf")) {
            if s.get("anyOf").is_some() && s.get("oneOf").is_some() {
                self.warn(name, "both anyOf and oneOf: oneOf is ignored");
            }
            let Some(list) = list.as_array() else {
                self.warn(name, "anyOf/oneOf is not an array; any value accepted");
                return self.any();
            };
            // Keywords beside anyOf apply to each alternative.
            let siblings: Vec<(String, Value)> = obj
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "anyOf" | "oneOf" | "nullable") && !ANNOTATIONS.contains(&k.as_str()))
                .cloned()
                .collect();
            let mut alts = Vec::new();
            for (i, alt) in list.iter().enumerate() {
                if *alt == Value::Bool(false) {
                    continue;
                }
                let hint = format!("{name}-{i}");
                alts.push(if siblings.is_empty() {
                    self.convert(&hint, alt, depth + 1)
                } else {
                    let both = Value::Object(vec![("allOf".into(), Value::Array(vec![Value::Object(siblings.clone()), alt.clone()]))]);
                    self.convert(&hint, &both, depth + 1)
                });
            }
            if alts.is_empty() {
                self.warn(name, "anyOf/oneOf without alternatives; any value accepted");
                return self.any();
            }
            return Expr::alt(alts);
        }
        if let Some(c) = s.get("const") {
            return self.literal(c, 0);
        }
        if let Some(values) = s.get("enum") {
            let Some(values) = values.as_array() else {
                self.warn(name, "enum is not an array; any value accepted");
                return self.any();
            };
            let types = self.types(name, s);
            let mut alts = Vec::new();
            for v in values {
                if types.is_empty() || types.iter().any(|t| type_matches(v, t)) {
                    alts.push(self.literal(v, 0));
                }
            }
            if alts.is_empty() {
                self.warn(name, "no enum value has the schema's type; any value accepted");
                return self.any();
            }
            return Expr::alt(alts);
        }
        let types = self.types(name, s);
        if types.is_empty() {
            return self.any();
        }
        let alts: Vec<Expr> = types.iter().map(|t| self.typed(name, t, s, depth)).collect();
        Expr::alt(alts)
    }

    /// The schema's types: `type` (a name or a list), or inferred from the
    /// keywords; empty for any type.
    fn types(&mut self, name: &str, s: &Value) -> Vec<&'static str> {
        const KNOWN: [&str; 7] = ["string", "number", "integer", "boolean", "null", "object", "array"];
        let mut out: Vec<&'static str> = Vec::new();
        let add = |t: &str, out: &mut Vec<&'static str>| -> bool {
            match KNOWN.iter().find(|k| **k == t) {
                Some(k) => {
                    if !out.contains(k) {
                        out.push(k);
                    }
                    true
                }
                None => false,
            }
        };
        match s.get("type") {
            Some(Value::String(t)) => {
                if !add(t, &mut out) {
                    self.warn(name, format_args!("unknown type {t:?}; any value accepted"));
                }
            }
            Some(Value::Array(ts)) => {
                for t in ts {
                    match t.as_str() {
                        Some(t) if add(t, &mut out) => {}
                        _ => self.warn(name, format_args!("unknown type {t}; left out")),
                    }
                }
                if out.is_empty() {
                    self.warn(name, "no known type; any value accepted");
                }
            }
            Some(other) => self.warn(name, format_args!("bad type {other}; any value accepted")),
            None => {
                let has = |keys: &[&str]| keys.iter().any(|k| s.get(k).is_some());
                if has(&["properties", "additionalProperties", "required"]) {
                    out.push("object");
                }
                if has(&["items", "prefixItems", "minItems", "maxItems"]) {
                    out.push("array");
                }
                if has(&["pattern", "format", "minLength", "maxLength"]) {
                    out.push("string");
                }
                if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
                    out.push("number");
                }
            }
        }
        out
    }

    fn typed(&mut self, name: &str, t: &str, s: &Value, depth: usize) -> Expr {
        match t {
            "string" => self.string(name, s),
            "integer" => self.integer(name, s),
            "number" => self.number(name, s),
            "boolean" => self.prims().boolean(),
            "null" => self.prims().null(),
            "object" => self.object(name, s, depth),
            "array" => self.array(name, s, depth),
            _ => self.any(),
        }
    }

    // --- literals -------------------------------------------------------

    /// Exactly `v` (compact, with the whitespace rule between tokens), then
    /// space.
    fn literal(&mut self, v: &Value, depth: usize) -> Expr {
        if depth > MAX_NESTING {
            let at = self.base.clone();
            self.warn(&at, "constant nested too deeply; any value accepted");
            return self.any();
        }
        let space = self.space();
        let body = match v {
            Value::Null if self.py => Expr::alt([lit("null"), lit("None")]),
            Value::Null => lit("null"),
            Value::Bool(b) => {
                let json = lit(if *b { "true" } else { "false" });
                if self.py {
                    Expr::alt([json, lit(if *b { "True" } else { "False" })])
                } else {
                    json
                }
            }
            Value::Number(n) => chars(n),
            Value::String(text) => self.string_literal(text),
            Value::Array(items) => {
                let mut parts = vec![lit("["), space.clone()];
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        parts.extend([lit(","), space.clone()]);
                    }
                    parts.push(self.literal(item, depth + 1));
                }
                parts.push(lit("]"));
                cat(parts)
            }
            Value::Object(members) => {
                let mut parts = vec![lit("{"), space.clone()];
                for (i, (k, item)) in members.iter().enumerate() {
                    if i > 0 {
                        parts.extend([lit(","), space.clone()]);
                    }
                    parts.extend([self.key_literal(k), space.clone(), lit(":"), space.clone()]);
                    parts.push(self.literal(item, depth + 1));
                }
                parts.push(lit("}"));
                cat(parts)
            }
        };
        cat([body, space])
    }

    fn string_literal(&self, text: &str) -> Expr {
        if !self.marker.is_empty() {
            return cat([chars(&self.marker), chars(text), chars(&self.marker)]);
        }
        if self.py {
            Expr::alt([chars(&py_repr(text)), chars(&json_quote(text))])
        } else {
            chars(&json_quote(text))
        }
    }

    // --- strings --------------------------------------------------------

    fn string(&mut self, name: &str, s: &Value) -> Expr {
        let mut min = count_of(s.get("minLength")).unwrap_or(0);
        let mut max = count_of(s.get("maxLength"));
        if max.is_some_and(|m| m < min) {
            self.warn(name, "maxLength below minLength; lengths ignored");
            (min, max) = (0, None);
        }
        if let Some(pattern) = s.get("pattern") {
            let parsed = match pattern.as_str() {
                Some(p) => parse_regex(p).map_err(|e| format!("pattern {p:?}: {e}")),
                None => Err("pattern is not a string".into()),
            };
            match parsed {
                Ok(re) => {
                    if min > 0 || max.is_some() {
                        self.warn(name, "minLength/maxLength are not enforced together with pattern");
                    }
                    let py = self.py;
                    let body = self.prims().quoted(|p, q| re_expr(p, &re, q, py));
                    return self.named(&format!("{name}-string"), body);
                }
                Err(msg) => self.warn(name, format_args!("{msg}; any string accepted")),
            }
        }
        if let Some(format) = s.get("format").and_then(Value::as_str) {
            if let Some(inner) = format_expr(format) {
                let body = self.prims().quoted(|_, _| inner.clone());
                return self.named(&format!("{}-string", rule_name(format)), body);
            }
        }
        if min == 0 && max.is_none() {
            return self.prims().string();
        }
        self.prims().quoted(|p, q| Expr::repeat(p.char(q), count(min), max.map(count)))
    }

    // --- numbers --------------------------------------------------------

    /// The tightest lower and upper bounds given (draft 4's boolean
    /// `exclusiveMinimum` included); bounds past 1e18 are dropped.
    fn bounds(&mut self, name: &str, s: &Value) -> (Option<Bound>, Option<Bound>) {
        let mut lo: Option<Bound> = None;
        let mut hi: Option<Bound> = None;
        let flag = |k: &str| s.get(k) == Some(&Value::Bool(true));
        let candidates = [
            ("minimum", number_of(s.get("minimum")), flag("exclusiveMinimum"), true),
            ("exclusiveMinimum", number_of(s.get("exclusiveMinimum")), true, true),
            ("maximum", number_of(s.get("maximum")), flag("exclusiveMaximum"), false),
            ("exclusiveMaximum", number_of(s.get("exclusiveMaximum")), true, false),
        ];
        for (key, value, exclusive, lower) in candidates {
            let Some(value) = value else { continue };
            if !(-MAX_BOUND..=MAX_BOUND).contains(&value) {
                self.warn(name, format_args!("{key} beyond 1e18 is ignored"));
                continue;
            }
            let b = Bound { value, exclusive };
            let slot = if lower { &mut lo } else { &mut hi };
            let tighter = match slot {
                None => true,
                Some(old) if lower => value > old.value || (value == old.value && exclusive),
                Some(old) => value < old.value || (value == old.value && exclusive),
            };
            if tighter {
                *slot = Some(b);
            }
        }
        (lo, hi)
    }

    fn integer(&mut self, name: &str, s: &Value) -> Expr {
        let (lo, hi) = self.bounds(name, s);
        if lo.is_none() && hi.is_none() {
            return self.prims().integer();
        }
        let lo = lo.map(|b| if b.exclusive { floor(b.value) + 1 } else { ceil(b.value) });
        let hi = hi.map(|b| if b.exclusive { ceil(b.value) - 1 } else { floor(b.value) });
        match int_range(lo, hi) {
            Some(e) => {
                let space = self.space();
                self.named(&format!("{name}-int"), cat([e, space]))
            }
            None => {
                self.warn(name, "no integer within the bounds; bounds ignored");
                self.prims().integer()
            }
        }
    }

    fn number(&mut self, name: &str, s: &Value) -> Expr {
        let (lo, hi) = self.bounds(name, s);
        if lo.is_none() && hi.is_none() {
            return self.prims().number();
        }
        let zero_exclusive = Bound { value: 0.0, exclusive: true };
        let mut alts = Vec::new();
        // v >= 0: its text is the magnitude.
        if hi.is_none_or(|b| b.value > 0.0 || (b.value == 0.0 && !b.exclusive)) {
            let from = match lo {
                Some(b) if b.value >= 0.0 => b,
                _ => Bound { value: 0.0, exclusive: false },
            };
            alts.extend(magnitude(from, hi));
        }
        // v < 0: "-" and the magnitude, bounds mirrored.
        if lo.is_none_or(|b| b.value < 0.0) {
            let from = match hi {
                Some(b) if b.value < 0.0 => Bound { value: -b.value, exclusive: b.exclusive },
                _ => zero_exclusive,
            };
            let to = lo.map(|b| Bound { value: -b.value, exclusive: b.exclusive });
            if let Some(m) = magnitude(from, to) {
                alts.push(cat([lit("-"), m]));
            }
        }
        if alts.is_empty() {
            self.warn(name, "no number within the bounds; bounds ignored");
            return self.prims().number();
        }
        let space = self.space();
        self.named(&format!("{name}-num"), cat([Expr::alt(alts), space]))
    }

    // --- objects --------------------------------------------------------

    fn object(&mut self, name: &str, s: &Value, depth: usize) -> Expr {
        let mut props: Vec<(String, Value, bool)> = Vec::new();
        let required: Vec<&str> = s.get("required").and_then(Value::as_array).unwrap_or(&[]).iter().filter_map(Value::as_str).collect();
        match s.get("properties") {
            None => {}
            Some(Value::Object(members)) => {
                for (k, v) in members {
                    if props.iter().any(|(p, _, _)| p == k) {
                        continue;
                    }
                    let req = required.contains(&k.as_str());
                    if *v == Value::Bool(false) {
                        if req {
                            self.warn(name, format_args!("required property {k:?} has schema false"));
                        }
                        continue;
                    }
                    props.push((k.clone(), v.clone(), req));
                }
            }
            Some(_) => self.warn(name, "properties is not an object; ignored"),
        }
        let additional = s.get("additionalProperties");
        let extra: Option<Value> = match additional {
            // Closed when properties are declared (see the module docs).
            None if props.is_empty() => Some(Value::Bool(true)),
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(Value::Bool(true)),
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(_) => {
                self.warn(name, "additionalProperties is not a schema; no extra keys allowed");
                None
            }
        };
        // Required keys without a declared schema must still be written.
        for r in &required {
            if !props.iter().any(|(p, _, _)| p == r) {
                if additional == Some(&Value::Bool(false)) {
                    self.warn(name, format_args!("required property {r:?} is not allowed by additionalProperties: false"));
                }
                props.push(((*r).into(), extra.clone().unwrap_or(Value::Bool(true)), true));
            }
        }
        if props.is_empty() && extra == Some(Value::Bool(true)) {
            return self.prims().generic().1;
        }
        let space = self.space();
        let mut kvs = Vec::new();
        for (k, v, _) in &props {
            let value = self.convert(&format!("{name}-{k}"), v, depth + 1);
            let key = self.key_literal(k);
            kvs.push(cat([key, space.clone(), lit(":"), space.clone(), value]));
        }
        let extra_kv = match &extra {
            Some(schema) => {
                let value = self.convert(&format!("{name}-additional"), schema, depth + 1);
                let keys: Vec<&str> = props.iter().map(|(k, _, _)| k.as_str()).collect();
                let key = self.key_not_in(name, &keys);
                Some(cat([key, lit(":"), space.clone(), value]))
            }
            None => None,
        };
        let extras_tail = extra_kv.as_ref().map_or_else(Expr::empty, |e| Expr::star(cat([lit(","), space.clone(), e.clone()])));
        // tails[i]: properties i.. after at least one was written.
        let n = kvs.len();
        let mut tails = vec![Expr::empty(); n + 1];
        tails[n] = extras_tail.clone();
        for i in (0..n).rev() {
            let piece = cat([lit(","), space.clone(), kvs[i].clone()]);
            let piece = if props[i].2 { piece } else { Expr::opt(piece) };
            let tail = cat([piece, tails[i + 1].clone()]);
            // Each tail is used twice (by the next head and the tail before
            // it): past a few properties, name them to keep the size linear.
            tails[i] = if n > 6 && i > 0 { self.g.rule(&format!("{name}-rest"), tail) } else { tail };
        }
        let mut heads = Vec::new();
        let mut all_optional = true;
        for i in 0..n {
            heads.push(cat([kvs[i].clone(), tails[i + 1].clone()]));
            if props[i].2 {
                all_optional = false;
                break;
            }
        }
        if all_optional {
            if let Some(e) = extra_kv {
                heads.push(cat([e, extras_tail]));
            }
        }
        let members = if all_optional { Expr::opt(Expr::alt(heads)) } else { Expr::alt(heads) };
        cat([lit("{"), space.clone(), members, lit("}"), space])
    }

    /// An object key as written: a string, or in the marked dialect a bare
    /// word where the key is one.
    fn key_literal(&self, key: &str) -> Expr {
        if !self.marker.is_empty() && !key.is_empty() && key.chars().all(bare_key_char) {
            return chars(key);
        }
        self.string_literal(key)
    }

    /// A key (a string, then space) that is none of `keys`: one rule per
    /// prefix of the keys, like [`Grammar::text_without`]. An escape leaves
    /// the prefixes (`"\u0061"` is accepted even if `a` is a key).
    fn key_not_in(&mut self, name: &str, keys: &[&str]) -> Expr {
        if !self.marker.is_empty() {
            return self.bare_key_not_in(name, keys);
        }
        if keys.is_empty() {
            return self.prims().string();
        }
        let py = self.py;
        let quotes: &[char] = if py { &['\'', '"'] } else { &['"'] };
        let mut alts = Vec::new();
        for &q in quotes {
            let nodes = key_trie(keys.iter().copied());
            // The closing quote and space end every path: rules with space
            // stay rules in llguidance's GBNF converter (see `space`), and a
            // key token fused from these rules would swallow the characters
            // of a declared key.
            let (ch, space) = (self.prims().char(q), self.space());
            let close = cat([Expr::Lit(q.into()), space]);
            let free = cat([Expr::star(ch), close.clone()]);
            let root = self.trie_rules(
                name,
                &nodes,
                |c| encode_set(&[(c, c)], q, py),
                |taken| alloc::vec![cat([encode_set(&complement(taken), q, py), free.clone()])],
                |_, is_key| (!is_key).then(|| close.clone()),
            );
            alts.push(cat([Expr::Lit(q.into()), root]));
        }
        Expr::alt(alts)
    }

    /// [`Conv::key_not_in`] in the marked dialect: a bare key (then space)
    /// that is none of the bare `keys` (a declared key that cannot be bare
    /// is written marked, so it never collides).
    fn bare_key_not_in(&mut self, name: &str, keys: &[&str]) -> Expr {
        let nodes = key_trie(keys.iter().copied().filter(|k| k.chars().all(bare_key_char)));
        let space = self.space();
        let bare = Expr::class(BARE_KEY_SET);
        let free = cat([Expr::star(bare), space.clone()]);
        self.trie_rules(
            name,
            &nodes,
            |c| Expr::Lit(c.into()),
            |taken| set_class(&minus(BARE_KEY_SET, taken)).map(|other| cat([other, free.clone()])).into_iter().collect(),
            // A key is never empty: the root cannot end it.
            |i, is_key| (!is_key && i > 0).then(|| space.clone()),
        )
    }

    /// One rule per node of a key trie (see [`key_trie`]), from the leaves
    /// up; returns the root's. A node's rule takes each of its edges
    /// (`edge(c)`, then the next node's rule), anything else that may follow
    /// (`others(taken)`, given the edges' characters), and `end(node,
    /// is_key)` when the text may end there.
    fn trie_rules(
        &mut self,
        name: &str,
        nodes: &[(Vec<(char, usize)>, bool)],
        edge: impl Fn(char) -> Expr,
        others: impl Fn(&Set) -> Vec<Expr>,
        end: impl Fn(usize, bool) -> Option<Expr>,
    ) -> Expr {
        let mut refs: Vec<Expr> = vec![Expr::empty(); nodes.len()];
        for i in (0..nodes.len()).rev() {
            let (next, is_key) = &nodes[i];
            let mut body: Vec<Expr> = next.iter().map(|&(c, j)| cat([edge(c), refs[j].clone()])).collect();
            let taken: Set = normalize(next.iter().map(|&(c, _)| (c, c)).collect());
            body.extend(others(&taken));
            body.extend(end(i, *is_key));
            refs[i] = self.g.rule(&format!("{name}-key"), Expr::alt(body));
        }
        refs.first().cloned().unwrap_or_else(Expr::empty)
    }

    // --- arrays ---------------------------------------------------------

    fn array(&mut self, name: &str, s: &Value, depth: usize) -> Expr {
        let mut min = count_of(s.get("minItems")).unwrap_or(0);
        let mut max = count_of(s.get("maxItems"));
        if max.is_some_and(|m| m < min) {
            self.warn(name, "maxItems below minItems; counts ignored");
            (min, max) = (0, None);
        }
        // A tuple (prefixItems, or draft 4's array `items`) and what may
        // follow it.
        let (prefix, rest): (&[Value], Option<&Value>) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(p)), rest) => (p, rest),
            (_, Some(Value::Array(p))) => (p, s.get("additionalItems")),
            (_, Some(items)) => (&[], Some(items)),
            (_, None) => (&[], Some(&Value::Bool(true))),
        };
        let rest = rest.filter(|r| **r != Value::Bool(false));
        let space = self.space();
        let comma = cat([lit(","), space.clone()]);
        let items: Vec<Expr> = prefix.iter().enumerate().map(|(i, p)| self.convert(&format!("{name}-{i}"), p, depth + 1)).collect();
        let rest = rest.map(|r| self.convert(&format!("{name}-item"), r, depth + 1));
        let p = items.len() as u64;
        let elements = if max == Some(0) {
            Expr::empty()
        } else if p == 0 {
            match rest {
                None => {
                    if min > 0 {
                        self.warn(name, "minItems with no items allowed");
                    }
                    Expr::empty()
                }
                Some(r) => {
                    let more = Expr::repeat(cat([comma.clone(), r.clone()]), count(min.saturating_sub(1)), max.map(|m| count(m - 1)));
                    let body = cat([r, more]);
                    if min == 0 {
                        Expr::opt(body)
                    } else {
                        body
                    }
                }
            }
        } else {
            // After all p tuple items: the rest, as many as the counts allow.
            let mut tail = match rest {
                Some(r) => Expr::repeat(cat([comma.clone(), r]), count(min.saturating_sub(p)), max.map(|m| count(m.saturating_sub(p)))),
                None => {
                    if min > p {
                        self.warn(name, "minItems beyond the tuple with no more items allowed");
                    }
                    Expr::empty()
                }
            };
            for i in (1..items.len()).rev() {
                if max.is_some_and(|m| i as u64 >= m) {
                    tail = Expr::empty();
                    continue;
                }
                let piece = cat([comma.clone(), items[i].clone(), tail]);
                tail = if (i as u64) < min { piece } else { Expr::opt(piece) };
            }
            let body = cat([items[0].clone(), tail]);
            if min == 0 {
                Expr::opt(body)
            } else {
                body
            }
        };
        cat([lit("["), space.clone(), elements, lit("]"), space])
    }

    // --- allOf ----------------------------------------------------------

    /// The schemas of `s` (itself and its allOf, recursively, `$ref`s
    /// followed) merged into one.
    fn merge_all(&self, s: &Value) -> Result<Value, String> {
        let mut parts = Vec::new();
        self.flatten(s, &mut parts, 0)?;
        let mut out: Vec<(String, Value)> = Vec::new();
        for part in parts {
            for (k, v) in part {
                merge_key(&mut out, k, v)?;
            }
        }
        Ok(Value::Object(out))
    }

    fn flatten(&self, s: &Value, parts: &mut Vec<Vec<(String, Value)>>, depth: usize) -> Result<(), String> {
        if depth > 32 {
            return Err("nested too deeply (or a $ref loop)".into());
        }
        match s {
            Value::Bool(true) => Ok(()),
            Value::Bool(false) => Err("contains the schema false".into()),
            Value::Object(members) => {
                if let Some(r) = s.get("$ref") {
                    let r = r.as_str().ok_or("$ref is not a string")?;
                    let target = self.resolve(r).ok_or_else(|| format!("$ref {r:?} not found"))?;
                    return self.flatten(target, parts, depth + 1);
                }
                parts.push(members.iter().filter(|(k, _)| k != "allOf" && !ANNOTATIONS.contains(&k.as_str())).cloned().collect());
                match s.get("allOf") {
                    None => Ok(()),
                    Some(Value::Array(list)) => list.iter().try_for_each(|x| self.flatten(x, parts, depth + 1)),
                    Some(_) => Err("allOf is not an array".into()),
                }
            }
            _ => Err("a schema must be an object or a boolean".into()),
        }
    }
}

/// Adds keyword `k` of one allOf part to the merged schema `out`.
fn merge_key(out: &mut Vec<(String, Value)>, k: String, v: Value) -> Result<(), String> {
    let Some(slot) = out.iter_mut().find(|(key, _)| *key == k) else {
        out.push((k, v));
        return Ok(());
    };
    let old = &mut slot.1;
    if *old == v {
        return Ok(());
    }
    let bigger = |a: &Value, b: &Value| -> Option<bool> { Some(a.as_f64()? >= b.as_f64()?) };
    match k.as_str() {
        "properties" => {
            let (Value::Object(have), Value::Object(add)) = (old, v) else {
                return Err("properties is not an object".into());
            };
            for (pk, pv) in add {
                match have.iter_mut().find(|(key, _)| *key == pk) {
                    Some(existing) if existing.1 == pv => {}
                    Some(existing) => {
                        let both = Value::Array(vec![core::mem::replace(&mut existing.1, Value::Null), pv]);
                        existing.1 = Value::Object(vec![("allOf".into(), both)]);
                    }
                    None => have.push((pk, pv)),
                }
            }
        }
        "required" => {
            let (Value::Array(have), Value::Array(add)) = (old, v) else {
                return Err("required is not an array".into());
            };
            for r in add {
                if !have.contains(&r) {
                    have.push(r);
                }
            }
        }
        "type" => {
            let names = |t: &Value| -> Vec<String> {
                match t {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(a) => a.iter().filter_map(Value::as_str).map(ToString::to_string).collect(),
                    _ => Vec::new(),
                }
            };
            let (a, b) = (names(old), names(&v));
            let mut both: Vec<Value> = Vec::new();
            for t in &a {
                for u in &b {
                    let meet = if t == u {
                        Some(t.as_str())
                    } else if (t == "integer" && u == "number") || (t == "number" && u == "integer") {
                        Some("integer")
                    } else {
                        None
                    };
                    if let Some(m) = meet {
                        let m = Value::String(m.into());
                        if !both.contains(&m) {
                            both.push(m);
                        }
                    }
                }
            }
            if both.is_empty() {
                return Err(format!("types {old} and {v} do not meet"));
            }
            *old = if both.len() == 1 { both.remove(0) } else { Value::Array(both) };
        }
        "minimum" | "exclusiveMinimum" | "minLength" | "minItems" => match bigger(&v, old) {
            Some(true) => *old = v,
            Some(false) => {}
            None => return Err(format!("conflicting {k}")),
        },
        "maximum" | "exclusiveMaximum" | "maxLength" | "maxItems" => match bigger(old, &v) {
            Some(true) => *old = v,
            Some(false) => {}
            None => return Err(format!("conflicting {k}")),
        },
        "additionalProperties" if v == Value::Bool(false) => *old = v,
        "additionalProperties" if *old == Value::Bool(false) => {}
        "enum" => {
            let (Value::Array(have), Value::Array(other)) = (old, v) else {
                return Err("enum is not an array".into());
            };
            have.retain(|x| other.contains(x));
            if have.is_empty() {
                return Err("no value in both enums".into());
            }
        }
        _ => return Err(format!("conflicting {k}")),
    }
    Ok(())
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |x: u8| (x as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

// ---------------------------------------------------------------------------
// Integer ranges

fn decimal(n: u64) -> Vec<u8> {
    let mut d: Vec<u8> = n.to_string().bytes().map(|b| b - b'0').collect();
    if d.is_empty() {
        d.push(0);
    }
    d
}

fn digit_lit(d: u8) -> Expr {
    Expr::Lit(char::from(b'0' + d).into())
}

fn digit_range(lo: u8, hi: u8) -> Expr {
    if lo == hi {
        digit_lit(lo)
    } else {
        Expr::class(&[(char::from(b'0' + lo), char::from(b'0' + hi))])
    }
}

/// Digit strings of equal length between `a` and `b` (inclusive).
fn same_length(a: &[u8], b: &[u8]) -> Expr {
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let prefix = cat(a[..i].iter().map(|&d| digit_lit(d)));
    if i == a.len() {
        return prefix;
    }
    let (x, y) = (a[i], b[i]);
    let (ra, rb) = (&a[i + 1..], &b[i + 1..]);
    let n = ra.len() as u32;
    let low_all = ra.iter().all(|&d| d == 0);
    let high_all = rb.iter().all(|&d| d == 9);
    let mut alts = Vec::new();
    if !low_all {
        alts.push(cat([digit_lit(x), same_length(ra, &vec![9; ra.len()])]));
    }
    let (mid_lo, mid_hi) = (if low_all { x } else { x + 1 }, if high_all { y } else { y - 1 });
    if mid_lo <= mid_hi {
        alts.push(cat([digit_range(mid_lo, mid_hi), Expr::repeat(digit(), n, Some(n))]));
    }
    if !high_all {
        alts.push(cat([digit_lit(y), same_length(&vec![0; rb.len()], rb)]));
    }
    cat([prefix, Expr::alt(alts)])
}

/// Texts (no sign, no leading zeros) of the integers `lo..=hi`; `hi: None`
/// is unbounded, up to [`MAX_DIGITS`] digits (or `lo`'s).
fn uint_range(lo: u64, hi: Option<u64>) -> Expr {
    let lo_len = decimal(lo).len() as u32;
    let mut alts = Vec::new();
    match hi {
        Some(hi) => {
            let hi_len = decimal(hi).len() as u32;
            for len in lo_len..=hi_len {
                let a = if len == lo_len { lo } else { 10u64.pow(len - 1) };
                let b = if len == hi_len { hi } else { 10u64.pow(len) - 1 };
                alts.push(same_length(&decimal(a), &decimal(b)));
            }
        }
        None => {
            alts.push(same_length(&decimal(lo), &vec![9; lo_len as usize]));
            if lo_len < MAX_DIGITS {
                alts.push(cat([Expr::class(&[('1', '9')]), Expr::repeat(digit(), lo_len, Some(MAX_DIGITS - 1))]));
            }
        }
    }
    Expr::alt(alts)
}

/// Texts of the integers in `lo..=hi` (None: unbounded); None if empty.
fn int_range(lo: Option<i64>, hi: Option<i64>) -> Option<Expr> {
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return None;
        }
    }
    let mut alts = Vec::new();
    if lo.is_none_or(|l| l < 0) {
        let from = match hi {
            Some(h) if h < 0 => h.unsigned_abs(),
            _ => 1,
        };
        alts.push(cat([lit("-"), uint_range(from, lo.map(i64::unsigned_abs))]));
    }
    if hi.is_none_or(|h| h >= 0) {
        alts.push(uint_range(lo.map_or(0, |l| l.max(0) as u64), hi.map(|h| h as u64)));
    }
    Some(Expr::alt(alts))
}

/// Unsigned decimal texts (integer part, optional fraction, no exponent)
/// of numbers from `lo` to `hi` (None: unbounded), `lo >= 0`. Exact for
/// integer bounds; a fractional bound limits the integer part only.
fn magnitude(lo: Bound, hi: Option<Bound>) -> Option<Expr> {
    let frac_any = Expr::opt(cat([lit("."), Expr::repeat(digit(), 1, Some(MAX_DIGITS))]));
    let frac_zero = Expr::opt(cat([lit("."), Expr::repeat(lit("0"), 1, Some(MAX_DIGITS))]));
    let frac_nonzero = cat([
        lit("."),
        Expr::repeat(lit("0"), 0, Some(MAX_DIGITS - 1)),
        Expr::class(&[('1', '9')]),
        Expr::repeat(digit(), 0, Some(MAX_DIGITS - 1)),
    ]);
    let (a, a_int) = (lo.value, is_integral(lo.value));
    // Integer parts followed by any fraction: from..=to.
    let from = if a_int && lo.exclusive { floor(a) + 1 } else { floor(a) };
    let (to, upper_edge) = match hi {
        None => (None, None),
        Some(b) if is_integral(b.value) => (Some(floor(b.value) - 1), (!b.exclusive).then_some(floor(b.value))),
        Some(b) => (Some(floor(b.value)), None),
    };
    let mut alts = Vec::new();
    if a_int && lo.exclusive && hi.is_none_or(|b| a < b.value) {
        alts.push(cat([same_length(&decimal(a as u64), &decimal(a as u64)), frac_nonzero]));
    }
    if to.is_none_or(|t| from <= t) {
        alts.push(cat([uint_range(from.max(0) as u64, to.map(|t| t as u64)), frac_any]));
    }
    if let Some(b) = upper_edge {
        if (b as f64) > a || (b as f64 == a && !lo.exclusive) {
            alts.push(cat([same_length(&decimal(b as u64), &decimal(b as u64)), frac_zero]));
        }
    }
    (!alts.is_empty()).then(|| Expr::alt(alts))
}

// ---------------------------------------------------------------------------
// Formats

fn format_expr(format: &str) -> Option<Expr> {
    let d = |n: u32| Expr::repeat(digit(), n, Some(n));
    let range = |a: char, b: char| Expr::class(&[(a, b)]);
    let date = || {
        cat([
            d(4),
            lit("-"),
            Expr::alt([cat([lit("0"), range('1', '9')]), cat([lit("1"), range('0', '2')])]),
            lit("-"),
            Expr::alt([cat([lit("0"), range('1', '9')]), cat([range('1', '2'), digit()]), cat([lit("3"), range('0', '1')])]),
        ])
    };
    let time = || {
        let hour = Expr::alt([cat([range('0', '1'), digit()]), cat([lit("2"), range('0', '3')])]);
        let minute = cat([range('0', '5'), digit()]);
        cat([
            hour.clone(),
            lit(":"),
            minute.clone(),
            lit(":"),
            minute.clone(),
            Expr::opt(cat([lit("."), Expr::repeat(digit(), 1, Some(9))])),
            Expr::alt([Expr::class(&[('Z', 'Z'), ('z', 'z')]), cat([Expr::class(&[('+', '+'), ('-', '-')]), hour, lit(":"), minute])]),
        ])
    };
    let hex = |n: u32| Expr::repeat(hex_digit(), n, Some(n));
    Some(match format {
        "date" => date(),
        "time" => time(),
        "date-time" => cat([date(), Expr::class(&[('T', 'T'), ('t', 't')]), time()]),
        "uuid" => cat([hex(8), lit("-"), hex(4), lit("-"), hex(4), lit("-"), hex(4), lit("-"), hex(12)]),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// Patterns: a regex (ECMA 262 syntax, the common subset) over the decoded
// string, turned into rules over its quoted text.

#[derive(Debug, Clone, PartialEq)]
enum Re {
    Set(Set),
    Seq(Vec<Re>),
    Alt(Vec<Re>),
    Repeat(Box<Re>, u32, Option<u32>),
    Start,
    End,
}

/// Characters `.` matches (all but line terminators).
fn dot() -> Set {
    complement(&[('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')])
}

fn class_escape(c: char) -> Option<Set> {
    let digits = vec![('0', '9')];
    let word = vec![('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')];
    let space = normalize(vec![
        ('\t', '\r'),
        (' ', ' '),
        ('\u{a0}', '\u{a0}'),
        ('\u{1680}', '\u{1680}'),
        ('\u{2000}', '\u{200a}'),
        ('\u{2028}', '\u{2029}'),
        ('\u{202f}', '\u{202f}'),
        ('\u{205f}', '\u{205f}'),
        ('\u{3000}', '\u{3000}'),
        ('\u{feff}', '\u{feff}'),
    ]);
    Some(match c {
        'd' => digits,
        'D' => complement(&digits),
        'w' => word,
        'W' => complement(&word),
        's' => space,
        'S' => complement(&space),
        _ => return None,
    })
}

struct ReParser {
    s: Vec<char>,
    at: usize,
    depth: usize,
}

type ReResult<T> = Result<T, &'static str>;

impl ReParser {
    fn peek(&self) -> Option<char> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.at += 1;
        }
        hit
    }

    fn alternation(&mut self) -> ReResult<Re> {
        let mut alts = vec![self.sequence()?];
        while self.eat('|') {
            alts.push(self.sequence()?);
        }
        Ok(if alts.len() == 1 { alts.pop().unwrap_or(Re::Seq(Vec::new())) } else { Re::Alt(alts) })
    }

    fn sequence(&mut self) -> ReResult<Re> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let atom = self.quantifier(atom)?;
            items.push(atom);
        }
        Ok(Re::Seq(items))
    }

    fn number(&mut self) -> Option<u64> {
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(d as u64);
            self.at += 1;
        }
        (self.at > start).then_some(n)
    }

    /// `{m}`, `{m,}`, `{m,n}` at the current `{`, or None (then `{` is a
    /// literal, as in JavaScript).
    fn braces(&mut self) -> Option<(u64, Option<u64>)> {
        let start = self.at;
        self.at += 1;
        let parsed = (|| {
            let m = self.number()?;
            if self.eat('}') {
                return Some((m, Some(m)));
            }
            if !self.eat(',') {
                return None;
            }
            let n = self.number();
            self.eat('}').then_some((m, n))
        })();
        if parsed.is_none() {
            self.at = start;
        }
        parsed
    }

    fn quantifier(&mut self, atom: Re) -> ReResult<Re> {
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => match self.braces() {
                Some((m, n)) => {
                    if n.is_some_and(|n| n < m) {
                        return Err("repetition {m,n} with n < m");
                    }
                    self.at -= 1; // Stand on the closing brace like the others.
                    (m, n)
                }
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        self.at += 1;
        if matches!(atom, Re::Start | Re::End) {
            return Err("a quantifier on an anchor");
        }
        // Lazy and possessive forms match the same strings.
        if !self.eat('?') {
            self.eat('+');
        }
        if matches!(self.peek(), Some('*' | '+' | '?')) {
            return Err("nothing to repeat");
        }
        Ok(Re::Repeat(Box::new(atom), count(min), max.map(count)))
    }

    fn atom(&mut self) -> ReResult<Re> {
        let c = self.peek().ok_or("unexpected end")?;
        self.at += 1;
        Ok(match c {
            '^' => Re::Start,
            '$' => Re::End,
            '.' => Re::Set(dot()),
            '*' | '+' | '?' => return Err("nothing to repeat"),
            '(' => {
                self.depth += 1;
                if self.depth > 64 {
                    return Err("groups nested too deeply");
                }
                if self.eat('?') {
                    if self.eat(':') {
                    } else if self.peek() == Some('<') && !matches!(self.s.get(self.at + 1), Some('=' | '!')) || self.peek() == Some('P') {
                        self.eat('P');
                        self.eat('<');
                        while let Some(c) = self.peek() {
                            self.at += 1;
                            if c == '>' {
                                break;
                            }
                        }
                    } else if matches!(self.peek(), Some('=' | '!' | '<')) {
                        return Err("lookaround is not supported");
                    } else {
                        return Err("group flags are not supported");
                    }
                }
                let inner = self.alternation()?;
                if !self.eat(')') {
                    return Err("unclosed group");
                }
                self.depth -= 1;
                inner
            }
            ')' => return Err("unbalanced )"),
            '[' => Re::Set(self.class()?),
            '\\' => self.escape(false)?,
            c => Re::Set(vec![(c, c)]),
        })
    }

    /// After `\`: a character or a class escape. `in_class`: `\b` is a
    /// backspace.
    fn escape(&mut self, in_class: bool) -> ReResult<Re> {
        let c = self.peek().ok_or("pattern ends with \\")?;
        self.at += 1;
        if let Some(set) = class_escape(c) {
            return Ok(Re::Set(set));
        }
        let single = |c: char| Ok(Re::Set(vec![(c, c)]));
        match c {
            'b' if in_class => single('\u{8}'),
            'b' | 'B' => Err("word boundaries are not supported"),
            '1'..='9' | 'k' => Err("backreferences are not supported"),
            'p' | 'P' => Err("Unicode property escapes are not supported"),
            'c' => Err("control escapes are not supported"),
            '0' => single('\0'),
            'n' => single('\n'),
            'r' => single('\r'),
            't' => single('\t'),
            'f' => single('\u{c}'),
            'v' => single('\u{b}'),
            'x' => {
                let n = self.hex(2).ok_or("bad \\x escape")?;
                single(char::from_u32(n).ok_or("bad \\x escape")?)
            }
            'u' => {
                let n = if self.eat('{') {
                    let start = self.at;
                    while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                        self.at += 1;
                    }
                    let digits: String = self.s[start..self.at].iter().collect();
                    if !self.eat('}') {
                        return Err("bad \\u{...} escape");
                    }
                    u32::from_str_radix(&digits, 16).map_err(|_| "bad \\u{...} escape")?
                } else {
                    let hi = self.hex(4).ok_or("bad \\u escape")?;
                    if (0xD800..0xDC00).contains(&hi) && self.s.get(self.at) == Some(&'\\') && self.s.get(self.at + 1) == Some(&'u') {
                        let save = self.at;
                        self.at += 2;
                        match self.hex(4) {
                            Some(lo) if (0xDC00..0xE000).contains(&lo) => 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00),
                            _ => {
                                self.at = save;
                                hi
                            }
                        }
                    } else {
                        hi
                    }
                };
                single(char::from_u32(n).ok_or("escape of a lone surrogate")?)
            }
            c if c.is_ascii_alphanumeric() => Err("unknown escape"),
            c => single(c),
        }
    }

    fn hex(&mut self, n: usize) -> Option<u32> {
        let mut v = 0;
        for _ in 0..n {
            let d = self.peek()?.to_digit(16)?;
            v = v * 16 + d;
            self.at += 1;
        }
        Some(v)
    }

    /// After `[`: the class's characters.
    fn class(&mut self) -> ReResult<Set> {
        let negated = self.eat('^');
        let mut set: Set = Vec::new();
        if self.peek() == Some(']') {
            self.at += 1;
            // JavaScript: `[]` matches nothing, `[^]` anything.
            return if negated { Ok(complement(&[])) } else { Err("empty class []") };
        }
        loop {
            let c = self.peek().ok_or("unclosed class")?;
            if c == ']' {
                self.at += 1;
                break;
            }
            let first = self.class_atom()?;
            let single = |s: &Set| (s.len() == 1 && s[0].0 == s[0].1).then(|| s[0].0);
            // A range `a-z` (a `-` before `]` is a literal).
            if self.peek() == Some('-') && self.s.get(self.at + 1).is_some_and(|&n| n != ']') {
                self.at += 1;
                let second = self.class_atom()?;
                match (single(&first), single(&second)) {
                    (Some(a), Some(b)) if a <= b => set.push((a, b)),
                    (Some(_), Some(_)) => return Err("range out of order in class"),
                    _ => return Err("class escape in a range"),
                }
            } else {
                set.extend(first);
            }
        }
        let set = normalize(set);
        Ok(if negated { complement(&set) } else { set })
    }

    fn class_atom(&mut self) -> ReResult<Set> {
        let c = self.peek().ok_or("unclosed class")?;
        self.at += 1;
        if c == '\\' {
            match self.escape(true)? {
                Re::Set(s) => Ok(s),
                _ => Err("bad escape in class"),
            }
        } else {
            Ok(vec![(c, c)])
        }
    }
}

/// Parses a pattern; unanchored ends become "any text" (a JSON schema
/// pattern matches anywhere in the string).
fn parse_regex(pattern: &str) -> ReResult<Re> {
    if pattern.len() > MAX_PATTERN {
        return Err("pattern too long");
    }
    let mut p = ReParser { s: pattern.chars().collect(), at: 0, depth: 0 };
    let re = p.alternation()?;
    if p.at < p.s.len() {
        return Err("unbalanced )");
    }
    let branches = match re {
        Re::Alt(branches) => branches,
        other => vec![other],
    };
    let any = Re::Repeat(Box::new(Re::Set(complement(&[]))), 0, None);
    let mut out = Vec::new();
    for branch in branches {
        let mut items = match branch {
            Re::Seq(items) => items,
            other => vec![other],
        };
        let starts = items.first() == Some(&Re::Start);
        if starts {
            items.remove(0);
        }
        let ends = items.last() == Some(&Re::End);
        if ends {
            items.pop();
        }
        if items.iter().any(has_anchor) {
            return Err("anchors inside the pattern are not supported");
        }
        if !starts {
            items.insert(0, any.clone());
        }
        if !ends {
            items.push(any.clone());
        }
        out.push(Re::Seq(items));
    }
    Ok(Re::Alt(out))
}

fn has_anchor(re: &Re) -> bool {
    match re {
        Re::Start | Re::End => true,
        Re::Set(_) => false,
        Re::Seq(items) | Re::Alt(items) => items.iter().any(has_anchor),
        Re::Repeat(inner, _, _) => has_anchor(inner),
    }
}

/// The quoted text of strings matching `re`, inside `quote`.
fn re_expr(p: &mut Prims<'_, '_>, re: &Re, quote: char, python: bool) -> Expr {
    match re {
        Re::Set(set) => {
            let e = encode_set(set, quote, python);
            // Encoded classes with escapes are shared rules (`.` is common).
            if matches!(e, Expr::Alt(_)) {
                p.g.rule("pattern-char", e)
            } else {
                e
            }
        }
        Re::Seq(items) => cat(items.iter().map(|r| re_expr(p, r, quote, python))),
        Re::Alt(items) => Expr::alt(items.iter().map(|r| re_expr(p, r, quote, python))),
        Re::Repeat(inner, min, max) => Expr::repeat(re_expr(p, inner, quote, python), *min, *max),
        Re::Start | Re::End => Expr::empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(schema: &str) -> (Grammar, Vec<String>) {
        let mut g = Grammar::new();
        let mut w = Vec::new();
        let v = Value::parse(schema).unwrap();
        let e = schema_rule(&mut g, "root-schema", &v, &SchemaOptions::default(), &mut w);
        g.define("root", e);
        (g, w)
    }

    #[test]
    fn integer_ranges_are_exact() {
        // Checked against a naive membership test over a window of values.
        fn matches(e: &Expr, text: &str) -> bool {
            fn go<'t>(e: &Expr, t: &'t str) -> Vec<&'t str> {
                match e {
                    Expr::Lit(s) => t.strip_prefix(s.as_str()).into_iter().collect(),
                    Expr::Class { negated, ranges } => {
                        let mut it = t.chars();
                        match it.next() {
                            Some(c) if contains(ranges, c) != *negated => vec![it.as_str()],
                            _ => vec![],
                        }
                    }
                    Expr::Seq(items) => {
                        let mut cur = vec![t];
                        for item in items {
                            cur = cur.iter().flat_map(|r| go(item, r)).collect();
                        }
                        cur
                    }
                    Expr::Alt(items) => items.iter().flat_map(|i| go(i, t)).collect(),
                    Expr::Repeat { expr, min, max } => {
                        let mut out = Vec::new();
                        let mut cur = vec![t];
                        for n in 0..=max.unwrap_or(40) {
                            if n >= *min {
                                out.extend(cur.iter().copied());
                            }
                            cur = cur.iter().flat_map(|r| go(expr, r)).collect();
                            if cur.is_empty() {
                                break;
                            }
                        }
                        out
                    }
                    Expr::Ref(_) => vec![],
                }
            }
            go(e, text).contains(&"")
        }
        let cases: &[(Option<i64>, Option<i64>)] = &[
            (Some(0), None),
            (Some(1), None),
            (Some(-5), Some(5)),
            (Some(17), Some(342)),
            (Some(-342), Some(-17)),
            (None, Some(-3)),
            (None, Some(120)),
            (Some(100), Some(100)),
            (Some(99), Some(1000)),
            (Some(0), Some(9)),
            (Some(1), Some(10)),
        ];
        for &(lo, hi) in cases {
            let e = int_range(lo, hi).unwrap();
            for v in -1100i64..=1100 {
                let want = lo.is_none_or(|l| v >= l) && hi.is_none_or(|h| v <= h);
                assert_eq!(matches(&e, &v.to_string()), want, "{v} in {lo:?}..={hi:?}");
            }
            assert!(!matches(&e, "01") && !matches(&e, "-0") && !matches(&e, "+1"));
        }
        assert!(int_range(Some(3), Some(2)).is_none());
        let big = int_range(Some(5), None).unwrap();
        assert!(matches(&big, "1234567890123456") && !matches(&big, "12345678901234567"));
        // Numbers with integer bounds.
        let unit = magnitude(Bound { value: 0.0, exclusive: false }, Some(Bound { value: 1.0, exclusive: false })).unwrap();
        for (t, ok) in [("0", true), ("0.25", true), ("1", true), ("1.0", true), ("1.5", false), ("2", false)] {
            assert_eq!(matches(&unit, t), ok, "{t}");
        }
        let open = magnitude(Bound { value: 0.0, exclusive: true }, Some(Bound { value: 2.0, exclusive: true })).unwrap();
        for (t, ok) in [("0", false), ("0.0", false), ("0.01", true), ("1.99", true), ("2", false), ("2.0", false)] {
            assert_eq!(matches(&open, t), ok, "{t}");
        }
    }

    #[test]
    fn regex_translation_and_unsupported_syntax() {
        assert!(parse_regex("^[a-z]+(?:-[a-z0-9]+)*$").is_ok());
        assert!(parse_regex(r"^\d{3}-\d{4}$").is_ok());
        assert!(parse_regex("^a{2,}b{,3}$").is_ok()); // `{,3}` is literal text
        for bad in [r"(a)\1", "(?=a)", "(?<!a)b", r"\bword", "a^b", "(?i)abc", "[z-a]", "(a", "a)", "*a", r"\p{L}"] {
            assert!(parse_regex(bad).is_err(), "{bad}");
        }
        let (g, w) = convert(r#"{"type": "string", "pattern": "(a)\\1"}"#);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("backreferences"));
        assert_eq!(g.get("root"), Some(&Expr::Ref("string".into())));
    }

    #[test]
    fn hostile_schemas_stay_bounded() {
        let (g, w) = convert(r#"{"type": "string", "minLength": 1e9, "maxLength": 1e300}"#);
        assert!(w.is_empty(), "{w:?}");
        assert!(g.to_gbnf().contains("{1000000000,2147483647}"), "{}", g.to_gbnf());
        // A $ref loop and a self-alias.
        let (_, w) = convert(r##"{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}"##);
        assert!(w.iter().any(|w| w.contains("refers to itself")), "{w:?}");
        // Exponential anyOf nesting stops at the work limit.
        let mut s = String::from("{\"type\": \"integer\"}");
        for _ in 0..40 {
            s = format!("{{\"anyOf\": [{s}, {s}], \"minimum\": 1}}");
            if s.len() > 1 << 20 {
                break;
            }
        }
        let (_, w) = convert(&s);
        assert!(w.len() <= 3, "{w:?}");
    }

    /// A deterministic stream of pseudo-random numbers (xorshift).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// A random schema-shaped value built from schema keywords.
    fn random_schema(r: &mut Rng, depth: usize) -> Value {
        const KEYS: &[&str] = &[
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "minLength",
            "maxLength",
            "pattern",
            "format",
            "enum",
            "const",
            "anyOf",
            "oneOf",
            "allOf",
            "$ref",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "nullable",
            "$defs",
            "not",
        ];
        const ATOMS: &[&str] = &[
            "\"string\"",
            "\"integer\"",
            "\"number\"",
            "\"object\"",
            "\"array\"",
            "\"null\"",
            "[\"string\",\"null\"]",
            "true",
            "false",
            "0",
            "-1",
            "3",
            "1e300",
            "2.5",
            "\"#\"",
            "\"#/$defs/a\"",
            "\"#/$defs/b\"",
            "\"#/nope\"",
            "\"^[a-z]+$\"",
            "\"(a|b)*c{2,3}\"",
            "\"date-time\"",
            "\"uuid\"",
            "[\"a\"]",
            "{}",
            "[]",
            "null",
            "\"[\"",
            "\"(?=x)\"",
        ];
        if depth == 0 || r.next(4) == 0 {
            return Value::parse(ATOMS[r.next(ATOMS.len())]).unwrap_or(Value::Null);
        }
        match r.next(3) {
            0 => Value::Array((0..r.next(4)).map(|_| random_schema(r, depth - 1)).collect()),
            _ => Value::Object(
                (0..1 + r.next(5))
                    .map(|_| {
                        let k = KEYS[r.next(KEYS.len())];
                        let v = match k {
                            "properties" | "$defs" => Value::Object(
                                (0..r.next(4)).map(|i| (["a", "b", "c", "a b"][i].into(), random_schema(r, depth - 1))).collect(),
                            ),
                            "required" => Value::parse("[\"a\", \"c\"]").unwrap_or(Value::Null),
                            _ => random_schema(r, depth - 1),
                        };
                        (k.into(), v)
                    })
                    .collect(),
            ),
        }
    }

    fn collect_refs(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::Ref(n) => out.push(n.clone()),
            Expr::Seq(v) | Expr::Alt(v) => v.iter().for_each(|x| collect_refs(x, out)),
            Expr::Repeat { expr, .. } => collect_refs(expr, out),
            _ => {}
        }
    }

    #[test]
    fn random_schemas_never_panic_and_stay_small() {
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        for i in 0..3000 {
            let schema = random_schema(&mut r, 5);
            for python in [false, true] {
                let mut g = Grammar::new();
                let mut w = Vec::new();
                let e = schema_rule(&mut g, "s", &schema, &SchemaOptions { python, ..Default::default() }, &mut w);
                g.define("root", e);
                let text = g.to_gbnf();
                assert!(text.len() < 4_000_000, "#{i}: {} bytes for {schema}", text.len());
                for name in g.names() {
                    let mut refs = Vec::new();
                    if let Some(body) = g.get(name) {
                        collect_refs(body, &mut refs);
                    }
                    for r in refs {
                        assert!(g.get(&r).is_some(), "#{i}: rule {name} refers to missing {r}, schema {schema}");
                    }
                }
            }
        }
        // Random patterns: parsed or refused, never a panic.
        const BITS: &[&str] = &[
            "a", "\\d", "[", "]", "(", ")", "|", "*", "+", "?", "{2,3}", "{", "}", "^", "$", ".", "\\", "-", "[^a-c]", "(?:", "\\u00e9",
            "é", "\\b", "\\1",
        ];
        for _ in 0..20_000 {
            let p: String = (0..r.next(12)).map(|_| BITS[r.next(BITS.len())]).collect();
            let _ = parse_regex(&p);
        }
    }

    #[test]
    fn bare_key_class_is_the_scanners_set() {
        for c in (0u8..=0x7f).map(char::from).chain(['é', '日']) {
            let in_class = BARE_KEY_SET.iter().any(|&(lo, hi)| (lo..=hi).contains(&c));
            assert_eq!(in_class, bare_key_char(c), "{c:?}");
        }
    }

    #[test]
    fn python_literals() {
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a'\"b"), "'a\\'\"b'");
        assert_eq!(py_repr("x\n\u{1}\\"), "'x\\n\\x01\\\\'");
    }
}
