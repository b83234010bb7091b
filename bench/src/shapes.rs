//! The benchmark outputs: six corpus templates of different output
//! formats, six 16 KB outputs each, written in the template's own markup
//! (from right after the generation prompt), with the message each must
//! parse into. The `parsers` benchmark, the `no_alloc` test and the binary's
//! test share them.
//!
//! | label          | template                                   | format                                                    |
//! |----------------|--------------------------------------------|-----------------------------------------------------------|
//! | `qwq-32b`      | Qwen-QwQ-32B                               | `<think>` (opened by the prompt) + `<tool_call>` JSON     |
//! | `qwen3-coder`  | Qwen3-Coder                                | `<tool_call><function=…><parameter=…>` (XML arguments)   |
//! | `mistral-3.2`  | Mistral-Small-3.2-24B-Instruct-2506        | `[TOOL_CALLS]name[CALL_ID]id[ARGS]{…}`                    |
//! | `r1-distill`   | deepseek-ai-DeepSeek-R1-Distill-Qwen-32B   | `<think>` (opened by the prompt) + `<｜tool▁calls▁begin｜>` sections with fenced JSON |
//! | `gpt-oss`      | openai-gpt-oss-120b                        | harmony messages: `analysis`, `final`, `commentary to=functions.NAME` |
//! | `gemma-4`      | google-gemma-4-31B-it                      | `<\|channel>thought` + `<\|tool_call>call:NAME{k:<\|"\|>v<\|"\|>}` |
//!
//! Shapes ([`Shape`]):
//!
//! - `a-text`: 8 KiB reasoning + 8 KiB content (16 KiB content when the
//!   template has no reasoning);
//! - `b-long-call`: 8 KiB reasoning (8 KiB content without reasoning) + one
//!   call whose string argument is about 8.5 KiB;
//! - `c-3-calls`: 4 KiB content + three parallel calls of about 4 KiB each
//!   (a template whose prompt opens `<think>` first closes it after one line);
//! - `d-long-call-escaped`, `e-3-calls-escaped`: `b` and `c` with Python
//!   source dense in what JSON escapes (Windows paths, regular expressions,
//!   quotes in f-strings: one byte in eight of it is escaped), as JSON
//!   arguments (escaped) or raw values (Qwen3-Coder, Gemma 4: as written).
//! - `f-chinese-text`: `a` in Chinese (three bytes a character, with some
//!   ASCII: numbers, code spans, Latin names), as these models often write:
//!   every 4-byte chunk of it cuts a character.
//!
//! The request ([`options`], [`parse_options`]) declares one tool,
//! `save_snippet(code: string, line: integer)`, with `parallel_tool_calls`
//! and `enable_thinking` on.

use chat_parser_generator::ir::build::ParseOptions;
use chat_parser_generator::FormatSpec;
use chat_parser_runtime::{ArgType, Message, MessageBuilder, Options, Tool};
use serde_json::{json, Value};

use crate::parsers::AnyParser;

/// The one declared tool.
pub const TOOL: &str = "save_snippet";

/// [`TOOL`] in the runtime's form.
pub const TOOLS: &[Tool<'static>] = &[Tool { name: TOOL, args: &[("code", ArgType::String), ("line", ArgType::Json)] }];

/// The benchmark request for a generated parser: [`TOOLS`], parallel calls,
/// thinking on, reasoning extracted.
pub fn options() -> Options<'static> {
    Options { parallel_tool_calls: true, tools: TOOLS, ..Options::default() }
}

/// The same request for the reference parser (the OpenAI tool definition
/// whose schema gives [`TOOLS`]' argument types).
pub fn parse_options() -> ParseOptions {
    ParseOptions { enable_thinking: true, parallel_tool_calls: true, tools: vec![tool_definition()], ..ParseOptions::default() }
}

