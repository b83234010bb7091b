//! Grammars that constrain decoding: a small context-free grammar type with
//! two renderings, llama.cpp's GBNF and llguidance's Lark.
//!
//! A generated module describes its output format as an [`envelope`]; the
//! envelope plus the request (tools, `tool_choice`, parallel calls, a JSON
//! schema for the reply) become a [`Grammar`]. Tool arguments follow each
//! tool's JSON schema ([`schema`]). The same code runs at build time (the
//! static `GBNF`/`LARK` constants of a generated module, for generic JSON
//! arguments) and at run time (a grammar for the request's own tools), so the
//! two cannot differ.
//!
//! The grammar is over characters: a [`Expr::Class`] matches one character,
//! a [`Expr::Lit`] a fixed string. Rules are named; [`Grammar::rule`] gives
//! each new rule a unique name and reuses an identical one.
//!
//! # Example
//! ```
//! use chat_parser_runtime::grammar::{Expr, Grammar};
//! let mut g = Grammar::new();
//! let digit = g.rule("digit", Expr::class(&[('0', '9')]));
//! g.define("root", Expr::seq([Expr::lit("n="), Expr::plus(digit)]));
//! assert_eq!(g.to_gbnf(), "root ::= \"n=\" digit+\ndigit ::= [0-9]\n");
//! assert!(g.to_lark().starts_with("start: root\n"));
//! ```

pub mod request;
pub mod schema;
pub mod value;

use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt::Write;

/// An expression of a grammar rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Exactly this text (`""` matches nothing).
    Lit(String),
    /// One character in (or, `negated`, not in) these inclusive ranges.
    Class { negated: bool, ranges: Vec<(char, char)> },
    /// Another rule, by name.
    Ref(String),
    /// Each in order.
    Seq(Vec<Expr>),
    /// Any one of these.
    Alt(Vec<Expr>),
    /// `min` to `max` (`None`: any number of) repetitions.
    Repeat { expr: Box<Expr>, min: u32, max: Option<u32> },
}

impl Expr {
    /// Exactly `s`.
    pub fn lit(s: impl Into<String>) -> Expr {
        Expr::Lit(s.into())
    }
    /// Matches the empty string.
    pub fn empty() -> Expr {
        Expr::Lit(String::new())
    }
    /// One character in these ranges.
    pub fn class(ranges: &[(char, char)]) -> Expr {
        Expr::Class { negated: false, ranges: ranges.to_vec() }
    }
    /// One character outside these ranges.
    pub fn not_class(ranges: &[(char, char)]) -> Expr {
        Expr::Class { negated: true, ranges: ranges.to_vec() }
    }
    /// One character other than these.
    pub fn not_chars(chars: &[char]) -> Expr {
        Expr::Class { negated: true, ranges: chars.iter().map(|&c| (c, c)).collect() }
    }
    /// A sequence, flattened, without empty literals.
    pub fn seq(items: impl IntoIterator<Item = Expr>) -> Expr {
        let mut flat: Vec<Expr> = Vec::new();
        for e in items {
            let parts = match e {
                Expr::Seq(inner) => inner,
                other => vec![other],
            };
            // Literals are not joined: a caller may have split one into
            // characters on purpose (see `Grammar::text_without`).
            flat.extend(parts.into_iter().filter(|p| !p.is_empty()));
        }
        match flat.len() {
            0 => Expr::empty(),
            1 => flat.pop().unwrap_or_else(Expr::empty),
            _ => Expr::Seq(flat),
        }
    }
    /// Any one of these (flattened; duplicates dropped).
    pub fn alt(items: impl IntoIterator<Item = Expr>) -> Expr {
        let mut flat: Vec<Expr> = Vec::new();
        for e in items {
            let parts = match e {
                Expr::Alt(inner) => inner,
                other => vec![other],
            };
            for p in parts {
                if !flat.contains(&p) {
                    flat.push(p);
                }
            }
        }
        match flat.len() {
            0 => Expr::empty(),
            1 => flat.pop().unwrap_or_else(Expr::empty),
            _ => Expr::Alt(flat),
        }
    }
    /// Zero or one.
    pub fn opt(e: Expr) -> Expr {
        Expr::repeat(e, 0, Some(1))
    }
    /// Zero or more.
    pub fn star(e: Expr) -> Expr {
        Expr::repeat(e, 0, None)
    }
    /// One or more.
    pub fn plus(e: Expr) -> Expr {
        Expr::repeat(e, 1, None)
    }
    /// `min..=max` repetitions (`max: None` for no upper bound).
    pub fn repeat(e: Expr, min: u32, max: Option<u32>) -> Expr {
        if e.is_empty() || max == Some(0) {
            return Expr::empty();
        }
        if min == 1 && max == Some(1) {
            return e;
        }
        Expr::Repeat { expr: Box::new(e), min, max }
    }
    /// Whether this matches only the empty string.
    pub fn is_empty(&self) -> bool {
        matches!(self, Expr::Lit(s) if s.is_empty())
    }
}

