//! The `chat-parser` command line.
//!
//! ```text
//! chat-parser analyze TEMPLATE.jinja [--format spec|reference]
//! chat-parser parse TEMPLATE.jinja [--stream CHUNKS] [--hold-calls] [--cut-off-calls content|incomplete] < REQUEST.json
//! chat-parser generate TEMPLATE.jinja [--out FILE]
//! chat-parser grammar TEMPLATE.jinja [--json] < REQUEST.json
//! ```
//!
//! `TEMPLATE` may also be a HF `tokenizer_config.json`; every command takes
//! `--bos-token T` and `--eos-token T`, the special tokens the template
//! writes through variables (see [`TemplateFile`]).
//!
//! `grammar` reads the same request as `parse` (`text` may be left out) and
//! prints the GBNF grammar that constrains the reply (empty when nothing
//! does); `--json` prints `{grammar, lazy, triggers, preserved_tokens, lark}`.
//!
//! `generate` prints the Rust parser module for the template (what the
//! build.rs API and the `chat_parser!` macro generate), with a header naming
//! the command, as given, that regenerates it.
//!
//! `parse` reads one request from stdin: an OpenAI chat-completions body
//! (`tools`, `tool_choice`, `parallel_tool_calls`, `response_format`; other
//! fields such as `messages` are accepted and ignored) plus `text`, the model
//! output right after the generation prompt, and the options `is_partial`,
//! `reasoning_format`, `enable_thinking` and `json_schema`. It prints the
//! parsed message as one JSON line, with the `finish_reason` the parse
//! implies (`length` when the output ended inside a call); with `--stream`
//! it first prints each OpenAI-style delta of feeding `text` in chunks
//! (`N` bytes, a list `1,3,7` cycled, or `rand:SEED:MAX`), one JSON line
//! each.

use std::io::{Read, Write};
use std::process::ExitCode;

use chat_parser_generator::{
    interp::StreamParser,
    ir::build::{build, ParseOptions, ReasoningFormat, ToolChoice},
    jinja::SpecialTokens,
    reference::reference_view,
    template_file::TemplateFile,
    FormatSpec,
};
use chat_parser_runtime::message::CutOffCalls;
use chat_parser_runtime::{DeltaBuilder, Event, Message, MessageBuilder, Sink};
use serde_json::{json, Value};

const ANALYZE_USAGE: &str = "usage: chat-parser analyze TEMPLATE.jinja [--format spec|reference]";
const PARSE_USAGE: &str =
    "usage: chat-parser parse TEMPLATE.jinja [--stream CHUNKS] [--hold-calls] [--cut-off-calls content|incomplete] < REQUEST.json";
const GENERATE_USAGE: &str = "usage: chat-parser generate TEMPLATE.jinja [--out FILE]";
const GRAMMAR_USAGE: &str = "usage: chat-parser grammar TEMPLATE.jinja [--json] < REQUEST.json";
const USAGE: &str = "usage: chat-parser analyze TEMPLATE.jinja [--format spec|reference]
       chat-parser parse TEMPLATE.jinja [--stream CHUNKS] [--hold-calls] [--cut-off-calls content|incomplete] < REQUEST.json
       chat-parser generate TEMPLATE.jinja [--out FILE]
       chat-parser grammar TEMPLATE.jinja [--json] < REQUEST.json";

