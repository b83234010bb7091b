//! Rust code generation: one parser module per template.
//!
//! The module holds the template's constants (generation prompts, reasoning
//! markers, preserved tokens, grammar triggers) and a `Parser` type (the
//! runtime's `parser::Parser` over the module's `Grammar`): a
//! fixed-size state machine built from the format IR, one variant per
//! combination of the request flags that change the output grammar
//! (thinking on/off, reasoning extracted or not, tools on/off, parallel
//! calls). Tool names and argument types are not compiled in: the parser
//! checks them against the request's tools at run time.
//!
//! # Example
//! ```
//! use chat_parser_generator::{codegen, spec_from_source};
//! let source = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
//! let spec = spec_from_source("tiny.jinja", source).unwrap();
//! let code = codegen::module(&spec, "chat-parser generate tiny.jinja").unwrap();
//! assert!(code.starts_with("// @generated"));
//! assert!(code.contains("pub type Parser<'t>"));
//! ```

mod states;

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use crate::ir::build::{build, ParseOptions, ReasoningFormat, ToolChoice};
use crate::ir::Node;
use crate::spec::FormatSpec;
use states::States;

/// The request flags that select a grammar variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    pub enable_thinking: bool,
    pub extract_reasoning: bool,
    pub tools: bool,
    pub parallel_tool_calls: bool,
    pub structured_output: bool,
}

impl Flags {
    /// Every combination, in the order the runtime's `Options::variant`
    /// numbers them (a generated module's `Table::entries`).
    pub fn all() -> Vec<Flags> {
        let mut all = Vec::new();
        for enable_thinking in [true, false] {
            for extract_reasoning in [true, false] {
                for (tools, parallel_tool_calls, structured_output) in [(false, false, false), (true, false, false), (true, true, false), (false, false, true)] {
                    all.push(Flags { enable_thinking, extract_reasoning, tools, parallel_tool_calls, structured_output });
                }
            }
        }
        all
    }

    /// The parse options this combination stands for (with a placeholder
    /// tool: the grammar does not depend on which tools are declared).
    pub fn options(&self) -> ParseOptions {
        ParseOptions {
            enable_thinking: self.enable_thinking,
            reasoning_format: if self.extract_reasoning { ReasoningFormat::Auto } else { ReasoningFormat::None },
            parallel_tool_calls: self.parallel_tool_calls,
            tools: if self.tools {
                vec![serde_json::json!({"type": "function", "function": {"name": "tool", "parameters": {"type": "object", "properties": {}}}})]
            } else {
                Vec::new()
            },
            tool_choice: ToolChoice::Auto,
            // The parser does not check the schema (the grammar does).
            json_schema: self.structured_output.then(|| serde_json::json!({})),
        }
    }
}

/// The grammar variants of a spec: the distinct grammars, and for each
/// flag combination (in [`Flags::all`] order) the index of its grammar.
pub fn variants(spec: &FormatSpec) -> (Vec<Node>, Vec<usize>) {
    let mut grammars: Vec<Node> = Vec::new();
    let mut index = Vec::new();
    for flags in Flags::all() {
        let g = build(spec, &flags.options());
        let i = match grammars.iter().position(|x| *x == g) {
            Some(i) => i,
            None => {
                grammars.push(g);
                grammars.len() - 1
            }
        };
        index.push(i);
    }
    (grammars, index)
}

/// The hold limit of a template's parsers (see `HOLD_LIMIT` in a generated
/// module): the reference parser applies the same limit, counted with the
/// same [`pack_table`], when it is asked to behave exactly like the
/// generated parser ([`crate::interp::StreamParser::with_hold_limit`] and
/// [`crate::interp::StreamParser::with_pack`]).
pub fn hold_limit(spec: &FormatSpec) -> usize {
    hold_limit_and_pack(spec).0
}