/// `save_snippet` as an OpenAI tool object.
pub fn tool_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": TOOL,
            "description": "Saves a code snippet at a line of the open file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "code": {"type": "string", "description": "The snippet."},
                    "line": {"type": "integer", "description": "Where to insert it."}
                },
                "required": ["code", "line"]
            }
        }
    })
}

/// How a template writes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStyle {
    /// `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, calls joined by `\n`.
    JsonTag,
    /// `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…</function>\n</tool_call>`.
    XmlTag,
    /// `[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…}`, one after the other.
    MistralArgs,
    /// `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`.
    DeepseekFenced,
    /// Harmony: reasoning in an `analysis` message, content in a `final`
    /// message (before calls, in a `commentary` message without a
    /// recipient), each call a `commentary to=functions.NAME <|constrain|>json`
    /// message ended by `<|call|>`.
    Harmony,
    /// Gemma 4: `<|channel>thought\n…<channel|>` reasoning, calls
    /// `<|tool_call>call:NAME{code:<|"|>…<|"|>,line:N}<tool_call|>`.
    Gemma,
}

/// A corpus template and how its output is written.
#[derive(Debug)]
pub struct Family {
    /// File name in `../shared/templates` (and in `parsers::TEMPLATES`).
    pub file: &'static str,
    pub label: &'static str,
    pub calls: CallStyle,
    /// The output has reasoning: after a `<think>` the generation prompt
    /// opened (closed by `</think>`), or in the format's own reasoning
    /// markup (harmony, Gemma 4).
    pub reasons: bool,
}

/// The benchmarked templates.
pub const FAMILIES: [Family; 6] = [
    Family { file: "Qwen-QwQ-32B.jinja", label: "qwq-32b", calls: CallStyle::JsonTag, reasons: true },
    Family { file: "Qwen3-Coder.jinja", label: "qwen3-coder", calls: CallStyle::XmlTag, reasons: false },
    Family {
        file: "Mistral-Small-3.2-24B-Instruct-2506.jinja",
        label: "mistral-3.2",
        calls: CallStyle::MistralArgs,
        reasons: false,
    },
    Family {
        file: "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
        label: "r1-distill",
        calls: CallStyle::DeepseekFenced,
        reasons: true,
    },
    Family { file: "openai-gpt-oss-120b.jinja", label: "gpt-oss", calls: CallStyle::Harmony, reasons: true },
    Family { file: "google-gemma-4-31B-it.jinja", label: "gemma-4", calls: CallStyle::Gemma, reasons: true },
];

/// One of the six outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// 8 KiB reasoning + 8 KiB content.
    Text,
    /// 8 KiB reasoning + one call with ~8.5 KiB of string argument.
    LongCall,
    /// 4 KiB content + three parallel calls.
    ThreeCalls,
    /// [`Shape::LongCall`] with Python source dense in what JSON escapes.
    LongCallEscaped,
    /// [`Shape::ThreeCalls`] with Python source dense in what JSON escapes.
    ThreeCallsEscaped,
    /// [`Shape::Text`] in Chinese.
    ChineseText,
}

pub const SHAPES: [Shape; 6] = [Shape::Text, Shape::LongCall, Shape::ThreeCalls, Shape::LongCallEscaped, Shape::ThreeCallsEscaped, Shape::ChineseText];

impl Shape {
    pub fn label(self) -> &'static str {
        match self {
            Shape::Text => "a-text",
            Shape::LongCall => "b-long-call",
            Shape::ThreeCalls => "c-3-calls",
            Shape::LongCallEscaped => "d-long-call-escaped",
            Shape::ThreeCallsEscaped => "e-3-calls-escaped",
            Shape::ChineseText => "f-chinese-text",
        }
    }

    /// The argument's source: Rust with few escapes, or escape-dense Python.
    fn code(self, len: usize) -> String {
        match self {
            Shape::LongCallEscaped | Shape::ThreeCallsEscaped => escaped_code(len),
            _ => code(len),
        }
    }

    /// Reasoning + content only (the 0.5 ns/byte target), or tool arguments (1.5 ns/byte).
    pub fn has_calls(self) -> bool {
        !matches!(self, Shape::Text | Shape::ChineseText)
    }

    /// The answer prose of this shape.
    fn content(self, len: usize) -> String {
        match self {
            Shape::ChineseText => chinese_content(len),
            _ => content(len),
        }
    }
}