const HELP: &str = "\
commands:
  analyze   print the format spec found in the template (JSON)
  parse     parse model output; the request (JSON) is read from stdin:
              text                 the model output, from right after the generation prompt (required)
              is_partial           true: the output is not complete yet (default false)
              tools                OpenAI tool objects
              tool_choice          \"auto\" (default), \"required\", \"none\" or {\"type\": \"function\", ...}
              parallel_tool_calls  default false
              reasoning_format     \"auto\" (default), \"deepseek\" or \"none\"
              enable_thinking      default true
              chat_template_kwargs the template's variables (HF/vLLM convention): those that switch
                                   thinking (`analyze` lists them as generation_prompt.switches:
                                   enable_thinking, DeepSeek's thinking, ...) set it, unless
                                   enable_thinking is given
              json_schema          the reply is one JSON value (or response_format: {\"type\": \"json_schema\", ...})
              messages and other chat-completions fields are accepted and ignored
            prints the message: {\"content\", \"reasoning_content\", \"tool_calls\": [{\"name\", \"id\", \"arguments\"}],
            \"finish_reason\"}: \"length\" when the output ended inside a call, else \"stop\" (null when is_partial)
            --cut-off-calls content (default): a call the output cut off is not a call; its text is content
            --cut-off-calls incomplete: keep it as a call (\"complete\": false is printed for it)
            --stream CHUNKS: feed the text in chunks, print each delta (OpenAI chunk `delta`) as a
                        JSON line, then the message as the last line. CHUNKS: N (bytes), a list
                        of sizes cycled (1,3,7), or rand:SEED:MAX (random sizes 1..=MAX, xorshift64*)
            --hold-calls: with --stream, hold each call's deltas until the call is complete (a call
                        the output cut off is never sent; its text is sent as content)
  generate  print the generated Rust parser module for the template (a module body:
            include it inside `mod name { ... }`; it needs the chat-parser-runtime crate)
            --out FILE: write it to FILE instead (left untouched when it already holds it)
  grammar   print the GBNF grammar that constrains the reply for the request on stdin (the fields
            of `parse`; `text` not needed): tool calls with the request's tools (lazy, from a
            trigger on, unless tool_choice is required), or the reply schema; empty when nothing
            constrains the reply. Schema features it cannot express are warned about on stderr.
            --json: print {\"grammar\", \"lazy\", \"triggers\": [{\"type\", \"value\"}], \"preserved_tokens\", \"lark\"}
TEMPLATE is a Jinja file, or a HF tokenizer_config.json (its chat_template, bos_token and eos_token).
every command takes --bos-token T and --eos-token T: the tokenizer's special tokens, which a template
writes through {{ bos_token }} / {{ eos_token }} (the Mistral family ends a turn with `{{ eos_token }}`,
so only with --eos-token '</s>' is a `</s>` in the output known to end the reply)
errors print one line `error: ...` on stderr and exit with status 2";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match run(&args, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String], out: &mut impl Write) -> Result<(), String> {
    let Some((command, rest)) = args.split_first() else { return Err(USAGE.into()) };
    let (rest, tokens) = special_token_options(rest)?;
    let rest = rest.as_slice();
    match command.as_str() {
        "analyze" => {
            let text = analyze_command(rest, &tokens)?;
            write_line(out, &text)
        }
        "parse" => parse_command(rest, &tokens, out),
        "generate" => generate_command(rest, &tokens, out),
        "grammar" => grammar_command(rest, &tokens, out),
        "-h" | "--help" | "help" => write_line(out, &format!("{USAGE}\n\n{HELP}")),
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    }
}

/// Writes one line and flushes it, so that streamed deltas appear as they are made.
fn write_line(out: &mut impl Write, line: &str) -> Result<(), String> {
    writeln!(out, "{line}").and_then(|()| out.flush()).map_err(|e| format!("cannot write output: {e}"))
}

/// An error message on one line: diagnostics that span lines are joined.
fn one_line(message: impl std::fmt::Display) -> String {
    let text = message.to_string();
    text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join(" ")
}

/// Takes the options every command shares out of `args`: `--bos-token T`
/// and `--eos-token T`, the tokenizer's special tokens the template writes
/// through `{{ bos_token }}` / `{{ eos_token }}` (they override a tokenizer
/// config's own).
fn special_token_options(args: &[String]) -> Result<(Vec<String>, SpecialTokens), String> {
    let mut rest = Vec::new();
    let mut tokens = SpecialTokens::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_string())),
            _ => (arg.as_str(), None),
        };
        let slot = match flag {
            "--bos-token" => &mut tokens.bos_token,
            "--eos-token" => &mut tokens.eos_token,
            _ => {
                rest.push(arg.clone());
                continue;
            }
        };
        // A token starting with `--` is only taken as `--eos-token=--x`:
        // `--eos-token --json` is a missing value, not the token `--json`.
        let value = match inline {
            Some(value) => Some(value),
            None => it.next().filter(|v| !v.starts_with("--")).cloned(),
        };
        *slot = value.filter(|v| !v.is_empty()).ok_or_else(|| format!("{flag} needs the token's text, e.g. {flag} '</s>'"))?;
    }
    Ok((rest, tokens))
}