/// [`hold_limit`] and [`pack_table`] together, from one build of the
/// grammar's variants (each builds them all).
pub fn hold_limit_and_pack(spec: &FormatSpec) -> (usize, Vec<String>) {
    let (grammars, _) = variants(spec);
    let pack = pack_table_of(&grammars);
    (hold_of(&grammars, &states::Costs { pack: &pack }), pack)
}

fn hold_of(grammars: &[crate::ir::Node], costs: &states::Costs<'_>) -> usize {
    grammars.iter().map(|g| states::hold_bound(g, costs)).max().unwrap_or(0).clamp(64, 1024)
}

/// Windows larger than this (in bytes, unpacked) are worth a pack table.
const PACK_ABOVE: usize = 120;
/// Markers shorter than this are not worth packing.
const PACK_MIN: usize = 6;

/// The template's pack table (see `chat_parser_runtime::pack`): its long
/// markers, when its window would otherwise be large (long special-token
/// markers, as DeepSeek's `<｜tool▁calls▁begin｜>`); empty for most
/// templates. The reference parser applies the same table
/// ([`crate::interp::StreamParser::with_pack`]), so `HOLD_LIMIT` means the
/// same for both.
pub fn pack_table(spec: &FormatSpec) -> Vec<String> {
    pack_table_of(&variants(spec).0)
}

fn pack_table_of(grammars: &[crate::ir::Node]) -> Vec<String> {
    let raw = hold_of(grammars, &states::Costs::RAW) + states::lookahead(grammars, &states::Costs::RAW);
    if raw <= PACK_ABOVE {
        return Vec::new();
    }
    // A cut-off marker stores its length in one byte.
    let mut candidates: Vec<String> = states::markers(grammars).into_iter().filter(|m| (PACK_MIN..=255).contains(&m.len())).collect();
    // Longest first: of two markers that could overlap, the longer is kept.
    candidates.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let mut table: Vec<String> = Vec::new();
    for c in candidates {
        if !overlaps(&c, &c) && table.iter().all(|t| !overlaps(t, &c) && !overlaps(&c, t)) && table.len() < 256 {
            table.push(c);
        }
    }
    table
}

