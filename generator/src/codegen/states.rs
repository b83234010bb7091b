//! From the format IR to the state table of a generated parser.
//!
//! The IR is a tree without recursion, so where a node goes when it is done
//! is known when the code is generated: a sequence's item goes on to the next
//! item, a choice's body to what follows the choice, a loop's body back to
//! the loop's head. Every node therefore compiles to one or two named
//! states whose successors are constants, and the reference parser's frame
//! stack disappears. A state is a row of the module's table (the runtime's
//! `table::State`), which the runtime walks; what stays dynamic is small and
//! fixed: loop counters, the regions a broken call rewinds to, the text
//! reader's flags and the JSON scanner (see the runtime's `machine` module).

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use crate::ir::{Alt, JsonKind, Mark, Node, TextKind};
use chat_parser_runtime::table::CLOSER_GAP;

/// A loop's head state and the state that runs after a broken round
/// (`None`: none).
type LoopResume = (u16, Option<u16>);

/// The state table of all variants of one parser.
#[derive(Default)]
pub struct States {
    /// Each state's row (a `State` expression).
    pub rows: Vec<TokenStream>,
    /// Each state's name in the module's `St` enum (from what it reads,
    /// numbered after the first of a kind).
    pub idents: Vec<String>,
    name_counts: std::collections::HashMap<String, usize>,
    taken: std::collections::HashSet<String>,
    /// The alternatives of choices and loops (`Arm` expressions).
    pub arms: Vec<TokenStream>,
    /// The guards (`Guard` expressions), and the IR node each one matches,
    /// so an identical guard is listed once and shared.
    pub guards: Vec<TokenStream>,
    guard_keys: Vec<String>,
    /// The distinct stop sets of text states: the stops, and those of them
    /// that are closers (`Node::Until`'s `closers`).
    pub stop_sets: Vec<(Vec<String>, Vec<String>)>,
    /// The markup, names and keys states and guards read, each once, and
    /// its name in the module's `Lit` enum (a state holds its number: two
    /// bytes where a `&str` would be sixteen).
    pub literals: Vec<(String, String)>,
    literal_counts: std::collections::HashMap<String, usize>,
    /// The states with a streaming fast path (text reported as it comes,
    /// JSON), each with what its `Fast` row is made of: states with the
    /// same key have the same row.
    pub fast: Vec<(u16, String)>,
    /// Compiled nodes, by their text, successor and first loop number,
    /// with the loops they registered.
    compiled: std::collections::HashMap<(String, u16, usize), (u16, Vec<LoopResume>)>,
    /// Per variant: each loop's head and recovery state.
    pub resumes: Vec<Vec<LoopResume>>,
    /// Per variant: entry state.
    pub entries: Vec<u16>,
    /// Largest number of loops, nested regions and loop alternatives in any
    /// variant (the sizes of the fixed state).
    pub max_loops: usize,
    pub max_regions: usize,
    pub max_alts: usize,
}

/// The state that ends the grammar (anything after it is content).
pub const DONE: u16 = 0;

impl States {
    pub fn new() -> States {
        let mut s = States::default();
        s.push("done", quote! { State::Done });
        s
    }

    fn push(&mut self, name: &str, row: TokenStream) -> u16 {
        self.push_named(camel(&const_name(name)), row)
    }

    /// A state reading literal `text`: `LitCloseToolCall` for
    /// `</tool_call>`, named from the same words as its `Lit` (the states
    /// reading `>` are `LitGreater`, `LitGreater2`...; the literal is
    /// `Lit::Greater`).
    fn push_literal(&mut self, text: &str, row: TokenStream) -> u16 {
        self.push_named(format!("Lit{}", literal_name(text)), row)
    }

    /// Adds a state named `base` (a `CamelCase` name).
    fn push_named(&mut self, base: String, row: TokenStream) -> u16 {
        self.rows.push(row);
        // A name of its own: the first state of a kind has the plain name,
        // the next ones a number after it.
        let count = self.name_counts.entry(base.clone()).or_insert(0);
        // `LitA2` may also be another literal's own name: the next free one.
        let ident = loop {
            *count += 1;
            let candidate = if *count == 1 { base.clone() } else { format!("{base}{count}") };
            if !self.taken.contains(&candidate) {
                break candidate;
            }
        };
        self.taken.insert(ident.clone());
        self.idents.push(ident);
        (self.rows.len() - 1) as u16
    }