/// Reads, compiles and analyses a template: a Jinja file, or a HF
/// `tokenizer_config.json` (its `chat_template` and special tokens).
fn load_spec(path: &str, tokens: &SpecialTokens) -> Result<FormatSpec, String> {
    let file = TemplateFile::read(std::path::Path::new(path)).map_err(one_line)?.with_tokens(tokens);
    chat_parser_generator::spec_from_file(&file).map_err(one_line)
}

fn analyze_command(args: &[String], tokens: &SpecialTokens) -> Result<String, String> {
    let mut path = None;
    let mut format = "spec".to_string();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--format" => format = it.next().cloned().ok_or("--format needs a value (spec or reference)")?,
            flag if flag.starts_with("--format=") => format = flag["--format=".len()..].to_string(),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`; {ANALYZE_USAGE}")),
            p if path.is_none() => path = Some(p.to_string()),
            extra => return Err(format!("unexpected argument `{extra}`; {ANALYZE_USAGE}")),
        }
    }
    let path = path.ok_or(ANALYZE_USAGE)?;
    if !matches!(format.as_str(), "spec" | "reference") {
        return Err(format!("unknown format `{format}` (spec or reference)"));
    }
    let spec = load_spec(&path, tokens)?;
    let value = match format.as_str() {
        "reference" => reference_view(&spec),
        _ => serde_json::to_value(&spec).map_err(|e| e.to_string())?,
    };
    serde_json::to_string_pretty(&value).map_err(|e| e.to_string())
}

fn generate_command(args: &[String], tokens: &SpecialTokens, out: &mut impl Write) -> Result<(), String> {
    let mut path = None;
    let mut target = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--out" => target = Some(it.next().cloned().ok_or("--out needs a file name")?),
            flag if flag.starts_with("--out=") => target = Some(flag["--out=".len()..].to_string()),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`; {GENERATE_USAGE}")),
            p if path.is_none() => path = Some(p.to_string()),
            extra => return Err(format!("unexpected argument `{extra}`; {GENERATE_USAGE}")),
        }
    }
    let path = path.ok_or(GENERATE_USAGE)?;
    if target.as_deref() == Some("") {
        return Err("--out needs a file name".into());
    }
    let spec = load_spec(&path, tokens)?;
    // The header names the command as given, so running it again (from the
    // same directory) regenerates the same file.
    let mut command = format!("chat-parser generate {path}");
    for (flag, token) in [("--bos-token", &tokens.bos_token), ("--eos-token", &tokens.eos_token)] {
        if !token.is_empty() {
            // Quoted for a POSIX shell, so the command runs as written.
            command.push_str(&format!(" {flag} '{}'", token.replace('\'', "'\\''")));
        }
    }
    let code = chat_parser_generator::codegen::module(&spec, &command).map_err(one_line)?;
    match target {
        Some(file) => chat_parser_generator::build::write_if_changed(std::path::Path::new(&file), &code).map_err(|e| one_line(format!("cannot write {e}"))),
        None => out.write_all(code.as_bytes()).and_then(|()| out.flush()).map_err(|e| format!("cannot write output: {e}")),
    }
}

