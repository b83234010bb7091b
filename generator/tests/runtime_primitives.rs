//! The runtime's allocation-free primitives, which generated parsers use,
//! checked against the generator's reference implementations by property
//! tests: the JSON scanner against the reference interpreter's scanner (on
//! random JSON and Python values, mutated or not, in random chunks), JSON
//! escaping against the interpreter's `json_escape` and serde_json, UTF-8
//! carrying against `String::from_utf8_lossy`, and marker search against a
//! naive search.

use chat_parser_runtime::escape::json_escape;
use chat_parser_runtime::holdback::{find_first, partial_suffix_len};
use chat_parser_runtime::json::{JsonScanner, Scan};
use chat_parser_runtime::utf8::Utf8Carry;
use proptest::collection::vec;
use proptest::prelude::*;

/// What the reference scanner's source calls as `crate::interp::json_escape`.
mod interp {
    pub use chat_parser_generator::interp::json_escape;
}

/// The reference scanner: the interpreter's private `json` module, compiled
/// here from its source so that the comparison follows it as it changes.
/// (`rustfmt::skip`: formatting this file must not reformat that one.)
#[path = "support/reference_json_scanner.rs"]
#[rustfmt::skip]
mod reference;

// ---------------------------------------------------------------------------
// Random values, rendered as JSON or as Python literals.

/// One character's worth of string content, renderable in every quoting.
#[derive(Debug, Clone)]
enum Piece {
    /// A character needing no escape in any quoting.
    Plain(char),
    /// `\` and one of `"\/bfnrt`.
    Escape(char),
    /// `\uXXXX` (no surrogates, so serde_json accepts it).
    Hex(u16),
    DoubleQuote,
    SingleQuote,
    /// A control character: escaped in JSON, raw in a Python string.
    Control(char),
}

#[derive(Debug, Clone)]
enum Value {
    /// `true`, `false`, `null` by index; `python_word` spells it the Python
    /// way in Python mode.
    Word {
        which: usize,
        python_word: bool,
    },
    Number(String),
    /// `single` quotes it with `'` in Python mode.
    Str {
        pieces: Vec<Piece>,
        single: bool,
    },
    /// Items with the whitespace before and after each, then inside `[]`.
    Array(Vec<(String, Value, String)>, String),
    /// Members: whitespace, key, whitespace, whitespace, value, whitespace.
    Object(Vec<(String, Value, String, String, Value, String)>, String),
}

fn render(v: &Value, python: bool, out: &mut String) {
    match v {
        Value::Word { which, python_word } => {
            let words = if python && *python_word {
                ["True", "False", "None"]
            } else {
                ["true", "false", "null"]
            };
            out.push_str(words[*which]);
        }
        Value::Number(n) => out.push_str(n),
        Value::Str { pieces, single } => {
            let single = python && *single;
            let quote = if single { '\'' } else { '"' };
            out.push(quote);
            for piece in pieces {
                match piece {
                    Piece::Plain(c) => out.push(*c),
                    Piece::Escape(c) => {
                        out.push('\\');
                        out.push(*c);
                    }
                    Piece::Hex(h) => out.push_str(&format!("\\u{h:04X}")),
                    Piece::DoubleQuote if single => out.push('"'),
                    Piece::DoubleQuote => out.push_str("\\\""),
                    Piece::SingleQuote if single => out.push_str("\\'"),
                    Piece::SingleQuote => out.push('\''),
                    Piece::Control(c) if single => out.push(*c),
                    Piece::Control(c) => out.push_str(&interp::json_escape(&c.to_string())),
                }
            }
            out.push(quote);
        }
        Value::Array(items, inside) => {
            out.push('[');
            for (i, (before, item, after)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(before);
                render(item, python, out);
                out.push_str(after);
            }
            if items.is_empty() {
                out.push_str(inside);
            }
            out.push(']');
        }
        Value::Object(members, inside) => {
            out.push('{');
            for (i, (ws1, key, ws2, ws3, value, ws4)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws1);
                render(key, python, out);
                out.push_str(ws2);
                out.push(':');
                out.push_str(ws3);
                render(value, python, out);
                out.push_str(ws4);
            }
            if members.is_empty() {
                out.push_str(inside);
            }
            out.push('}');
        }
    }
}