/// A set of named rules; the start rule is `root` (`start` in Lark).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grammar {
    rules: Vec<(String, Expr)>,
}

impl Grammar {
    /// An empty grammar.
    pub fn new() -> Grammar {
        Grammar::default()
    }

    /// Adds a rule named after `hint` (made a valid, unique name) and returns
    /// a reference to it. An identical rule under the same base name is
    /// reused, so converting the same schema twice adds nothing.
    pub fn rule(&mut self, hint: &str, expr: Expr) -> Expr {
        let mut base = rule_name(hint);
        // Names with a fixed meaning are never given to a rule made from
        // request data (a tool argument called `root`, a tool `never` with
        // an argument `matches`).
        if matches!(base.as_str(), "root" | "start" | "never-matches") {
            base.push_str("-rule");
        }
        let mut name = base.clone();
        let mut n = 1;
        loop {
            match self.get(&name) {
                None => break,
                Some(existing) if *existing == expr => return Expr::Ref(name),
                Some(_) => {
                    n += 1;
                    name = format!("{base}-{n}");
                }
            }
        }
        self.rules.push((name.clone(), expr));
        Expr::Ref(name)
    }

    /// Sets the rule `name` (a valid rule name, e.g. `root`), replacing it if
    /// it exists.
    pub fn define(&mut self, name: &str, expr: Expr) {
        match self.rules.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = expr,
            None => self.rules.push((name.to_owned(), expr)),
        }
    }

    /// The rule `name`, if defined.
    pub fn get(&self, name: &str) -> Option<&Expr> {
        self.rules.iter().find(|(n, _)| n == name).map(|(_, e)| e)
    }

    /// Rule names in definition order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|(n, _)| n.as_str())
    }

    /// Text containing none of `stops` (the text a parser reads up to the
    /// first stop). An empty stop list gives "any text".
    ///
    /// The rule is exact: text ending in `<` before `</parameter>`, or `<<`,
    /// is accepted, unlike the common `([^<] | "<" [^/] | ...)*` pattern. It
    /// is the automaton that finds the stops (one state per proper stop
    /// prefix) turned into a regular expression by eliminating states, so it
    /// loops with `*` instead of recursing: engines parse it in linear time.
    /// Its literals are single characters, and it has an alternative that
    /// never matches (a self-recursive rule over an empty class) so converters that turn a rule
    /// of plain terminals into one greedy lexeme (llguidance reading GBNF)
    /// keep it a rule: a greedy lexeme would swallow the start of the stop.
    pub fn text_without(&mut self, hint: &str, stops: &[&str]) -> Expr {
        let stops: Vec<Vec<char>> = stops.iter().filter(|s| !s.is_empty()).map(|s| s.chars().collect()).collect();
        let base = rule_name(hint);
        let body = if stops.is_empty() {
            Expr::star(Expr::Alt(vec![Expr::not_chars(&['\0']), Expr::lit("\0")]))
        } else {
            self.stop_free(&base, &stops)
        };
        self.kept_rule(&base, body)
    }

    /// A rule with an alternative that never matches (see
    /// [`Grammar::text_without`]).
    fn kept_rule(&mut self, hint: &str, body: Expr) -> Expr {
        let never = self.never();
        self.rule(hint, Expr::Alt(vec![body, never]))
    }

    fn stop_free(&mut self, hint: &str, stops: &[Vec<char>]) -> Expr {
        stop_free_in(self, hint, stops)
    }

    /// A rule that matches nothing (see [`Grammar::text_without`]).
    pub(crate) fn never(&mut self) -> Expr {
        let name = "never-matches";
        if self.get(name).is_none() {
            // A character outside every range: no engine can generate it
            // (a NUL literal would let llama.cpp's engine emit NULs forever).
            let none = Expr::not_class(&[('\0', char::MAX)]);
            self.rules.push((name.to_owned(), Expr::Seq(vec![none, Expr::Ref(name.to_owned())])));
        }
        Expr::Ref(name.to_owned())
    }

    /// The grammar in llama.cpp's GBNF, `root` first.
    pub fn to_gbnf(&self) -> String {
        let mut out = String::new();
        for (name, expr) in self.ordered() {
            let _ = write!(out, "{name} ::= ");
            gbnf_expr(&mut out, expr, Prec::Alt);
            out.push('\n');
        }
        out
    }

    /// The grammar in llguidance's Lark syntax: `start: root`, rules with
    /// `_` for `-`, character classes as one-character regex terminals.
    pub fn to_lark(&self) -> String {
        let mut out = String::from("start: root\n");
        for (name, expr) in self.ordered() {
            let _ = write!(out, "{}: ", lark_name(name));
            lark_expr(&mut out, expr, Prec::Alt);
            out.push('\n');
        }
        out
    }

    /// `root` first, then the others in definition order.
    fn ordered(&self) -> impl Iterator<Item = (&str, &Expr)> {
        let root = self.rules.iter().filter(|(n, _)| n == "root");
        let rest = self.rules.iter().filter(|(n, _)| n != "root");
        root.chain(rest).map(|(n, e)| (n.as_str(), e))
    }
}