fn parse_command(args: &[String], tokens: &SpecialTokens, out: &mut impl Write) -> Result<(), String> {
    let mut path = None;
    let mut stream = None;
    let mut hold_calls = false;
    let mut cut_off = CutOffCalls::AsContent;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--stream" => stream = Some(Chunking::parse(it.next().ok_or(CHUNKS_ERROR)?)?),
            flag if flag.starts_with("--stream=") => stream = Some(Chunking::parse(&flag["--stream=".len()..])?),
            "--hold-calls" => hold_calls = true,
            "--cut-off-calls" => cut_off = cut_off_policy(it.next().map(String::as_str).unwrap_or(""))?,
            flag if flag.starts_with("--cut-off-calls=") => cut_off = cut_off_policy(&flag["--cut-off-calls=".len()..])?,
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`; {PARSE_USAGE}")),
            p if path.is_none() => path = Some(p.to_string()),
            extra => return Err(format!("unexpected argument `{extra}`; {PARSE_USAGE}")),
        }
    }
    let path = path.ok_or(PARSE_USAGE)?;
    let spec = load_spec(&path, tokens)?;

    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).map_err(|e| format!("cannot read the request on stdin: {e}"))?;
    let body: Value =
        serde_json::from_slice(&input).map_err(|e| one_line(format!("the request on stdin is not valid JSON: {e}")))?;
    let mut request = Request::from_json(&body, true)?;
    request.apply_kwargs(&spec);

    let grammar = build(&spec, &request.options);
    let mut parser = StreamParser::new(&grammar).with_tools(chat_parser_generator::ir::build::tool_signatures(&request.options));
    let mut message = MessageBuilder::new();
    match stream {
        None => {
            parser.feed(request.text.as_bytes(), &mut message);
            if !request.is_partial {
                parser.finish(&mut message);
            }
        }
        Some(chunking) => {
            let mut deltas = if hold_calls { DeltaBuilder::holding() } else { DeltaBuilder::new() };
            for chunk in chunking.split(request.text.as_bytes()) {
                parser.feed(chunk, &mut Both(&mut message, &mut deltas));
                if let Some(delta) = deltas.take() {
                    write_line(out, &to_json(&delta)?)?;
                }
            }
            if !request.is_partial {
                parser.finish(&mut Both(&mut message, &mut deltas));
            }
            // Also when partial: a call still waiting for its name is in the
            // message, so its header must be in the deltas too.
            if let Some(delta) = deltas.finish_output(&request.text) {
                write_line(out, &to_json(&delta)?)?;
            }
        }
    }
    let finish_reason = match (request.is_partial, message.cut_off()) {
        (true, _) => Value::Null,
        (false, true) => json!("length"),
        (false, false) => json!("stop"),
    };
    let mut line = message_json(&message.finish(&request.text, cut_off), cut_off == CutOffCalls::KeepIncomplete && !request.is_partial);
    line["finish_reason"] = finish_reason;
    write_line(out, &line.to_string())
}

fn cut_off_policy(value: &str) -> Result<CutOffCalls, String> {
    match value {
        "content" => Ok(CutOffCalls::AsContent),
        "incomplete" => Ok(CutOffCalls::KeepIncomplete),
        other => Err(format!("--cut-off-calls takes content or incomplete, not `{other}`")),
    }
}

const CHUNKS_ERROR: &str = "--stream needs chunk sizes: N (bytes, N >= 1), a list such as 1,3,7, or rand:SEED:MAX";

/// How `--stream` cuts the text into chunks.
enum Chunking {
    /// These sizes, cycled.
    Sizes(Vec<usize>),
    /// Random sizes from 1 to `max` (xorshift64* from `seed`, the
    /// generator the project's tests use, so a harness can replay them).
    Random { seed: u64, max: usize },
}

impl Chunking {
    fn parse(value: &str) -> Result<Chunking, String> {
        let bad = || format!("{CHUNKS_ERROR}; not `{value}`");
        let size = |s: &str| s.trim().parse::<usize>().ok().filter(|&n| n >= 1);
        if let Some(rest) = value.strip_prefix("rand:") {
            let (seed, max) = rest.split_once(':').ok_or_else(bad)?;
            let seed = seed.parse::<u64>().map_err(|_| bad())?;
            let max = size(max).ok_or_else(bad)?;
            return Ok(Chunking::Random { seed, max });
        }
        let sizes = value.split(',').map(size).collect::<Option<Vec<_>>>().ok_or_else(bad)?;
        Ok(Chunking::Sizes(sizes))
    }

    fn split<'a>(&self, text: &'a [u8]) -> Vec<&'a [u8]> {
        let mut state = match self {
            // xorshift64* must not start at 0.
            Chunking::Random { seed, .. } => seed ^ 0x9E37_79B9_7F4A_7C15,
            Chunking::Sizes(_) => 0,
        };
        let mut next = |i: usize| match self {
            Chunking::Sizes(sizes) => sizes[i % sizes.len()],
            Chunking::Random { max, .. } => {
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                (state.wrapping_mul(0x2545_F491_4F6C_DD1D) % *max as u64) as usize + 1
            }
        };
        let mut chunks = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let (chunk, after) = rest.split_at(next(chunks.len()).min(rest.len()));
            chunks.push(chunk);
            rest = after;
        }
        chunks
    }
}

fn grammar_command(args: &[String], tokens: &SpecialTokens, out: &mut impl Write) -> Result<(), String> {
    let mut path = None;
    let mut as_json = false;
    for arg in args {
        match arg.as_str() {
            "--json" => as_json = true,
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`; {GRAMMAR_USAGE}")),
            p if path.is_none() => path = Some(p.to_string()),
            extra => return Err(format!("unexpected argument `{extra}`; {GRAMMAR_USAGE}")),
        }
    }
    let path = path.ok_or(GRAMMAR_USAGE)?;
    let spec = load_spec(&path, tokens)?;
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).map_err(|e| format!("cannot read the request on stdin: {e}"))?;
    let body: Value =
        serde_json::from_slice(&input).map_err(|e| one_line(format!("the request on stdin is not valid JSON: {e}")))?;
    let mut request = Request::from_json(&body, false)?;
    request.apply_kwargs(&spec);
    let reply = chat_parser_generator::grammar::for_request(&spec, &request.options);
    if let Some(reply) = &reply {
        for warning in &reply.warnings {
            eprintln!("warning: {}", one_line(warning));
        }
    }
    let (gbnf, lark) = reply.as_ref().map(|r| (r.grammar.to_gbnf(), r.grammar.to_lark())).unwrap_or_default();
    if !as_json {
        return out.write_all(gbnf.as_bytes()).and_then(|()| out.flush()).map_err(|e| format!("cannot write output: {e}"));
    }
    let triggers: Vec<Value> = reply
        .iter()
        .flat_map(|r| &r.triggers)
        .map(|t| {
            let kind = match t.kind {
                chat_parser_runtime::envelope::TriggerKind::Word => "word",
                chat_parser_runtime::envelope::TriggerKind::PatternFull => "pattern_full",
            };
            json!({"type": kind, "value": t.value})
        })
        .collect();
    let preserved = reply.as_ref().map(|r| r.preserved_tokens.clone()).unwrap_or_else(|| spec.preserved_tokens.clone());
    let line = json!({
        "grammar": gbnf,
        "lazy": reply.as_ref().is_some_and(|r| r.lazy),
        "triggers": triggers,
        "preserved_tokens": preserved,
        "lark": lark,
    });
    write_line(out, &line.to_string())
}