/// One template × shape: the output and the message it parses into.
#[derive(Debug)]
pub struct Case {
    pub family: &'static Family,
    pub shape: Shape,
    /// `label/shape`, e.g. `qwq-32b/a-text`.
    pub name: String,
    pub text: String,
    pub expected: Expected,
}

/// The message an output is meant to parse into.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub reasoning: String,
    pub content: String,
    pub calls: Vec<ExpectedCall>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedCall {
    pub name: String,
    /// Empty when the format carries no ids.
    pub id: String,
    pub arguments: Value,
}

impl Expected {
    /// Whether `message` is this message (text compared without surrounding
    /// whitespace, arguments as JSON values, every call complete).
    pub fn check(&self, message: &Message) -> Result<(), String> {
        if message.reasoning_content.trim() != self.reasoning.trim() {
            return Err(format!("reasoning differs: got {} bytes, want {}", message.reasoning_content.trim().len(), self.reasoning.trim().len()));
        }
        if message.content.trim() != self.content.trim() {
            return Err(format!("content differs: got {} bytes starting {:?}", message.content.len(), prefix(&message.content)));
        }
        if message.tool_calls.len() != self.calls.len() {
            return Err(format!("{} calls, want {}", message.tool_calls.len(), self.calls.len()));
        }
        for (i, (got, want)) in message.tool_calls.iter().zip(&self.calls).enumerate() {
            let arguments: Value = serde_json::from_str(&got.arguments).map_err(|e| format!("call {i}: arguments are not JSON: {e}"))?;
            if got.name != want.name || got.id != want.id || !got.complete || arguments != want.arguments {
                return Err(format!("call {i}: got {:?} (id {:?}, complete {}), want {:?} (id {:?})", got.name, got.id, got.complete, want.name, want.id));
            }
        }
        Ok(())
    }
}

fn prefix(s: &str) -> &str {
    &s[..s.char_indices().nth(60).map_or(s.len(), |(i, _)| i)]
}

impl Case {
    /// Parses the output with the generated parser in `chunk`-byte pieces
    /// (`usize::MAX`: at once) and compares the message with the expected
    /// one. `Err` also when the corpus template has no generated parser.
    pub fn check_generated(&self, chunk: usize) -> Result<(), String> {
        let mut parser = AnyParser::new(self.family.file, options()).ok_or_else(|| format!("no generated parser for {}", self.family.file))?;
        let mut message = MessageBuilder::new();
        crate::run_parser(&mut parser, self.text.as_bytes(), chunk, false, &mut message);
        self.expected.check(&message.into_message()).map_err(|e| format!("{} (generated parser, {chunk}-byte chunks): {e}", self.name))
    }
}

const KIB: usize = 1024;

/// Every case, in [`FAMILIES`] × [`SHAPES`] order.
pub fn cases() -> Vec<Case> {
    FAMILIES.iter().flat_map(|f| SHAPES.iter().map(move |&s| case(f, s))).collect()
}

struct Call {
    id: &'static str,
    code: String,
    line: u32,
}

impl Call {
    /// The arguments as the templates' `tojson` writes them.
    fn json_arguments(&self) -> String {
        format!("{{\"code\": {}, \"line\": {}}}", Value::String(self.code.clone()), self.line)
    }
}