/// The strings over all characters that contain none of `stops`, as one
/// expression: the stop-finding automaton (states = proper stop prefixes,
/// every state accepting) with its states eliminated one by one.
fn stop_free_in(g: &mut Grammar, hint: &str, stops: &[Vec<char>]) -> Expr {
    let mut states: Vec<Vec<char>> = vec![Vec::new()];
    for s in stops {
        for i in 1..s.len() {
            let p = s[..i].to_vec();
            if !states.contains(&p) {
                states.push(p);
            }
        }
    }
    states.sort_by_key(Vec::len);
    let mut alphabet: Vec<char> = stops.iter().flatten().copied().collect();
    alphabet.sort_unstable();
    alphabet.dedup();
    let n = states.len();
    let fin = n;
    // edges[p][q]: the expression that takes state p to q (fin: accept).
    let mut edges: Vec<Vec<Option<Expr>>> = vec![vec![None; n + 1]; n + 1];
    let add = |slot: &mut Option<Expr>, e: Expr| {
        *slot = Some(match slot.take() {
            None => e,
            Some(prev) => alt2(prev, e),
        });
    };
    for (p, prefix) in states.iter().enumerate() {
        // Where each stop character leads: `None` when the text would then
        // contain a stop, else the state of the longest suffix that is a
        // stop prefix. Every other character leads back to state 0.
        let moves: Vec<(char, Option<usize>)> = alphabet
            .iter()
            .map(|&c| {
                let mut t = prefix.clone();
                t.push(c);
                if stops.iter().any(|s| t.ends_with(s)) {
                    return (c, None);
                }
                (c, (0..=t.len()).find_map(|k| states.iter().position(|st| st.as_slice() == &t[k..])))
            })
            .filter(|&(_, q)| q != Some(0))
            .collect();
        let special: Vec<char> = moves.iter().map(|&(c, _)| c).collect();
        add(&mut edges[p][0], Expr::not_chars(&special));
        for (c, q) in moves {
            if let Some(q) = q {
                add(&mut edges[p][q], Expr::lit(c));
            }
        }
        edges[p][fin] = Some(Expr::empty());
    }
    for k in (1..n).rev() {
        let self_loop = edges[k][k].take().map(Expr::star);
        for p in 0..k {
            let Some(into) = edges[p][k].take() else { continue };
            for q in (0..k).chain([fin]) {
                let Some(mut out) = edges[k][q].clone() else { continue };
                // Long stops nest deeply; engines limit nesting, so a deep
                // piece becomes a rule of its own.
                if depth(&out) > 8 {
                    out = g.kept_rule(&format!("{hint}-part"), out);
                    edges[k][q] = Some(out.clone());
                }
                let mut path = vec![into.clone()];
                path.extend(self_loop.clone());
                path.push(out);
                add(&mut edges[p][q], seq_keep(path));
            }
        }
    }
    let loop0 = edges[0][0].take().map(Expr::star).unwrap_or_else(Expr::empty);
    let exit = edges[0][fin].take().unwrap_or_else(Expr::empty);
    seq_keep(vec![loop0, exit])
}