fn rendered(v: &Value, python: bool) -> String {
    let mut out = String::new();
    render(v, python, &mut out);
    out
}

fn whitespace() -> impl Strategy<Value = String> {
    "[ \t\r\n]{0,2}"
}

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => "[a-zA-Z0-9 <>/{}\\[\\],:é€😀]".prop_map(|s| Piece::Plain(s.chars().next().unwrap_or('a'))),
        1 => "[\"\\\\/bfnrt]".prop_map(|s| Piece::Escape(s.chars().next().unwrap_or('n'))),
        1 => (0u16..0xd800).prop_map(Piece::Hex),
        1 => Just(Piece::DoubleQuote),
        1 => Just(Piece::SingleQuote),
        1 => "[\\x00-\\x1f]".prop_map(|s| Piece::Control(s.chars().next().unwrap_or('\n'))),
    ]
}

fn string() -> impl Strategy<Value = Value> {
    (vec(piece(), 0..8), any::<bool>()).prop_map(|(pieces, single)| Value::Str { pieces, single })
}

fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        (0usize..3, any::<bool>())
            .prop_map(|(which, python_word)| Value::Word { which, python_word }),
        "-?(0|[1-9][0-9]{0,4})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,2})?".prop_map(Value::Number),
        string(),
    ];
    leaf.prop_recursive(5, 48, 5, |inner| {
        prop_oneof![
            (
                vec((whitespace(), inner.clone(), whitespace()), 0..5),
                whitespace()
            )
                .prop_map(|(items, inside)| Value::Array(items, inside)),
            (
                vec(
                    (
                        whitespace(),
                        string(),
                        whitespace(),
                        whitespace(),
                        inner,
                        whitespace()
                    ),
                    0..5
                ),
                whitespace()
            )
                .prop_map(|(members, inside)| Value::Object(members, inside)),
        ]
    })
}

/// Text after the value: often something a parser would see after
/// arguments, sometimes more JSON.
fn trailing() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" ".to_string()),
        Just("</tool_call>".to_string()),
        "[ ,:}\\]x0-9.eE]{0,3}"
    ]
}

/// Edits that break (or sometimes keep) the syntax: (where, what) pairs;
/// `where` is a fraction of the character count.
fn mutations() -> impl Strategy<Value = Vec<(f64, u8, char)>> {
    vec(
        (
            0.0..1.0f64,
            0u8..3,
            prop::sample::select(MUTATION_CHARS.to_vec()),
        ),
        0..3,
    )
}

const MUTATION_CHARS: &[char] = &[
    '{', '}', '[', ']', ',', ':', '"', '\'', '\\', '0', '1', '-', '.', 'e', 'E', '+', 't', 'T',
    'N', 'u', 'x', ' ', 'é', '\n', '\u{1}',
];