    /// State `n` as a table entry (`St::LoopHead as u16`).
    pub fn state(&self, n: u16) -> TokenStream {
        let id = self.ident(n);
        quote!(St::#id as u16)
    }

    /// Literal `text` as a table entry (`Lit::CloseToolCall as u16`), listed
    /// in the module's `LITERALS` the first time.
    fn literal(&mut self, text: &str) -> TokenStream {
        let ident = match self.literals.iter().find(|(t, _)| t == text) {
            Some((_, ident)) => ident.clone(),
            None => {
                // `Quote` and `Quote2` for `"` and `'`; the next free one
                // when `Quote2` is also a literal's own name.
                let base = literal_name(text);
                let count = self.literal_counts.entry(base.clone()).or_insert(0);
                let ident = loop {
                    *count += 1;
                    let candidate = if *count == 1 { base.clone() } else { format!("{base}{count}") };
                    if !self.literals.iter().any(|(_, i)| *i == candidate) {
                        break candidate;
                    }
                };
                self.literals.push((text.to_string(), ident.clone()));
                ident
            }
        };
        let ident = format_ident!("{}", ident);
        quote!(Lit::#ident as u16)
    }

    /// State `n`'s name in the `St` enum.
    pub fn ident(&self, n: u16) -> proc_macro2::Ident {
        format_ident!("{}", self.idents.get(n as usize).map_or("Done", String::as_str))
    }

    /// Reserves a state whose row is set later (a loop head, which its
    /// body's last state jumps back to).
    fn reserve(&mut self, name: &str) -> u16 {
        self.push(name, TokenStream::new())
    }

    /// Adds one variant's grammar; returns its entry state.
    pub fn add_variant(&mut self, root: &Node) -> u16 {
        let mut v = Variant { loops: Vec::new(), compiled: Default::default(), reused_from: usize::MAX };
        let entry = self.compile(&root.for_parsers(), DONE, &mut v);
        self.max_loops = self.max_loops.max(v.loops.len());
        self.max_regions = self.max_regions.max(region_depth(root));
        self.max_alts = self.max_alts.max(max_alts(root));
        self.resumes.push(v.loops);
        self.entries.push(entry);
        entry
    }

    /// The arms of `alts` (each alternative's guard, its body then `then`,
    /// and its round limit), as an `Arms` range of the table.
    fn arms(&mut self, alts: &[Alt], limits: &[Option<u32>], then: u16, v: &mut Variant) -> TokenStream {
        let mut arms = Vec::new();
        for (k, alt) in alts.iter().enumerate() {
            let body = self.compile(&alt.body, then, v);
            let to = self.state(body);
            let guard = Literal::u16_unsuffixed(self.guard(&alt.guard));
            let limit = match limits.get(k).copied().flatten() {
                Some(n) => {
                    let n = n.min(255) as u8;
                    quote!(Some(#n))
                }
                None => quote!(None),
            };
            arms.push(quote! { Arm { guard: #guard, to: #to, limit: #limit } });
        }
        let first = Literal::u16_unsuffixed(self.arms.len() as u16);
        let len = Literal::u16_unsuffixed(arms.len() as u16);
        self.arms.extend(arms);
        quote! { Arms { first: #first, len: #len } }
    }

    /// The states of `node` followed by `next`. A node is compiled once per
    /// successor: the same markup in two alternatives (a field read under
    /// the template's key and under its synonyms, or a call's markup in
    /// the variants with and without parallel calls) shares its states.
    fn compile(&mut self, node: &Node, next: u16, v: &mut Variant) -> u16 {
        // A loop's states name its counters by the loop's number in the
        // variant, so states with loops are shared only where the loops get
        // the same numbers; the variant then registers the shared loops as
        // its own (for its resume table).
        let text = format!("{node:?}");
        if let Some(&(id, lowest)) = v.compiled.get(&(text.clone(), next)) {
            v.reused_from = v.reused_from.min(lowest);
            return id;
        }
        let before = v.loops.len();
        let key = (text, next, before);
        let outer = std::mem::replace(&mut v.reused_from, usize::MAX);
        let id = if let Some((id, loops)) = self.compiled.get(&key) {
            v.loops.extend(loops.iter().copied());
            *id
        } else {
            let id = self.compile_node(node, next, v);
            // Shared with other variants only when its states name no loop
            // numbered before it (reused within this variant): another
            // variant numbers those loops otherwise.
            if v.reused_from >= before {
                self.compiled.insert(key.clone(), (id, v.loops[before..].to_vec()));
            }
            id
        };
        let lowest = before.min(v.reused_from);
        v.reused_from = outer.min(lowest);
        v.compiled.insert((key.0, next), (id, lowest));
        id
    }

    fn compile_node(&mut self, node: &Node, next: u16, v: &mut Variant) -> u16 {
        let nx = self.state(next);
        match node {
            Node::Empty => next,
            Node::Literal(s) => {
                let lit = self.literal(s);
                self.push_literal(s, quote! { State::Literal { text: #lit, next: #nx } })
            }
            Node::Space => self.push("space", quote! { State::Space { next: #nx } }),
            Node::OptionalNewline => self.push("optional newline", quote! { State::Newline { next: #nx } }),
            Node::End => self.push("end of output", quote! { State::End { next: #nx } }),
            Node::Seq(items) => {
                let mut at = next;
                let mut i = items.len();
                while i > 0 {
                    i -= 1;
                    // Whitespace before a literal is one state (the layout
                    // around markers is most of a grammar's spaces).
                    if let (Node::Literal(lit), Some(Node::Space)) = (&items[i], i.checked_sub(1).map(|j| &items[j])) {
                        at = self.spaced_literal(lit, at);
                        i -= 1;
                        continue;
                    }
                    at = self.compile(&items[i], at, v);
                }
                at
            }
            Node::Choice(alts) => {
                let arms = self.arms(alts, &[], next, v);
                self.push("choice", quote! { State::Choice { arms: #arms } })
            }
            Node::Repeat { alts, limits, recover } if !counted(limits, recover) => {
                // A plain loop keeps no counters: it takes a round whenever
                // a guard matches.
                let head = self.reserve("loop head");
                let arms = self.arms(alts, &[], head, v);
                self.rows[head as usize] = quote! { State::Loop { arms: #arms, next: #nx } };
                head
            }
            Node::Repeat { alts, limits, recover } => {
                let index = v.loops.len();
                v.loops.push((0, None));
                let head = self.reserve("loop head");
                let after = self.reserve("loop round done");
                let has_recover = recover.is_some();
                let rec = recover.as_ref().map(|r| self.compile(r, head, v));
                v.loops[index] = (head, rec);
                let arms = self.arms(alts, limits, after, v);
                let repeat = Literal::u8_unsuffixed(index as u8);
                self.rows[head as usize] = quote! { State::LoopHead { repeat: #repeat, recover: #has_recover, arms: #arms, next: #nx } };
                let h = self.state(head);
                self.rows[after as usize] = quote! { State::RoundDone { recover: #has_recover, head: #h } };
                self.push("loop", quote! { State::EnterLoop { repeat: #repeat, head: #h } })
            }
            Node::Peek(inner) => {
                let g = Literal::u16_unsuffixed(self.guard(inner));
                self.push("lookahead", quote! { State::Peek { guard: #g, next: #nx } })
            }
            Node::Until { stops, kind, trim_newlines, closers } => {
                let scan = self.until(stops, closers, *kind, *trim_newlines, next);
                let s = self.state(scan);
                self.push(&format!("{kind:?} start"), quote! { State::TextStart { next: #s } })
            }
            Node::Json { kind, python, marker, ends, .. } => {
                let content = *kind == JsonKind::Content;
                let object_only = *kind == JsonKind::ToolArgs;
                // A value left open before one of `ends`: the first end
                // marker that follows closes it.
                let open_end = if ends.is_empty() {
                    quote!(NONE)
                } else {
                    let close = self.push("json close", quote! { State::JsonClose { content: #content, next: #nx } });
                    let alts: Vec<Alt> = ends
                        .iter()
                        .map(|m| Alt { guard: Node::Peek(Box::new(Node::seq(vec![Node::Space, Node::lit(m.clone())]))), body: Node::Empty })
                        .collect();
                    let arms = self.arms(&alts, &[], close, v);
                    let end = self.push("json end marker", quote! { State::Choice { arms: #arms } });
                    self.state(end)
                };
                let key = format!("json {content} {marker:?}");
                let marker = self.literal(marker);
                let scan = self.push("json", quote! { State::Json { content: #content, marker: #marker, open_end: #open_end, next: #nx } });
                self.fast.push((scan, key));
                let s = self.state(scan);
                self.push("json start", quote! { State::JsonStart { python: #python, object_only: #object_only, next: #s } })
            }
            Node::JsonStringContent(kind) => {
                let k = kind_tokens(*kind);
                self.push("json string", quote! { State::JsonString { kind: #k, next: #nx } })
            }
            Node::ArgKey(key) => {
                let key = self.literal(key);
                self.push("argument key", quote! { State::ArgKey { key: #key, next: #nx } })
            }
            Node::ByArgType { string, json, auto } => {
                let s = self.compile(string, next, v);
                let s = self.state(s);
                let j = self.compile(json, next, v);
                let j = self.state(j);
                let a = self.compile(auto, next, v);
                let a = self.state(a);
                self.push("value by argument type", quote! { State::ByArgType { string: #s, json: #j, auto: #a } })
            }
            Node::ByToolName { stops, declared, other } => {
                let d = self.compile(declared, next, v);
                let d = self.state(d);
                let o = self.compile(other, next, v);
                let o = self.state(o);
                let set = Literal::u16_unsuffixed(self.stop_set(stops, &[]));
                self.push("by tool name", quote! { State::ByToolName { stops: #set, declared: #d, other: #o } })
            }
            // Only grammars tell a lenient alternative from another.
            Node::Mark(Mark::Lenient) => next,
            Node::Mark(m) => {
                let row = match m {
                    Mark::Lenient => unreachable!("handled above"),
                    Mark::ToolOpen => quote! { State::ToolOpen { next: #nx } },
                    Mark::ToolClose => quote! { State::ToolClose { next: #nx } },
                    Mark::Name(n) => {
                        let n = self.literal(n);
                        quote! { State::ToolName { name: #n, next: #nx } }
                    }
                    Mark::Commit => quote! { State::Commit { next: #nx } },
                    Mark::ArgsOpen => quote! { State::ArgsOpen { next: #nx } },
                    Mark::ArgsClose => quote! { State::ArgsClose { next: #nx } },
                    Mark::SoleArg => quote! { State::SoleArg { next: #nx } },
                    Mark::Prefilled(kind, text) => {
                        let k = kind_tokens(*kind);
                        let text = self.literal(text);
                        quote! { State::Prefilled { kind: #k, text: #text, next: #nx } }
                    }
                };
                self.push(&format!("{m:?}"), row)
            }
        }
    }

    /// The state reading whitespace, then `lit` (once per literal and successor).
    fn spaced_literal(&mut self, lit: &str, next: u16) -> u16 {
        let key = (format!("space, then {lit:?}"), next, usize::MAX);
        if let Some((id, _)) = self.compiled.get(&key) {
            return *id;
        }
        let nx = self.state(next);
        let text = self.literal(lit);
        let id = self.push_literal(lit, quote! { State::SpacedLiteral { text: #text, next: #nx } });
        self.compiled.insert(key, (id, Vec::new()));
        id
    }

    /// The stop set's number in the module's `STOPS`, each distinct set once.
    fn stop_set(&mut self, stops: &[String], closers: &[String]) -> u16 {
        match self.stop_sets.iter().position(|(s, c)| s == stops && c == closers) {
            Some(n) => n as u16,
            None => {
                self.stop_sets.push((stops.to_vec(), closers.to_vec()));
                (self.stop_sets.len() - 1) as u16
            }
        }
    }

    /// The state reading text up to a stop.
    fn until(&mut self, stops: &[String], closers: &[String], kind: TextKind, trim: bool, next: u16) -> u16 {
        let nx = self.state(next);
        let k = kind_tokens(kind);
        let set = Literal::u16_unsuffixed(self.stop_set(stops, closers));
        let is_name = matches!(kind, TextKind::ToolName | TextKind::ToolIdName | TextKind::ArgName);
        let row = if is_name {
            quote! { State::Name { kind: #k, trim: #trim, stops: #set, next: #nx } }
        } else {
            quote! { State::Text { kind: #k, trim: #trim, stops: #set, next: #nx } }
        };
        let id = self.push(&format!("{kind:?} up to {stops:?}"), row);
        // Text that is reported as it comes: a chunk without a stop in it
        // is reported whole, without running the machine.
        if matches!(kind, TextKind::Content | TextKind::Reasoning | TextKind::ArgString) {
            self.fast.push((id, format!("{kind:?} {trim} {set}")));
        }
        id
    }

    /// The module's stop sets: each set's stops as a named array
    /// (`STOPS_n`), and `STOPS`, the sets with their first bytes.
    pub fn stop_set_items(&self) -> TokenStream {
        let lists = self.stop_sets.iter().enumerate().map(|(n, (stops, _))| {
            let name = format_ident!("STOPS_{}", n);
            let len = Literal::usize_unsuffixed(stops.len());
            let all = stops.iter().map(|s| Literal::string(s));
            let doc = format!(" Text ends at {stops:?}.");
            quote! {
                #[doc = #doc]
                static #name: [&str; #len] = [#(#all),*];
            }
        });
        let sets = self.stop_sets.iter().enumerate().map(|(n, (_, closers))| {
            let name = format_ident!("STOPS_{}", n);
            if closers.is_empty() {
                quote! { StopSet::new(&#name) }
            } else {
                // (Closers end the text only before markup.)
                quote! { StopSet::new(&#name).closed_by(&[#(#closers),*]) }
            }
        });
        let count = Literal::usize_unsuffixed(self.stop_sets.len());
        quote! {
            #(#lists)*
            /// What ends each kind of text (`State::Text { stops, .. }`).
            static STOPS: [StopSet; #count] = [#(#sets),*];
        }
    }

    /// The module's literals: the `Lit` enum naming them (none without
    /// literals: an empty enum cannot be `repr(u16)`), and `LITERALS`, the
    /// text of each.
    pub fn literal_items(&self) -> TokenStream {
        let count = Literal::usize_unsuffixed(self.literals.len());
        let texts = self.literals.iter().map(|(t, _)| Literal::string(t));
        let names = self.literals.iter().map(|(_, i)| format_ident!("{}", i));
        let names = if self.literals.is_empty() {
            quote!()
        } else {
            quote! {
                /// The markup, names and keys the states and guards read,
                /// named for their words (`LITERALS` holds their text).
                #[derive(Clone, Copy)]
                #[repr(u16)]
                enum Lit {
                    #(#names),*
                }
            }
        };
        quote! {
            #names
            /// Each literal's text, in the order of `Lit`.
            static LITERALS: [&str; #count] = [#(#texts),*];
        }
    }

    /// A guard's number in the module's `GUARDS` (an identical guard is
    /// listed once).
    fn guard(&mut self, node: &Node) -> u16 {
        let key = format!("{node:?}");
        if let Some(i) = self.guard_keys.iter().position(|k| *k == key) {
            return i as u16;
        }
        let expr = self.guard_expr(node);
        self.guard_keys.push(key);
        self.guards.push(expr);
        (self.guards.len() - 1) as u16
    }

    /// Lists guard expressions one after the other (the parts of a
    /// sequence or choice); returns the first one's number.
    fn guard_run(&mut self, exprs: Vec<TokenStream>) -> u16 {
        let first = self.guards.len() as u16;
        for e in exprs {
            // Listed in place, not shared: a compound guard's parts are a range.
            self.guard_keys.push(String::new());
            self.guards.push(e);
        }
        first
    }

    /// A guard: markup matched without reporting anything.
    fn guard_expr(&mut self, node: &Node) -> TokenStream {
        match node {
            Node::Empty => quote! { Guard::Empty },
            Node::Literal(s) => {
                let s = self.literal(s);
                quote! { Guard::Lit(#s) }
            }
            Node::Space => quote! { Guard::Space },
            Node::OptionalNewline => quote! { Guard::Newline },
            Node::End => quote! { Guard::End },
            Node::Seq(items) => {
                let exprs: Vec<TokenStream> = items.iter().map(|i| self.guard_expr(i)).collect();
                let len = Literal::u16_unsuffixed(exprs.len() as u16);
                let first = Literal::u16_unsuffixed(self.guard_run(exprs));
                quote! { Guard::Seq { first: #first, len: #len } }
            }
            Node::Choice(alts) => {
                let mut exprs = Vec::new();
                for alt in alts {
                    exprs.push(self.guard_expr(&alt.guard));
                    exprs.push(self.guard_expr(&alt.body));
                }
                let len = Literal::u16_unsuffixed(alts.len() as u16);
                let first = Literal::u16_unsuffixed(self.guard_run(exprs));
                quote! { Guard::Choice { first: #first, len: #len } }
            }
            Node::Peek(inner) => {
                let g = Literal::u16_unsuffixed(self.guard(inner));
                quote! { Guard::Peek(#g) }
            }
            // Guards are literal markup only; anything else never matches.
            _ => quote! { Guard::Never },
        }
    }
}

/// Whether `tokens` hold the identifier `name` anywhere.
pub fn uses_ident(tokens: &TokenStream, name: &str) -> bool {
    tokens.clone().into_iter().any(|tree| match tree {
        proc_macro2::TokenTree::Ident(i) => i == name,
        proc_macro2::TokenTree::Group(g) => uses_ident(&g.stream(), name),
        _ => false,
    })
}

struct Variant {
    loops: Vec<LoopResume>,
    /// What this variant compiled: a node compiled again with the same
    /// successor (the calls after their opener and where the model left it
    /// out) is the same states, loops included. (Two alternatives run one
    /// at a time, so their loops may share numbers.) With each, the lowest
    /// loop number its states name.
    compiled: std::collections::HashMap<(String, u16), (u16, usize)>,
    /// The lowest loop number named by states reused from `compiled` since
    /// the node being compiled started.
    reused_from: usize,
}

/// A state's constant name, from what it does: `Content up to [...]` →
/// `CONTENT_TEXT`, `ToolName up to [...]` → `TOOL_NAME`, `loop head` →
/// `LOOP_HEAD` (a literal's state is named by [`literal_name`]).
fn const_name(name: &str) -> String {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(|w| w.to_ascii_uppercase()).collect()
    };
    // `ToolName` → `TOOL_NAME`.
    let snake = |camel: &str| -> String {
        let mut out = String::new();
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_uppercase());
        }
        out
    };
    let base = if let Some((kind, _)) = name.split_once(" up to ") {
        match kind {
            "ToolName" | "ToolIdName" | "ToolId" | "ArgName" => snake(kind),
            _ => format!("{}_TEXT", snake(kind)),
        }
    } else if name.starts_with(|c: char| c.is_ascii_uppercase()) {
        // A mark: `ToolOpen`, `Prefilled(Content, "<think>")`.
        let head: String = name.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        snake(&head)
    } else {
        words(name).join("_")
    };
    let mut base: String = base.chars().take(40).collect();
    base = base.trim_end_matches('_').to_string();
    if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
        base.insert_str(0, "S_");
    }
    base
}

/// A literal's name in the module's `Lit` enum, from its words:
/// `</tool_call>` → `CloseToolCall`, `<|tool_call_start|>` →
/// `ToolCallStart`, `get_weather` → `GetWeather`; markup without words by
/// its symbols (`":"` → `Colon`, `"\n\n"` → `NewlineNewline`), and `""` →
/// `Empty`.
fn literal_name(text: &str) -> String {
    let words: Vec<&str> = text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let name = if text.is_empty() {
        "EMPTY".to_string()
    } else if words.is_empty() {
        let symbols: Vec<&str> = text
            .chars()
            .map(|c| match c {
                ':' => "COLON",
                ',' => "COMMA",
                '"' | '\'' | '`' => "QUOTE",
                '{' => "OPEN_BRACE",
                '}' => "CLOSE_BRACE",
                '[' => "OPEN_BRACKET",
                ']' => "CLOSE_BRACKET",
                '(' => "OPEN_PAREN",
                ')' => "CLOSE_PAREN",
                '<' => "LESS",
                '>' => "GREATER",
                '=' => "EQUALS",
                '\n' => "NEWLINE",
                ' ' => "SPACE",
                _ => "MARK",
            })
            .collect();
        symbols.join("_")
    } else {
        let close = text.starts_with("</") || text.starts_with("[/");
        format!("{}{}", if close { "CLOSE_" } else { "" }, words.join("_"))
    };
    let mut name = camel(&name).chars().take(40).collect::<String>();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, 'N');
    }
    // The one keyword a `CamelCase` name can be (a tool named `self`).
    if name == "Self" {
        name.push_str("Word");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::{literal_name, States};

    /// A table without literals (no markup, no JSON) has no `Lit` enum (an
    /// empty one cannot be `repr(u16)`) and an empty `LITERALS`.
    #[test]
    fn no_literals_no_enum() {
        let items = States::new().literal_items().to_string();
        assert!(!items.contains("enum Lit"), "{items}");
        assert!(items.contains("static LITERALS : [& str ; 0] = [] ;"), "{items}");
    }

    #[test]
    fn literals_are_named_for_their_words_or_symbols() {
        let names = [
            ("</tool_call>", "CloseToolCall"),
            ("<|tool_call_start|>", "ToolCallStart"),
            ("[TOOL_CALLS]", "ToolCalls"),
            ("get_weather", "GetWeather"),
            (":", "Colon"),
            ("\n\n", "NewlineNewline"),
            ("<|\"|>", "LessMarkQuoteMarkGreater"),
            ("", "Empty"),
            ("3d", "N3d"),
            ("self", "SelfWord"),
            ("工具", "MarkMark"),
        ];
        for (text, name) in names {
            assert_eq!(literal_name(text), name, "{text:?}");
        }
        // A name is an identifier however long the markup.
        let long = literal_name(&"<|a_very_long_marker|>".repeat(4));
        assert!(long.len() <= 40 && long.chars().all(|c| c.is_ascii_alphanumeric()), "{long}");
    }
}

/// `LIT_CLOSE_TOOL_CALL` → `LitCloseToolCall` (an enum variant's name).
fn camel(name: &str) -> String {
    name.split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let lower = w.to_ascii_lowercase();
            let mut c = lower.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

fn kind_tokens(kind: TextKind) -> TokenStream {
    let k = format_ident!("{}", format!("{kind:?}"));
    quote!(Kind::#k)
}

/// How many recoverable loops nest (the regions that can be open at once).
fn region_depth(node: &Node) -> usize {
    match node {
        Node::Seq(items) => items.iter().map(region_depth).max().unwrap_or(0),
        Node::Choice(alts) => alts.iter().map(|a| region_depth(&a.body)).max().unwrap_or(0),
        Node::Repeat { alts, recover, .. } => {
            let inner = alts.iter().map(|a| region_depth(&a.body)).max().unwrap_or(0);
            let rec = recover.as_deref().map(region_depth).unwrap_or(0);
            inner.max(rec) + usize::from(recover.is_some())
        }
        Node::ByArgType { string, json, auto } => region_depth(string).max(region_depth(json)).max(region_depth(auto)),
        Node::ByToolName { declared, other, .. } => region_depth(declared).max(region_depth(other)),
        _ => 0,
    }
}

/// Whether a loop keeps counters in the parser's state: it has a limit on
/// some alternative's rounds, or recovers from a broken round.
fn counted(limits: &[Option<u32>], recover: &Option<Box<Node>>) -> bool {
    recover.is_some() || limits.iter().any(Option::is_some)
}

fn max_alts(node: &Node) -> usize {
    match node {
        Node::Seq(items) => items.iter().map(max_alts).max().unwrap_or(0),
        Node::Choice(alts) => alts.iter().map(|a| max_alts(&a.body)).max().unwrap_or(0),
        Node::Repeat { alts, recover, limits } => {
            let inner = alts.iter().map(|a| max_alts(&a.body)).max().unwrap_or(0);
            let own = if counted(limits, recover) { alts.len() } else { 0 };
            inner.max(own).max(recover.as_deref().map(max_alts).unwrap_or(0))
        }
        Node::ByArgType { string, json, auto } => max_alts(string).max(max_alts(json)).max(max_alts(auto)),
        Node::ByToolName { declared, other, .. } => max_alts(declared).max(max_alts(other)),
        _ => 0,
    }
}

/// Whitespace allowed for each place the grammar allows it between markers
/// (the budget is shared: a short name leaves room for more), in the hold
/// bound. Templates write at most a newline and some indentation there.
const SLACK: usize = 4;
/// Whitespace allowed in all the markup a round reads before it commits
/// (also a share of the total: short parts leave room for more). A JSON
/// call allows whitespace between any two tokens and writes little of it:
/// Cohere's `[\n    {"tool_call_id": "0", "tool_name": "` has 8 bytes in
/// nine places.
const ROUND_SLACK: usize = 12;
/// Room for a call id read before the name.
const ID_ROOM: usize = 32;
/// Room for dropped text read before the name (a namespace such as an MCP
/// server, a harmony content type). The bound is a total, so this shares
/// the name's room: a 25-byte server name leaves 55 bytes for the tool's.
const DISCARD_ROOM: usize = 16;

/// What a piece of markup costs in a parser's window: its length, or, for a
/// marker of the template's pack table (see `chat_parser_runtime::pack`),
/// 2 bytes when whole and 3 when cut off (`partial`).
pub struct Costs<'p> {
    pub pack: &'p [String],
}

impl Costs<'_> {
    /// No packing: every byte counts.
    pub const RAW: Costs<'static> = Costs { pack: &[] };

    fn whole(&self, s: &str) -> usize {
        if self.pack.iter().any(|p| p == s) {
            2
        } else {
            s.len()
        }
    }

    fn partial(&self, s: &str) -> usize {
        if self.pack.iter().any(|p| p == s) {
            3
        } else {
            s.len()
        }
    }
}

/// How much text a parser of `root` must be able to hold back across
/// chunks: the longest markup a round can read before it commits (its
/// guard, the markers after it, a call id and a name), plus a stop's
/// lookahead, and the untyped value length that is decided at its end.
pub fn hold_bound(root: &Node, costs: &Costs<'_>) -> usize {
    let mut bound = 0;
    walk(root, &mut |n| match n {
        Node::Repeat { alts, .. } => {
            for a in alts {
                let g = prefix(&a.guard, costs);
                bound = bound.max(g.then(prefix(&a.body, costs)).held());
            }
        }
        Node::Until { stops, kind: TextKind::ArgAuto, .. } => {
            // The value is held until it ends, with the markup read since
            // its key was reported (`" string="true">` before a DSML value).
            let longest = stops.iter().map(|s| costs.partial(s)).max().unwrap_or(0);
            let lead = auto_lead(root, costs).unwrap_or(0);
            bound = bound.max(crate::ir::AUTO_JSON_MAX + longest + lead + 2 * SLACK);
        }
        _ => {}
    });
    // Any marker and its lookahead.
    walk(root, &mut |n| {
        if let Node::Literal(s) = n {
            bound = bound.max(costs.partial(s) + SLACK);
        }
    });
    bound
}

/// The most markup read right before an untyped value (`ArgAuto`) starts,
/// after the last node that reports: markers and whitespace in front of it
/// in a sequence, and an alternative's guard. `None` when `node` holds no
/// untyped value.
fn auto_lead(node: &Node, costs: &Costs<'_>) -> Option<usize> {
    lead_of(node, costs).map(|(n, _)| n)
}

/// [`auto_lead`], and whether only markup comes before the value from
/// `node`'s start (so that what comes before `node` counts too).
///
/// A node other than markup is taken to report what it reads (the name
/// before a tagged value does, at its end): this is exact for the tagged
/// arguments of `ir::build`, the only place untyped values come from.
fn lead_of(node: &Node, costs: &Costs<'_>) -> Option<(usize, bool)> {
    match node {
        Node::Until { kind: TextKind::ArgAuto, .. } => Some((0, true)),
        Node::Seq(items) => {
            let mut best: Option<(usize, bool)> = None;
            let mut run = 0;
            let mut pure = true;
            for item in items {
                if let Some((l, from_start)) = lead_of(item, costs) {
                    let lead = if from_start { run + l } else { l };
                    best = longer_lead(best, (lead, pure && from_start));
                }
                match item {
                    Node::Literal(s) => run += costs.whole(s),
                    Node::Space | Node::OptionalNewline => run += SLACK,
                    Node::Mark(_) => {}
                    _ => {
                        run = 0;
                        pure = false;
                    }
                }
            }
            best
        }
        Node::Choice(alts) | Node::Repeat { alts, .. } => {
            let mut best: Option<(usize, bool)> = None;
            for a in alts {
                let lead = match (lead_of(&a.guard, costs), lead_of(&a.body, costs)) {
                    (Some(g), _) => Some(g),
                    (None, Some((l, true))) => Some((prefix(&a.guard, costs).held() + l, true)),
                    (None, other) => other,
                };
                if let Some(lead) = lead {
                    best = longer_lead(best, lead);
                }
            }
            // A loop's round starts after what the loop reported before.
            if matches!(node, Node::Repeat { .. }) {
                best = best.map(|(l, _)| (l, false));
            }
            best
        }
        Node::Peek(inner) => lead_of(inner, costs),
        Node::ByArgType { string, json, auto } => [string, json, auto].iter().filter_map(|n| lead_of(n, costs)).fold(None, longer_lead),
        Node::ByToolName { declared, other, .. } => [declared, other].iter().filter_map(|n| lead_of(n, costs)).fold(None, longer_lead),
        _ => None,
    }
}

/// Two places an untyped value may start: the longer lead, reached from the
/// start only when both are.
fn longer_lead(best: Option<(usize, bool)>, (lead, from_start): (usize, bool)) -> Option<(usize, bool)> {
    Some(match best {
        Some((b, w)) => (b.max(lead), w && from_start),
        None => (lead, from_start),
    })
}

/// The markup a round reads before the first node that commits it (a
/// call's name, a commit mark): its bytes other than whitespace, the places
/// it allows whitespace (`gaps`), and whether a commit was reached.
#[derive(Clone, Copy, Default)]
struct Prefix {
    bytes: usize,
    gaps: usize,
    /// What a look-ahead read past `bytes`, which the nodes after it read
    /// again (`&{"name"` before the `{"name"` of a call object): held once,
    /// not twice.
    ahead: usize,
    done: bool,
}

impl Prefix {
    fn markup(bytes: usize) -> Prefix {
        Prefix { bytes, ..Prefix::default() }
    }

    /// What the window holds for it: the bytes, and whitespace at
    /// [`SLACK`] per gap up to [`ROUND_SLACK`] in all.
    fn held(self) -> usize {
        self.bytes + (self.gaps * SLACK).min(ROUND_SLACK) + self.ahead
    }

    fn then(self, next: Prefix) -> Prefix {
        // The look-ahead is read again by `next`: only what reaches past
        // `next`'s own bytes is held beyond them.
        let ahead = next.ahead.max(self.ahead.saturating_sub(next.bytes));
        Prefix { bytes: self.bytes + next.bytes, gaps: self.gaps + next.gaps, ahead, done: next.done }
    }
}

fn prefix(node: &Node, costs: &Costs<'_>) -> Prefix {
    match node {
        Node::Literal(s) => Prefix::markup(costs.whole(s)),
        Node::Space | Node::OptionalNewline => Prefix { gaps: 1, ..Prefix::default() },
        Node::Seq(items) => {
            let mut total = Prefix::default();
            for item in items {
                total = total.then(prefix(item, costs));
                if total.done {
                    return total;
                }
            }
            total
        }
        Node::Choice(alts) => {
            // The longest alternative in each measure (an upper bound).
            let mut best = Prefix { done: true, ..Prefix::default() };
            for a in alts {
                let g = prefix(&a.guard, costs);
                let p = if g.done { g } else { g.then(prefix(&a.body, costs)) };
                // (What is held past the longest alternative's bytes: an
                // alternative's look-ahead only where it reaches further.)
                let bytes = best.bytes.max(p.bytes);
                let ahead = (best.bytes + best.ahead).max(p.bytes + p.ahead) - bytes;
                best = Prefix { bytes, gaps: best.gaps.max(p.gaps), ahead, done: best.done && p.done };
            }
            best
        }
        Node::Peek(inner) => {
            // (Its whitespace is counted as read: the cap on a round's
            // whitespace covers it.)
            let p = prefix(inner, costs);
            Prefix { bytes: 0, gaps: p.gaps, ahead: p.bytes + p.ahead, done: false }
        }
        Node::Until { stops, kind, .. } => {
            let longest = stops.iter().map(|s| costs.partial(s)).max().unwrap_or(0);
            match kind {
                TextKind::ToolName | TextKind::ToolIdName => Prefix { bytes: crate::ir::MAX_NAME_LEN + longest, gaps: 0, ahead: 0, done: true },
                TextKind::Discard => Prefix::markup(DISCARD_ROOM + longest),
                _ => Prefix::markup(ID_ROOM + longest),
            }
        }
        Node::JsonStringContent(_) => Prefix::markup(ID_ROOM),
        Node::ByToolName { stops, declared, other } => {
            // The name is read ahead, then again by the branch taken.
            let longest = stops.iter().map(|s| costs.partial(s)).max().unwrap_or(0);
            let ahead = Prefix { ahead: crate::ir::MAX_NAME_LEN + longest, ..Prefix::default() };
            let branches = Node::Choice(vec![Alt { guard: Node::Empty, body: (**declared).clone() }, Alt { guard: Node::Empty, body: (**other).clone() }]);
            ahead.then(prefix(&branches, costs))
        }
        Node::Mark(Mark::Commit) | Node::Mark(Mark::Name(_)) => Prefix { done: true, ..Prefix::default() },
        // Anything else reports as it reads (or reads nothing).
        Node::Json { .. } | Node::Repeat { .. } => Prefix { done: true, ..Prefix::default() },
        _ => Prefix::default(),
    }
}

fn walk(node: &Node, f: &mut impl FnMut(&Node)) {
    f(node);
    match node {
        Node::Seq(items) => items.iter().for_each(|n| walk(n, f)),
        Node::Choice(alts) | Node::Repeat { alts, .. } => {
            for a in alts {
                walk(&a.guard, f);
                walk(&a.body, f);
            }
            if let Node::Repeat { recover: Some(r), .. } = node {
                walk(r, f);
            }
        }
        Node::Peek(n) => walk(n, f),
        Node::ByArgType { string, json, auto } => {
            walk(string, f);
            walk(json, f);
            walk(auto, f);
        }
        Node::ByToolName { declared, other, .. } => {
            walk(declared, f);
            walk(other, f);
        }
        _ => {}
    }
}

/// The longest lookahead past the current position: a marker or stop seen
/// in part, plus whitespace before it.
pub fn lookahead(grammars: &[Node], costs: &Costs<'_>) -> usize {
    let mut longest = 0;
    for g in grammars {
        walk(g, &mut |n| match n {
            Node::Literal(s) => longest = longest.max(costs.partial(s)),
            Node::Until { stops, closers, .. } => {
                longest = longest.max(stops.iter().map(|s| costs.partial(s)).max().unwrap_or(0));
                // A closer is held with the whitespace after it and the
                // byte that tells whether markup follows.
                let closer = closers.iter().map(|s| costs.partial(s) + CLOSER_GAP + 1).max().unwrap_or(0);
                longest = longest.max(closer.saturating_sub(SLACK));
            }
            _ => {}
        });
    }
    longest + SLACK
}

/// Every marker of the grammars: literals and the stops of text.
pub fn markers(grammars: &[Node]) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for g in grammars {
        walk(g, &mut |n| match n {
            Node::Literal(s) => all.push(s.clone()),
            Node::Until { stops, .. } => all.extend(stops.iter().cloned()),
            _ => {}
        });
    }
    all.sort();
    all.dedup();
    all
}