/// How deeply groups nest in an expression.
fn depth(e: &Expr) -> usize {
    match e {
        Expr::Seq(items) | Expr::Alt(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Expr::Repeat { expr, .. } => 1 + depth(expr),
        _ => 0,
    }
}

/// A sequence that keeps literals apart (single characters stay single
/// lexemes for engines with a greedy lexer).
fn seq_keep(items: Vec<Expr>) -> Expr {
    let mut flat: Vec<Expr> = Vec::new();
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

fn alt2(a: Expr, b: Expr) -> Expr {
    let mut items = match a {
        Expr::Alt(v) => v,
        other => vec![other],
    };
    if !items.contains(&b) {
        items.push(b);
    }
    Expr::Alt(items)
}

/// A valid GBNF rule name from free text: lower-case letters, digits and
/// single dashes, starting with a letter.
pub fn rule_name(hint: &str) -> String {
    let mut out = String::new();
    for c in hint.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.insert_str(0, "r-");
    }
    out
}

fn lark_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Binding strength of the context an expression is written in.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    Alt,
    Seq,
    Postfix,
}

fn gbnf_expr(out: &mut String, e: &Expr, ctx: Prec) {
    match e {
        Expr::Lit(s) => gbnf_literal(out, s),
        Expr::Class { negated, ranges } => class(out, *negated, ranges, false),
        Expr::Ref(n) => out.push_str(n),
        Expr::Seq(items) => group(out, ctx > Prec::Seq, |out| {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                gbnf_expr(out, item, Prec::Seq);
            }
        }),
        Expr::Alt(items) => group(out, ctx > Prec::Alt, |out| {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                gbnf_expr(out, item, Prec::Seq);
            }
        }),
        Expr::Repeat { expr, min, max } => {
            // `x+?` is not a repetition of `x+`: group a repeated repetition.
            group(out, matches!(**expr, Expr::Repeat { .. }), |out| gbnf_expr(out, expr, Prec::Postfix));
            repetition(out, *min, *max);
        }
    }
}

fn lark_expr(out: &mut String, e: &Expr, ctx: Prec) {
    match e {
        // Lark has no empty literal: an empty alternative is written `""`
        // only where llguidance accepts it, as an optional group elsewhere.
        Expr::Lit(s) if s.is_empty() => out.push_str("\"\""),
        Expr::Lit(s) => lark_literal(out, s),
        Expr::Class { negated, ranges } => {
            out.push('/');
            class(out, *negated, ranges, true);
            out.push('/');
        }
        Expr::Ref(n) => out.push_str(&lark_name(n)),
        Expr::Seq(items) => group(out, ctx > Prec::Seq, |out| {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                lark_expr(out, item, Prec::Seq);
            }
        }),
        Expr::Alt(items) => group(out, ctx > Prec::Alt, |out| {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                lark_expr(out, item, Prec::Seq);
            }
        }),
        Expr::Repeat { expr, min, max } => {
            group(out, matches!(**expr, Expr::Repeat { .. }), |out| lark_expr(out, expr, Prec::Postfix));
            repetition(out, *min, *max);
        }
    }
}

fn group(out: &mut String, parens: bool, body: impl FnOnce(&mut String)) {
    if parens {
        out.push('(');
    }
    body(out);
    if parens {
        out.push(')');
    }
}

fn repetition(out: &mut String, min: u32, max: Option<u32>) {
    match (min, max) {
        (0, None) => out.push('*'),
        (1, None) => out.push('+'),
        (0, Some(1)) => out.push('?'),
        (m, None) => {
            let _ = write!(out, "{{{m},}}");
        }
        (m, Some(n)) if m == n => {
            let _ = write!(out, "{{{m}}}");
        }
        (m, Some(n)) => {
            let _ = write!(out, "{{{m},{n}}}");
        }
    }
}