fn to_json(value: &impl serde::Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| e.to_string())
}

/// The printed message: `complete` is left out, as in OpenAI's message,
/// except on a call kept incomplete when `mark_incomplete`
/// (`--cut-off-calls incomplete`).
fn message_json(message: &Message, mark_incomplete: bool) -> Value {
    let calls: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|call| {
            let mut line = json!({"name": call.name, "id": call.id, "arguments": call.arguments});
            if mark_incomplete && !call.complete {
                line["complete"] = json!(false);
            }
            line
        })
        .collect();
    json!({
        "content": message.content,
        "reasoning_content": message.reasoning_content,
        "tool_calls": calls,
    })
}

/// Sends every event to both sinks.
struct Both<'a>(&'a mut MessageBuilder, &'a mut DeltaBuilder);

impl Sink for Both<'_> {
    fn event(&mut self, event: Event<'_>) {
        self.0.event(event);
        self.1.event(event);
    }
}

/// What `parse` reads from stdin.
struct Request {
    options: ParseOptions,
    text: String,
    is_partial: bool,
    /// `chat_template_kwargs`, and whether the request set
    /// `enable_thinking` itself (which wins over them).
    kwargs: serde_json::Map<String, Value>,
    thinking_given: bool,
}

impl Request {
    /// Thinking as the template's own variables in `chat_template_kwargs`
    /// switch it (DeepSeek V3.1's `thinking`, Qwen3's `enable_thinking`),
    /// unless the request set `enable_thinking` itself and the template
    /// reads it (Cohere2 MoE does not: its `reasoning` decides, on by
    /// default).
    fn apply_kwargs(&mut self, spec: &chat_parser_generator::FormatSpec) {
        if self.thinking_given && spec.generation_prompt.default_thinking.is_none() {
            return;
        }
        if let Some(thinking) = spec.generation_prompt.thinking_from_kwargs(&self.kwargs) {
            self.options.enable_thinking = thinking;
        }
    }
}