/// Whether `b` can start inside `a` in some text: `b` within `a`, or a
/// proper end of `a` that is a start of `b` (for `a == b`: a marker that
/// overlaps itself, such as `aa`).
///
/// Quoted JSON keys (`"tool_name"`) share only their quote: that is no
/// overlap here, since the grammar never writes a key's opening quote right
/// after a closing one (a `{`, `,` or whitespace comes between), so packing
/// from the left still finds every key of a well-formed call.
fn overlaps(a: &str, b: &str) -> bool {
    if a != b && (a.contains(b) || b.contains(a)) {
        return true;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    (1..a.len()).any(|i| {
        let end = &a[i..];
        if end == b"\"" {
            return false;
        }
        if end.len() < b.len() {
            b.starts_with(end)
        } else {
            end.starts_with(b)
        }
    })
}

/// A code generation failure (the grammar is too large for the fixed state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodegenError(pub String);

impl std::fmt::Display for CodegenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CodegenError {}

/// The parser module for a spec, as formatted Rust source. `command` is
/// named in the `// @generated` header as the way to regenerate it.
pub fn module(spec: &FormatSpec, command: &str) -> Result<String, CodegenError> {
    let tokens = module_tokens(spec)?;
    let file: syn::File = syn::parse2(tokens).map_err(|e| CodegenError(format!("generated code does not parse: {e}")))?;
    let body = prettyplease::unparse(&file);
    Ok(format!(
        "// @generated by `{command}`: do not edit.\n// Parser for {} (see chat-parser's codegen module).\n\n{body}",
        spec.template
    ))
}

/// Grammars for tools declared at build time (OpenAI tool objects), as a
/// `pub mod tools` to put inside the parser module: the lazy grammar with
/// parallel calls allowed (`GBNF`, `LARK`), the one for
/// `tool_choice: required` (`GBNF_REQUIRED`, `LARK_REQUIRED`), and the tool
/// names. Other requests build theirs from `ENVELOPE` at run time.
pub fn tool_grammar_tokens(spec: &FormatSpec, tools: &[serde_json::Value]) -> TokenStream {
    use crate::ir::build::{ParseOptions, ToolChoice};
    let grammar = |tool_choice| {
        let options = ParseOptions { tools: tools.to_vec(), tool_choice, parallel_tool_calls: true, ..ParseOptions::default() };
        crate::grammar::for_request(spec, &options)
    };
    let text = |s: &str| Literal::string(s);
    let forms = |g: Option<chat_parser_runtime::grammar::request::ReplyGrammar>| match g {
        Some(g) => (text(&g.grammar.to_gbnf()), text(&g.grammar.to_lark())),
        None => (text(""), text("")),
    };
    let (gbnf, lark) = forms(grammar(ToolChoice::Auto));
    let (gbnf_required, lark_required) = forms(grammar(ToolChoice::Required));
    let names = tools
        .iter()
        .filter_map(|t| t.get("function").unwrap_or(t).get("name").and_then(serde_json::Value::as_str))
        .map(text);
    quote! {
        /// Grammars for the tools declared at build time.
        pub mod tools {
            /// The declared tools' names.
            pub const NAMES: &[&str] = &[#(#names),*];
            /// Lazy tool-call grammar (GBNF): from a trigger on, calls of the
            /// declared tools with arguments following their schemas; parallel
            /// calls allowed. Empty when the format has no tool calls.
            pub const GBNF: &str = #gbnf;
            /// The same grammar in Lark.
            pub const LARK: &str = #lark;
            /// For `tool_choice: required`: the whole reply is reasoning then calls.
            pub const GBNF_REQUIRED: &str = #gbnf_required;
            /// The same grammar in Lark.
            pub const LARK_REQUIRED: &str = #lark_required;
        }
    }
}

/// The module's items as tokens (for the macro, which needs no formatting).
pub fn module_tokens(spec: &FormatSpec) -> Result<TokenStream, CodegenError> {
    let (grammars, index) = variants(spec);
    let mut states = States::new();
    let mut entries = Vec::new();
    for g in &grammars {
        entries.push(states.add_variant(g));
    }
    // State numbers are `u16`, and `NONE` (u16::MAX) means no state.
    let counts = [("states", states.rows.len()), ("alternatives", states.arms.len()), ("guards", states.guards.len()), ("stop sets", states.stop_sets.len()), ("literals", states.literals.len())];
    if let Some((what, n)) = counts.into_iter().find(|&(_, n)| n >= u16::MAX as usize) {
        return Err(CodegenError(format!("{}: grammar too large ({n} {what}, at most {})", spec.template, u16::MAX - 1)));
    }
    // A loop's number is a byte (`table::State::LoopHead`, `machine::Region`).
    if states.max_loops > 256 {
        return Err(CodegenError(format!("{}: grammar too large ({} loops, at most 256)", spec.template, states.max_loops)));
    }
    let pack = pack_table_of(&grammars);
    let costs = states::Costs { pack: &pack };
    let hold = hold_of(&grammars, &costs);
    let window = hold + states::lookahead(&grammars, &costs);
    // Unpacked, the text the machine may have to look at once: the raw
    // bound of the grammar, and, when markers are packed, as much text as
    // the packed hold limit lets through (markers in free text, such as a
    // name, shrink too), up to a 4 KiB buffer on the stack.
    let raw_lookahead = states::lookahead(&grammars, &states::Costs::RAW);
    let raw = hold_of(&grammars, &states::Costs::RAW) + raw_lookahead;
    let longest = pack.iter().map(String::len).max().unwrap_or(0);
    let full = if pack.is_empty() { window } else { raw.max(hold * longest.div_ceil(2) + raw_lookahead).min(4096).max(window) };
    // A packed window is unpacked on the stack (at most MAX_FULL bytes).
    let max_full = if pack.is_empty() { u16::MAX as usize } else { chat_parser_runtime::input::MAX_FULL };
    if full > max_full {
        return Err(CodegenError(format!("{}: markup too long ({full} bytes to look at once, at most {max_full})", spec.template)));
    }
    let hold_lit = Literal::usize_unsuffixed(hold);
    let window_lit = Literal::usize_unsuffixed(window);
    let full_lit = Literal::u16_unsuffixed(full as u16);
    let pack_strs = pack.iter().map(|m| Literal::string(m));
    let regions = states.max_regions.max(1);
    let loops = states.max_loops.max(1);
    // The runtime keeps a round's alternative in a few bits (`machine::Region`).
    let max = chat_parser_runtime::machine::MAX_ALTERNATIVES;
    if states.max_alts > max {
        return Err(CodegenError(format!("{}: a loop has {} alternatives (at most {max})", spec.template, states.max_alts)));
    }

    let rows: Vec<TokenStream> = states
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let id = states.ident(i as u16);
            quote! { s[St::#id as usize] = #row; }
        })
        .collect();
    // The states with a fast row numbered right after `Done`: the fast-row
    // dispatch (`Machine::fast_row`, every chunk) then tests small, close
    // numbers, which the compiler turns into fewer instructions (streamed
    // gpt-oss a-text 284.8k -> 276.7k, QwQ c-3-calls 405.0k -> 390.1k).
    // The numbers are the enum's order; rows name states, never numbers.
    let fast_ids: Vec<u16> = states.fast.iter().map(|(id, _)| *id).filter(|&id| id != 0).collect();
    let order: Vec<u16> = std::iter::once(0u16).chain(fast_ids.iter().copied()).chain((1..states.rows.len() as u16).filter(|i| !fast_ids.contains(i))).collect();
    let variants = order.iter().map(|&i| states.ident(i));
    let n_states = Literal::usize_unsuffixed(states.rows.len());
    let arms = &states.arms;
    let n_arms = Literal::usize_unsuffixed(arms.len());
    let guards = &states.guards;
    let n_guards = Literal::usize_unsuffixed(guards.len());
    let stop_sets = states.stop_set_items();
    let literal_items = states.literal_items();
    let entry_states: Vec<TokenStream> = index.iter().map(|&g| states.state(entries[g])).collect();
    let resumes: Vec<TokenStream> = states
        .resumes
        .iter()
        .enumerate()
        .flat_map(|(v, loops)| {
            let entry = states.state(entries[v]);
            let states = &states;
            loops.iter().enumerate().map(move |(i, (head, rec))| {
                let repeat = Literal::u8_unsuffixed(i as u8);
                let head = states.state(*head);
                let rec = match rec {
                    Some(r) => states.state(*r),
                    None => quote!(NONE),
                };
                quote! { LoopResume { entry: #entry, repeat: #repeat, head: #head, recover: #rec } }
            })
        })
        .collect();
    let n_resumes = Literal::usize_unsuffixed(resumes.len());
    // One arm per distinct fast path, naming its states (the variants share
    // most of their text states' paths).
    let mut fast_groups: Vec<(&str, Vec<u16>)> = Vec::new();
    for (id, key) in &states.fast {
        match fast_groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(*id),
            None => fast_groups.push((key, vec![*id])),
        }
    }
    // Each group's arm: its states' test and its row.
    let fast_rows = fast_groups.iter().map(|(_, ids)| {
        let tests = ids.iter().map(|&n| {
            let st = states.state(n);
            quote!(st == #st)
        });
        // The row is worked out from the group's first state when the
        // module is compiled (the runtime's `Fast::of`, as its out-of-line
        // paths do): a constant in the arm.
        let first = states.ident(ids[0]);
        quote! { st if #(#tests)||* => const { Fast::of(&STATES[St::#first as usize], &STOPS, &LITERALS) }, }
    });

    let text = |s: &str| Literal::string(s);
    let gp = &spec.generation_prompt;
    let (prompt, prompt_off) = (text(&gp.thinking), text(&gp.no_thinking));
    let (rstart, rend) = (text(&spec.reasoning.start), text(&spec.reasoning.end));
    let preserved = spec.preserved_tokens.iter().map(|t| text(t));
    let triggers = crate::ir::build::tool_triggers(spec).into_iter().map(|t| Literal::string(&t));
    let template = text(&spec.template);
    let envelope = crate::grammar::envelope(spec);
    let envelope_tokens = envelope.tokens();
    let static_grammar = envelope.with(|env| {
        chat_parser_runtime::grammar::request::build(
            env,
            &chat_parser_runtime::grammar::request::Request { parallel_tool_calls: true, ..Default::default() },
        )
    });
    let (gbnf, lark) = match &static_grammar {
        Some(g) => (text(&g.grammar.to_gbnf()), text(&g.grammar.to_lark())),
        None => (text(""), text("")),
    };

    // A template that ignores `enable_thinking` has its default first (an
    // entry without a variable: see `chat_parser_runtime::kwargs`).
    let default = spec.generation_prompt.default_thinking.map(|thinking| crate::spec::ThinkingSwitch {
        variable: String::new(),
        value: crate::spec::SwitchValue::Bool(true),
        thinking,
    });
    let switches = default.iter().chain(&spec.generation_prompt.switches).map(|s| {
        let variable = Literal::string(&s.variable);
        let value = match s.value {
            crate::spec::SwitchValue::Bool(b) => quote!(SwitchValue::Bool(#b)),
            crate::spec::SwitchValue::Int(i) => {
                let i = Literal::i64_unsuffixed(i);
                quote!(SwitchValue::Int(#i))
            }
        };
        let thinking = s.thinking;
        quote! { ThinkingSwitch { variable: #variable, value: #value, thinking: #thinking } }
    });

    // Only the imports the module reads (no lint allowances needed).
    let switches_value = if spec.generation_prompt.switches.is_empty() && default.is_none() {
        quote!(&[])
    } else {
        quote!({
            use chat_parser_runtime::kwargs::{SwitchValue, ThinkingSwitch};
            &[#(#switches),*]
        })
    };
    let envelope_uses = ["Envelope", "Op", "TextRole", "TriggerKind"]
        .into_iter()
        .filter(|n| states::uses_ident(&envelope_tokens, n))
        .map(|n| proc_macro2::Ident::new(n, proc_macro2::Span::call_site()));
    let machine_code = quote! { #(#rows)* #(#arms)* #(#guards)* #stop_sets #(#resumes)* };
    // What every module names, and what only some tables hold.
    let always = ["Arm", "Fast", "Guard", "LoopResume", "Machine", "State", "StopSet", "Table"];
    let some = ["Arms", "Kind", "NONE"].into_iter().filter(|n| states::uses_ident(&machine_code, n));
    let mut names: Vec<&str> = always.into_iter().chain(some).collect();
    names.sort_by_key(|n| n.to_ascii_lowercase());
    let runtime_uses = names.into_iter().map(|n| proc_macro2::Ident::new(n, proc_macro2::Span::call_site()));

    Ok(quote! {

        use chat_parser_runtime::__private::{#(#runtime_uses),*};
        /// The request options `Parser::new` takes (re-exported for callers,
        /// which may not use it: a module need not).
        #[allow(unused_imports)]
        pub use chat_parser_runtime::Options;

        /// The template this parser was generated from.
        pub const TEMPLATE: &str = #template;
        /// What the template appends to open the assistant's turn (thinking on).
        pub const GENERATION_PROMPT: &str = #prompt;
        /// The generation prompt with `enable_thinking: false`.
        pub const GENERATION_PROMPT_NO_THINKING: &str = #prompt_off;
        /// The `chat_template_kwargs` variables this template switches
        /// thinking with, and how (`Options::chat_template_kwargs`).
        pub const THINKING_SWITCHES: &[chat_parser_runtime::kwargs::ThinkingSwitch] = #switches_value;
        /// The reasoning block's markers (empty when the template has none).
        pub const REASONING_START: &str = #rstart;
        pub const REASONING_END: &str = #rend;
        /// Markers that must stay single tokens when decoding is constrained.
        pub const PRESERVED_TOKENS: &[&str] = &[#(#preserved),*];
        /// Text that starts tool calls (what switches a lazy grammar on).
        pub const GRAMMAR_TRIGGERS: &[&str] = &[#(#triggers),*];
        /// Stop strings beyond the model's own end-of-turn token.
        pub const STOP_STRINGS: &[&str] = &[];
        /// The tool-call grammar in GBNF (llama.cpp), lazy: it applies from a
        /// trigger on (`GRAMMAR_TRIGGERS`; with reasoning on, the patterns in
        /// `ENVELOPE` skip the reasoning block). Tool names are any name and
        /// arguments any JSON object, parallel calls allowed; empty when the
        /// format has no tool calls. For a request's own tools, `tool_choice`
        /// or a reply schema, build one from `ENVELOPE` with
        /// `chat_parser_runtime::grammar::request::build` (feature `alloc`).
        pub const GBNF: &str = #gbnf;
        /// The same grammar in Lark (llguidance).
        pub const LARK: &str = #lark;
        /// How this format writes tool calls, for grammars built at run time.
        pub static ENVELOPE: chat_parser_runtime::envelope::Envelope<'static> = {
            use chat_parser_runtime::envelope::{#(#envelope_uses),*};
            #envelope_tokens
        };

        /// The longest markup the parser reads before it knows what it is
        /// (from the start of an uncommitted call, or from the last reported
        /// piece): longer markup is broken, and degrades to content.
        pub const HOLD_LIMIT: usize = #hold_lit;
        /// Bytes of output the parser can hold back across chunks: the hold
        /// limit plus the longest lookahead (packed bytes, when `PACK` is
        /// not empty).
        pub const WINDOW_BYTES: usize = #window_lit;
        const W: usize = WINDOW_BYTES;
        /// Markers held back as two-byte codes (`chat_parser_runtime::pack`);
        /// `HOLD_LIMIT` counts them so.
        pub const PACK: &[&str] = &[#(#pack_strs),*];

        /// A streaming parser of the model's output: feed it bytes as they
        /// arrive, then `finish`. Fixed-size state, no heap allocation.
        pub type Parser<'t> = chat_parser_runtime::parser::Parser<'t, Grammar, W, #regions, #loops>;

        /// This template's state machine (the runtime's parser walks its table).
        #[doc(hidden)]
        pub struct Grammar;

        impl Machine for Grammar {
            const TABLE: &'static Table = &TABLE;

            #[inline(always)]
            fn fast_row(st: u16) -> Fast {
                match st {
                    #(#fast_rows)*
                    _ => Fast::No,
                }
            }
        }

        static TABLE: Table = Table {
            states: &STATES,
            arms: &ARMS,
            guards: &GUARDS,
            stops: &STOPS,
            literals: &LITERALS,
            resumes: &RESUMES,
            entries: [#(#entry_states),*],
            switches: THINKING_SWITCHES,
            pack: PACK,
            hold_limit: HOLD_LIMIT,
            full: #full_lit,
        };

        /// The machine's states, named for what they read.
        #[derive(Clone, Copy)]
        #[repr(u16)]
        enum St {
            #(#variants),*
        }

        /// Each state's row: what it reads and where it goes next.
        static STATES: [State; #n_states] = {
            let mut s = [State::Done; #n_states];
            #(#rows)*
            s
        };

        #literal_items

        /// The alternatives of choices and loops: a guard, and the state
        /// taken when it matches.
        static ARMS: [Arm; #n_arms] = [#(#arms),*];

        /// The markup guards match (compound ones name their parts by number).
        static GUARDS: [Guard; #n_guards] = [#(#guards),*];

        #stop_sets

        /// Where each loop resumes after a broken round, per grammar variant.
        static RESUMES: [LoopResume; #n_resumes] = [#(#resumes),*];
    })
}