/// One template's output of one shape.
pub fn case(family: &'static Family, shape: Shape) -> Case {
    const IDS: [&str; 3] = ["a1B2c3D4e", "f5G6h7I8j", "k9L0m1N2o"];
    let half = 8 * KIB;
    let reasons = family.reasons;
    let (reasoning, content, calls) = match shape {
        Shape::Text if reasons => (reasoning(half), content(half), Vec::new()),
        Shape::Text => (String::new(), content(2 * half), Vec::new()),
        Shape::ChineseText if reasons => (chinese_reasoning(half), chinese_content(half), Vec::new()),
        Shape::ChineseText => (String::new(), chinese_content(2 * half), Vec::new()),
        Shape::LongCall | Shape::LongCallEscaped => {
            let call = Call { id: IDS[0], code: shape.code(8 * KIB + 300), line: 120 };
            if reasons {
                (reasoning(half), String::new(), vec![call])
            } else {
                (String::new(), content(half), vec![call])
            }
        }
        Shape::ThreeCalls | Shape::ThreeCallsEscaped => (
            if reasons { "I'll save the three snippets in one go.".to_string() } else { String::new() },
            content(4 * KIB),
            IDS.iter().enumerate().map(|(i, &id)| Call { id, code: shape.code(4000), line: 10 + 40 * i as u32 }).collect(),
        ),
    };
    let mut text = render(family, &reasoning, &content, &calls);
    let mut content = content;
    if text.len() < 16 * KIB && !content.is_empty() {
        // Terse markup (Gemma 4 writes code unescaped): more content
        // brings the output to 16 KiB like the others.
        content = shape.content(content.len() + 16 * KIB - text.len() + 64);
        text = render(family, &reasoning, &content, &calls);
    }
    let has_ids = family.calls == CallStyle::MistralArgs;
    let calls = calls
        .iter()
        .map(|c| ExpectedCall {
            name: TOOL.to_string(),
            id: if has_ids { c.id.to_string() } else { String::new() },
            arguments: json!({"code": c.code, "line": c.line}),
        })
        .collect();
    Case { family, shape, name: format!("{}/{}", family.label, shape.label()), text, expected: Expected { reasoning, content, calls } }
}