/// A GBNF string literal: `"`, `\` and control characters escaped; other
/// characters (non-ASCII included) written as they are.
fn gbnf_literal(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A Lark string literal (JSON-style escapes).
fn lark_literal(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A character class, `[...]`; `regex` also escapes `/` and `[` (a Lark
/// regex terminal). An empty negated class is "any character".
fn class(out: &mut String, negated: bool, ranges: &[(char, char)], regex: bool) {
    if negated && ranges.is_empty() {
        // Any character, newline included.
        // Not expressible as one GBNF class that llguidance's converter
        // reads; callers write "any character" as `[^\x00] | "\x00"`.
        out.push_str(if regex { "[\\s\\S]" } else { "[^\\x00]" });
        return;
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    for &(lo, hi) in ranges {
        class_char(out, lo, regex);
        if hi != lo {
            out.push('-');
            class_char(out, hi, regex);
        }
    }
    out.push(']');
}

fn class_char(out: &mut String, c: char, regex: bool) {
    match c {
        // GBNF (llama.cpp, and llguidance's converter) knows no `\-` or
        // `\^`: those two are written as hex there.
        '^' | '-' if !regex => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        '\\' | ']' | '[' | '^' | '-' => {
            out.push('\\');
            out.push(c);
        }
        '/' if regex => out.push_str("\\/"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x20 || c == '\u{7f}' => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// End positions of `e` matched from `at` (a naive recogniser for tests).
    fn ends(g: &Grammar, e: &Expr, text: &[char], at: usize, depth: usize) -> Vec<usize> {
        if depth > 200 {
            return Vec::new();
        }
        let mut out: Vec<usize> = match e {
            Expr::Lit(s) => {
                let s: Vec<char> = s.chars().collect();
                if text[at..].starts_with(&s) { vec![at + s.len()] } else { Vec::new() }
            }
            Expr::Class { negated, ranges } => match text.get(at) {
                Some(&c) if ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated => vec![at + 1],
                _ => Vec::new(),
            },
            Expr::Ref(n) => g.get(n).map(|r| ends(g, r, text, at, depth + 1)).unwrap_or_default(),
            Expr::Seq(items) => items.iter().fold(vec![at], |acc, item| {
                acc.into_iter().flat_map(|p| ends(g, item, text, p, depth + 1)).collect()
            }),
            Expr::Alt(items) => items.iter().flat_map(|item| ends(g, item, text, at, depth + 1)).collect(),
            Expr::Repeat { expr, min, max } => {
                let mut all = Vec::new();
                let mut frontier = vec![at];
                let mut count = 0;
                loop {
                    if count >= *min {
                        all.extend(frontier.iter().copied());
                    }
                    if max.is_some_and(|m| count >= m) || frontier.is_empty() {
                        break;
                    }
                    let mut next: Vec<usize> =
                        frontier.iter().flat_map(|&p| ends(g, expr, text, p, depth + 1).into_iter().filter(move |&q| q > p)).collect();
                    next.sort_unstable();
                    next.dedup();
                    frontier = next;
                    count += 1;
                }
                all
            }
        };
        out.sort_unstable();
        out.dedup();
        out
    }

    fn without_accepts(g: &Grammar, start: &Expr, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        ends(g, start, &chars, 0, 0).contains(&chars.len())
    }

    #[test]
    fn text_without_is_exact() {
        let mut g = Grammar::new();
        let e = g.text_without("value", &["</parameter>"]);
        for ok in ["", "a<", "a<<b", "</param", "x</paramete", "<</p>"] {
            assert!(without_accepts(&g, &e, ok), "{ok:?}");
        }
        for bad in ["</parameter>", "a<</parameter>x", "</parameter"] {
            assert_eq!(without_accepts(&g, &e, bad), !bad.contains("</parameter>"), "{bad:?}");
        }
        let mut g = Grammar::new();
        let e = g.text_without("t", &["aab", "\n}"]);
        assert!(without_accepts(&g, &e, "aaa\n"));
        assert!(!without_accepts(&g, &e, "aaab"));
        assert!(!without_accepts(&g, &e, "x\n}"));
    }

    #[test]
    fn renders_gbnf_and_lark() {
        let mut g = Grammar::new();
        let s = g.rule("my rule!", Expr::seq([Expr::lit("\"q\"\n"), Expr::not_chars(&['/', ']'])]));
        g.define("root", Expr::alt([Expr::star(s.clone()), Expr::lit("x")]));
        assert_eq!(g.to_gbnf(), "root ::= my-rule* | \"x\"\nmy-rule ::= \"\\\"q\\\"\\n\" [^/\\]]\n");
        assert_eq!(g.to_lark(), "start: root\nroot: my_rule* | \"x\"\nmy_rule: \"\\\"q\\\"\\n\" /[^\\/\\]]/\n");
        // The same rule again is reused; a different one gets a new name.
        assert_eq!(g.rule("my rule!", Expr::seq([Expr::lit("\"q\"\n"), Expr::not_chars(&['/', ']'])])), s);
        assert_eq!(g.rule("my rule", Expr::lit("y")), Expr::Ref("my-rule-2".into()));
        assert_eq!(rule_name("9 lives"), "r-9-lives");
        // Reserved names stay reserved; a repeated repetition is grouped.
        assert_eq!(g.rule("root", Expr::lit("z")), Expr::Ref("root-rule".into()));
        let mut g = Grammar::new();
        g.define("root", Expr::opt(Expr::plus(Expr::class(&[('0', '9')]))));
        assert_eq!(g.to_gbnf(), "root ::= ([0-9]+)?\n");
        assert_eq!(g.to_lark(), "start: root\nroot: (/[0-9]/+)?\n");
    }
}