fn mutate(text: &str, edits: &[(f64, u8, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(at, op, c) in edits {
        let i = ((at * chars.len() as f64) as usize).min(chars.len());
        match op {
            0 if i < chars.len() => {
                chars.remove(i);
            }
            1 if i < chars.len() => chars[i] = c,
            _ => chars.insert(i, c),
        }
    }
    chars.into_iter().collect()
}

// ---------------------------------------------------------------------------
// Running both scanners the same way.

/// Per call: bytes consumed, result, output.
type Trace = Vec<(usize, String, String)>;

/// Feeds `text` in chunks of the given sizes (cycled, moved forward to
/// character boundaries), as the interpreter does, until the value ends.
fn drive(
    text: &str,
    chunks: &[usize],
    mut scan: impl FnMut(&str, bool) -> (usize, String, String),
) -> Trace {
    let mut trace = Vec::new();
    let (mut pos, mut fed) = (0, 0);
    for &chunk in chunks.iter().cycle() {
        fed = (fed + chunk.max(1)).min(text.len());
        while !text.is_char_boundary(fed) {
            fed += 1;
        }
        let last = fed == text.len();
        let step = scan(&text[pos..fed], last);
        pos += step.0;
        let more = step.1 == "NeedMore" && !last;
        trace.push(step);
        if !more {
            break;
        }
        assert_eq!(pos, fed, "NeedMore consumes the whole text");
    }
    trace
}

fn reference_trace(text: &str, chunks: &[usize], python: bool, object_only: bool) -> Trace {
    let mut scanner = reference::JsonScanner::new(python, object_only);
    drive(text, chunks, |piece, last| {
        let (n, r) = scanner.scan(piece, last);
        (n, format!("{r:?}"), scanner.take_output())
    })
}

fn runtime_trace(text: &str, chunks: &[usize], python: bool, object_only: bool) -> Trace {
    let mut scanner = JsonScanner::new(python, object_only);
    drive(text, chunks, |piece, last| {
        let mut out = String::new();
        let (n, r) = scanner.scan(piece, last, &mut |p: &str| {
            assert!(!p.is_empty(), "empty output piece");
            out.push_str(p);
        });
        (n, format!("{r:?}"), out)
    })
}

fn consumed(trace: &Trace) -> usize {
    trace.iter().map(|t| t.0).sum()
}

fn output(trace: &Trace) -> String {
    trace.iter().map(|t| t.2.as_str()).collect()
}

fn chunk_sizes() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![vec(1usize..12, 1..8), Just(vec![usize::MAX / 2])]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Valid values: the same calls as the reference; the whole value is
    /// consumed; the output is the value's JSON rendering (Python literals
    /// converted), which serde_json accepts.
    #[test]
    fn json_scanner_matches_the_reference_on_values(
        v in value(),
        python in any::<bool>(),
        object_only in any::<bool>(),
        tail in trailing(),
        chunks in chunk_sizes(),
    ) {
        let value_text = rendered(&v, python);
        let text = format!("{value_text}{tail}");
        let want = reference_trace(&text, &chunks, python, object_only);
        let got = runtime_trace(&text, &chunks, python, object_only);
        prop_assert_eq!(&got, &want, "text {:?}", text);
        let is_object = matches!(v, Value::Object(..));
        if !object_only || is_object {
            let done = &got.last().unwrap().1;
            // A number at the end of the text, followed by more digits or
            // an exponent, reads on; otherwise the value ends where it ends.
            let number_reads_on = matches!(v, Value::Number(_)) && tail.starts_with(|c: char| c.is_ascii_digit() || ".eE".contains(c));
            if !number_reads_on {
                prop_assert_eq!(done.as_str(), "Done", "text {:?}", text);
                prop_assert_eq!(consumed(&got), value_text.len());
                let json = rendered(&v, false);
                prop_assert_eq!(output(&got), json.clone());
                prop_assert!(serde_json::from_str::<serde_json::Value>(&json).is_ok(), "serde_json rejects {:?}", json);
            }
        } else {
            prop_assert_eq!(got.last().unwrap().1.as_str(), "Invalid");
        }
    }

    /// Arguments written as a JSON string holding the object (serde_json's
    /// encoding of its text), whole or mutated: the same calls as the
    /// reference; unmutated, the object's JSON is reported and the string
    /// consumed to its closing quote.
    #[test]
    fn json_scanner_matches_the_reference_on_arguments_in_a_string(
        v in value(),
        python in any::<bool>(),
        edits in mutations(),
        mutated in any::<bool>(),
        chunks in chunk_sizes(),
    ) {
        let object = match v {
            Value::Object(..) => v,
            other => {
                let key = Value::Str { pieces: vec![Piece::Plain('k')], single: false };
                Value::Object(vec![(String::new(), key, String::new(), " ".to_string(), other, String::new())], String::new())
            }
        };
        let encoded = serde_json::to_string(&rendered(&object, python)).unwrap();
        let text = if mutated { mutate(&encoded, &edits) } else { format!("{encoded}, ") };
        let want = reference_trace(&text, &chunks, python, true);
        let got = runtime_trace(&text, &chunks, python, true);
        prop_assert_eq!(&got, &want, "text {:?}", text);
        if !mutated {
            prop_assert_eq!(got.last().unwrap().1.as_str(), "Done", "text {:?}", text);
            prop_assert_eq!(consumed(&got), encoded.len());
            prop_assert_eq!(output(&got), rendered(&object, false));
        }
    }

    /// Broken values: the same decisions, positions and output as the
    /// reference, call by call.
    #[test]
    fn json_scanner_matches_the_reference_on_mutated_values(
        v in value(),
        python in any::<bool>(),
        object_only in any::<bool>(),
        edits in mutations(),
        tail in trailing(),
        chunks in chunk_sizes(),
    ) {
        let text = mutate(&format!("{}{tail}", rendered(&v, python)), &edits);
        let want = reference_trace(&text, &chunks, python, object_only);
        let got = runtime_trace(&text, &chunks, python, object_only);
        prop_assert_eq!(&got, &want, "text {:?}", text);
    }

    /// Arbitrary short text from JSON's alphabet (most of it invalid).
    #[test]
    fn json_scanner_matches_the_reference_on_noise(
        text in "[ {}\\[\\],:\"'\\\\0-9.eE+\\-tTrueFalsNn\\x01é]{0,16}",
        python in any::<bool>(),
        chunks in chunk_sizes(),
    ) {
        prop_assert_eq!(runtime_trace(&text, &chunks, python, false), reference_trace(&text, &chunks, python, false));
    }

    /// The escaped text is the interpreter's, and decodes back to the text.
    #[test]
    fn json_escape_round_trips(text in prop_oneof![any::<String>(), "[\\x00-\\x1f\\x7f\"\\\\a-zé😀 ]{0,40}"]) {
        let mut escaped = String::new();
        json_escape(&text, &mut |p: &str| {
            assert!(!p.is_empty());
            escaped.push_str(p);
        });
        prop_assert_eq!(&escaped, &interp::json_escape(&text));
        let back: String = serde_json::from_str(&format!("\"{escaped}\"")).unwrap();
        prop_assert_eq!(back, text);
    }

    /// Any chunking of any bytes decodes like the whole stream, lossily.
    #[test]
    fn utf8_carry_decodes_like_from_utf8_lossy(
        text in "[a-zé€😀\u{10FFFF}]{0,12}",
        junk in vec((0.0..1.0f64, any::<u8>()), 0..4),
        chunks in vec(1usize..6, 1..6),
    ) {
        let mut bytes = text.into_bytes();
        for (at, b) in junk {
            let i = ((at * bytes.len() as f64) as usize).min(bytes.len());
            bytes.insert(i, b);
        }
        let mut carry = Utf8Carry::new();
        let mut decoded = String::new();
        let (mut at, mut i) = (0, 0);
        while at < bytes.len() {
            let n = chunks[i % chunks.len()].min(bytes.len() - at);
            carry.split(&bytes[at..at + n]).for_each(|p| decoded.push_str(p));
            prop_assert!(carry.pending().len() <= 3);
            at += n;
            i += 1;
        }
        decoded.push_str(carry.finish());
        prop_assert_eq!(decoded, String::from_utf8_lossy(&bytes).into_owned());
    }

    /// The one-pass marker search and the holdback length agree with the
    /// obvious quadratic definitions.
    #[test]
    fn holdback_matches_naive_search(text in "[<>/ab]{0,24}", stops in vec("[<>/ab]{0,5}", 0..4)) {
        let stops: Vec<&[u8]> = stops.iter().map(|s| s.as_bytes()).collect();
        let text = text.as_bytes();
        let naive_first = (0..=text.len()).find_map(|at| {
            stops.iter().position(|s| !s.is_empty() && text[at..].starts_with(s)).map(|i| (at, i))
        });
        prop_assert_eq!(find_first(text, &stops), naive_first);
        let naive_partial = (0..=text.len())
            .filter(|&n| stops.iter().any(|s| n < s.len() && s.starts_with(&text[text.len() - n..])))
            .max()
            .unwrap_or(0);
        prop_assert_eq!(partial_suffix_len(text, &stops), naive_partial);
    }
}

#[test]
fn nesting_deeper_than_the_runtime_limit_is_invalid_there_only() {
    let depth = chat_parser_runtime::json::MAX_DEPTH as usize;
    for (n, want) in [(depth, Scan::Done), (depth + 1, Scan::Invalid)] {
        let text = format!("{}{}", "[".repeat(n), "]".repeat(n));
        let mut scanner = JsonScanner::new(false, false);
        assert_eq!(
            scanner.scan(&text, true, &mut |_: &str| {}).1,
            want,
            "depth {n}"
        );
        assert_eq!(
            reference_trace(&text, &[1000], false, false)
                .last()
                .unwrap()
                .1,
            "Done"
        );
    }
}