/// One output in the family's markup.
fn render(family: &Family, reasoning: &str, content: &str, calls: &[Call]) -> String {
    match family.calls {
        CallStyle::Harmony => return render_harmony(reasoning, content, calls),
        CallStyle::Gemma => return render_gemma(reasoning, content, calls),
        _ => {}
    }
    let mut out = String::new();
    if family.reasons {
        out += reasoning;
        out += "\n</think>\n\n";
    }
    out += content;
    if calls.is_empty() {
        return out;
    }
    match family.calls {
        CallStyle::JsonTag => {
            out += "\n\n";
            let rendered: Vec<String> = calls
                .iter()
                .map(|c| format!("<tool_call>\n{{\"name\": \"{TOOL}\", \"arguments\": {}}}\n</tool_call>", c.json_arguments()))
                .collect();
            out += &rendered.join("\n");
        }
        CallStyle::XmlTag => {
            out += "\n\n";
            let rendered: Vec<String> = calls
                .iter()
                .map(|c| {
                    format!(
                        "<tool_call>\n<function={TOOL}>\n<parameter=code>\n{}\n</parameter>\n<parameter=line>\n{}\n</parameter>\n</function>\n</tool_call>",
                        c.code, c.line
                    )
                })
                .collect();
            out += &rendered.join("\n");
        }
        CallStyle::MistralArgs => {
            for c in calls {
                out += &format!("[TOOL_CALLS]{TOOL}[CALL_ID]{}[ARGS]{}", c.id, c.json_arguments());
            }
        }
        CallStyle::DeepseekFenced => {
            let rendered: Vec<String> = calls
                .iter()
                .map(|c| format!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{TOOL}\n```json\n{}\n```<｜tool▁call▁end｜>", c.json_arguments()))
                .collect();
            out += "<｜tool▁calls▁begin｜>";
            out += &rendered.join("\n");
            out += "<｜tool▁calls▁end｜>";
        }
        CallStyle::Harmony | CallStyle::Gemma => {}
    }
    out
}

/// A harmony reply: an `analysis` message, then the content in the `final`
/// message (or, when calls follow, in a `commentary` preamble), then one
/// message per call.
fn render_harmony(reasoning: &str, content: &str, calls: &[Call]) -> String {
    let mut messages = Vec::new();
    if !reasoning.is_empty() {
        messages.push(format!("<|channel|>analysis<|message|>{reasoning}<|end|>"));
    }
    if !content.is_empty() && calls.is_empty() {
        // The last message: a server strips its `<|return|>`.
        messages.push(format!("<|channel|>final<|message|>{content}"));
    } else if !content.is_empty() {
        messages.push(format!("<|channel|>commentary<|message|>{content}<|end|>"));
    }
    for c in calls {
        messages.push(format!("<|channel|>commentary to=functions.{TOOL} <|constrain|>json<|message|>{}<|call|>", c.json_arguments()));
    }
    messages.join("<|start|>assistant")
}

/// A Gemma 4 reply: the thought channel, content, then the calls with their
/// object-literal arguments (the code string between `<|"|>` markers, raw).
fn render_gemma(reasoning: &str, content: &str, calls: &[Call]) -> String {
    let mut out = String::new();
    if !reasoning.is_empty() {
        out += &format!("<|channel>thought\n{reasoning}<channel|>");
    }
    out += content;
    for c in calls {
        out += &format!("<|tool_call>call:{TOOL}{{code:<|\"|>{}<|\"|>,line:{}}}<tool_call|>", c.code, c.line);
    }
    out
}

/// A short output that walks through a template's markup, well-formed and
/// not: reasoning between the spec's markers, content with look-alike text,
/// a call assembled from the spec's tool markers (tagged arguments when the
/// format has them, JSON otherwise), then every preserved token followed by
/// call-like text. For checks that must cover every template (allocation,
/// panics), not for exact results.
pub fn mixed_text(spec: &FormatSpec) -> String {
    let t = &spec.tools;
    let mut out = String::new();
    out += &spec.reasoning.start;
    out += "Plan: if a < b then [x] else “é”; maybe <tool later.";
    out += &spec.reasoning.end;
    out += "Hello <b>world</b> [1] {\"k\": [1, 2]} — 日本 🙂\n";
    out += &t.format.section_start;
    out += &t.format.per_call_start;
    out += &t.function.name_prefix;
    let tagged = !t.arguments.name_prefix.is_empty();
    if t.function.name_prefix.is_empty() && !tagged {
        out += &format!("{{\"name\": \"{TOOL}\", \"arguments\": {{\"code\": \"x < 1;\\n\", \"line\": 3}}}}");
    } else {
        out += TOOL;
        out += &t.function.name_suffix;
        if tagged {
            out += &t.arguments.start;
            for (key, value) in [("code", "if x < 1 {\n  y = \"</b>\";\n}"), ("line", "3")] {
                out += &t.arguments.name_prefix;
                out += key;
                out += &t.arguments.name_suffix;
                out += &t.arguments.value_prefix;
                out += value;
                out += &t.arguments.value_suffix;
                out += &t.arguments.separator;
            }
            out += &t.arguments.end;
        } else {
            out += "{\"code\": \"x < 1;\\n\", \"line\": 3}";
        }
        out += &t.function.close;
    }
    out += &t.format.per_call_end;
    out += &t.format.section_end;
    out += "\nThen, loosely:";
    for token in &spec.preserved_tokens {
        out += token;
        out += " save_snippet {\"code\": \"a\\\"b\", \"line\": 7} ";
    }
    out += "done.";
    out
}

// ---------------------------------------------------------------------------
// Text

/// `paragraph` repeated, cut to at most `len` bytes on a character boundary
/// and without trailing whitespace.
fn repeat_to(paragraph: &str, len: usize) -> String {
    let mut s = paragraph.repeat(len / paragraph.len() + 1);
    let mut cut = len;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.truncate(s.trim_end().len());
    s
}

/// Reasoning prose (some `<`, brackets and multi-byte characters, none of them a marker).
fn reasoning(len: usize) -> String {
    repeat_to(
        "The user wants the helper rewritten so that each line stays under 80 columns. \
         First I check the existing layout: the header is fine, but the loop body mixes tabs and spaces — that needs fixing. \
         If n < 10 the fast path applies; otherwise we fall back to the general case (xs[i] ≤ xs[j] for i < j). \
         Let me also double-check the edge cases: empty input, a single line, a trailing newline.\n\n",
        len,
    )
}

/// Answer prose (Markdown-ish, with `<`, `[`, code spans and multi-byte characters).
fn content(len: usize) -> String {
    repeat_to(
        "Here is the updated version. The parser now reads the input in one pass and keeps only what it must hold back: \
         a partial marker at the end of a chunk, or an incomplete UTF-8 sequence such as the first byte of “é”. \
         Costs stay linear, so `parse(a + b)` takes about as long as `parse(a)` plus `parse(b)` when a < b [see note 1].\n\n\
         - step 1: read the chunk;\n- step 2: emit what is certain → the sink.\n\n",
        len,
    )
}

/// Reasoning prose in Chinese (some ASCII: a number, a comparison, a
/// Latin name).
fn chinese_reasoning(len: usize) -> String {
    repeat_to(
        "用户希望把这个函数改写成每行不超过 80 列。首先检查现有的布局：头部没有问题，但循环体里混用了制表符和空格，需要修正。\
         如果 n < 10 就走快速路径；否则回到一般情况（对 i < j 有 xs[i] ≤ xs[j]）。\
         再确认一下边界情况：空输入、只有一行、末尾带换行符。\n\n",
        len,
    )
}

/// Answer prose in Chinese (Markdown-ish, with code spans and `<`).
fn chinese_content(len: usize) -> String {
    repeat_to(
        "这是更新后的版本。解析器现在一次读完输入，只保留必须暂存的部分：块末尾不完整的标记，\
         或者被截断的 UTF-8 字符，例如“中”的前两个字节。开销保持线性，所以当 a < b 时，\
         `parse(a + b)` 的耗时大约等于 `parse(a)` 加上 `parse(b)`【见注 1】。\n\n\
         - 第一步：读取数据块；\n- 第二步：把确定的内容交给 sink。\n\n",
        len,
    )
}

/// Python source of about `len` bytes, whole lines, dense in what a JSON
/// string escapes: Windows paths, regular expressions, quotes inside
/// f-strings, `\t` and `\n` escapes, newlines. As a JSON string, about one
/// byte in seven is a backslash (one in eight of the raw text is escaped).
fn escaped_code(len: usize) -> String {
    const BLOCK: &str = r#"def load_N(name, root="C:\\Users\\dev\\data"):
    # Rows look like: 12, "Ada Lovelace" -- keep the id of each.
    path = f"{root}\\{name}_N.csv"
    row = re.compile(r"^(\d+)\s*,\s*\"([^\"]*)\"$")
    print(f'loading "{path}"\tok\n', end="")
    return [m.group(1) for m in map(row.match, open(path)) if m]

"#;
    let mut s = String::new();
    let mut i = 0;
    while s.len() < len {
        s += &BLOCK.replace('N', &i.to_string());
        i += 1;
    }
    let cut = s[..len].rfind('\n').unwrap_or(len);
    s.truncate(cut);
    s.truncate(s.trim_end().len());
    s
}

/// Rust source of about `len` bytes (quotes, `<`, braces, newlines), whole lines.
fn code(len: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < len {
        s += &format!(
            "/// Sums twice the \"small\" values (those < {i}) → u32.\n\
             fn step_{i}(xs: &[u32]) -> u32 {{\n    xs.iter().filter(|x| **x < {i}).map(|x| x * 2).sum::<u32>()\n}}\n\n"
        );
        i += 1;
    }
    let cut = s[..len].rfind('\n').unwrap_or(len);
    s.truncate(cut);
    s.truncate(s.trim_end().len());
    s
}