impl Request {
    fn from_json(body: &Value, needs_text: bool) -> Result<Request, String> {
        let Value::Object(fields) = body else { return Err("the request on stdin must be a JSON object".into()) };
        // A field given as `null` counts as absent.
        let field = |name: &str| fields.get(name).filter(|v| !v.is_null());
        let boolean = |name: &str, value: Option<&Value>, default: bool| match value {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!("`{name}` must be true or false, not {other}")),
        };

        let text = match field("text") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => return Err(format!("`text` must be a string, not {}", kind(other))),
            None if needs_text => return Err("the request has no `text` (the model output to parse)".into()),
            None => String::new(),
        };
        let is_partial = boolean("is_partial", field("is_partial"), false)?;

        let reasoning_format = match field("reasoning_format") {
            None => ReasoningFormat::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "auto" => ReasoningFormat::Auto,
                "none" => ReasoningFormat::None,
                "deepseek" => ReasoningFormat::Deepseek,
                other => return Err(format!("unknown reasoning_format `{other}` (none, auto or deepseek)")),
            },
            Some(other) => return Err(format!("`reasoning_format` must be a string, not {}", kind(other))),
        };

        // `chat_template_kwargs` may switch it too (`Request::apply_kwargs`).
        let enable_thinking = boolean("enable_thinking", field("enable_thinking"), true)?;
        let parallel_tool_calls = boolean("parallel_tool_calls", field("parallel_tool_calls"), false)?;

        let tools = match field("tools") {
            None => Vec::new(),
            Some(Value::Array(tools)) => {
                for (i, tool) in tools.iter().enumerate() {
                    let function = tool.get("function").unwrap_or(tool);
                    if !tool.is_object() || !function.get("name").is_some_and(Value::is_string) {
                        return Err(format!("tools[{i}] is not a tool: expected {{\"type\": \"function\", \"function\": {{\"name\": ..}}}}"));
                    }
                }
                tools.clone()
            }
            Some(other) => return Err(format!("`tools` must be an array of tool objects, not {}", kind(other))),
        };

        let tool_choice = match field("tool_choice") {
            None => ToolChoice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                "none" => ToolChoice::None,
                other => return Err(format!("unknown tool_choice `{other}` (auto, required, none or a function object)")),
            },
            // A named function: a call is required.
            Some(Value::Object(choice)) if choice.get("type").and_then(Value::as_str) == Some("function") => {
                ToolChoice::Required
            }
            Some(other) => {
                return Err(one_line(format!(
                    "unsupported tool_choice {other} (auto, required, none or {{\"type\": \"function\", ..}})"
                )))
            }
        };

        let json_schema = match (field("json_schema"), field("response_format")) {
            (Some(_), Some(_)) => return Err("give either `json_schema` or `response_format`, not both".into()),
            (Some(schema), None) => Some(schema_value("json_schema", schema)?),
            (None, Some(format)) => response_format_schema(format)?,
            (None, None) => None,
        };

        Ok(Request {
            options: ParseOptions { enable_thinking, reasoning_format, parallel_tool_calls, tools, tool_choice, json_schema },
            text,
            is_partial,
            kwargs: match fields.get("chat_template_kwargs") {
                None | Some(Value::Null) => serde_json::Map::new(),
                Some(Value::Object(k)) => k.clone(),
                Some(other) => return Err(format!("`chat_template_kwargs` must be an object, not {}", kind(other))),
            },
            thinking_given: field("enable_thinking").is_some(),
        })
    }
}

/// The schema that OpenAI's `response_format` asks for, if any.
fn response_format_schema(format: &Value) -> Result<Option<Value>, String> {
    let kind_of = format.get("type").and_then(Value::as_str);
    match kind_of {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(json!({"type": "object"}))),
        Some("json_schema") => match format.get("json_schema").and_then(|s| s.get("schema")).filter(|s| !s.is_null()) {
            Some(schema) => Ok(Some(schema_value("response_format.json_schema.schema", schema)?)),
            None => Err("response_format of type json_schema needs `json_schema.schema`".into()),
        },
        _ => Err(one_line(format!(
            "unsupported response_format {format} (type text, json_object or json_schema)"
        ))),
    }
}

fn schema_value(name: &str, schema: &Value) -> Result<Value, String> {
    match schema {
        Value::Object(_) | Value::Bool(_) => Ok(schema.clone()),
        other => Err(format!("`{name}` must be a JSON schema (an object), not {}", kind(other))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
