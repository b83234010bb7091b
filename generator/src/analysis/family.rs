//! Families whose output the generic analysis cannot describe.
//!
//! These models write formats with structure the marker diff cannot recover
//! (channels, recipients, ids that encode the function name, grammar-defined
//! layouts). They are recognised by substrings of the template source, in a
//! fixed order (the first match wins), as the reference does.
//!
//! A family that has a format gets it here as a *description*: what its
//! [`describe`] adds to the spec the generic analysis found (structure the
//! probes cannot show, such as "calls may start inside an open reasoning
//! block"). Markers still come from the renders wherever they can; the IR
//! builder turns the spec into ordinary IR, so every backend handles the
//! family without knowing its name.

use serde_json::json;

use super::probe::*;
use crate::spec::{ChannelSpec, FormatSpec};

/// Gemma 4, from what the generic analysis read off its renders (it reads
/// the call as tagged arguments because of the `<|"|>` quotes):
/// - reasoning: the generation prompt without thinking appends an empty
///   block `<|channel>thought\n<channel|>`; its end is the end marker the
///   analysis found (or, where the template renders no past reasoning to
///   find it in, the block's last marker), its start the rest of the block;
/// - calls: the argument-name probe's prefix is `<|tool_call>call:NAME{`
///   (opener, call prefix, name, object start), the value suffix is the
///   string quote, and the closer after `}` is the call's end marker.
fn gemma_layout(spec: &mut FormatSpec) {
    let g = &spec.generation_prompt;
    let found = spec.reasoning.end.trim().to_string();
    if let Some(block) = g.no_thinking.strip_prefix(g.thinking.as_str()) {
        // A template that renders no reasoning in past turns (llama.cpp's
        // `gemma4.jinja`) shows no end marker: the block's last marker is.
        let end = if found.is_empty() { super::tools::last_marker_only(block.trim()) } else { found };
        if let Some(start) = block.trim().strip_suffix(end.as_str()) {
            if !start.trim().is_empty() && !end.is_empty() {
                if spec.reasoning.end.trim().is_empty() {
                    spec.reasoning.end = end.clone();
                }
                spec.reasoning.start = start.to_string();
                spec.reasoning.mode = crate::spec::ReasoningMode::TagBased;
                spec.reasoning.interleaved = true;
            }
        }
    }
    let a = spec.tools.arguments.clone();
    let Some((before_name, after_name)) = a.name_prefix.split_once(FUN_FIRST) else { return };
    let quote = a.value_suffix.trim().to_string();
    let close = spec.tools.function.close.trim().to_string();
    let Some(opener_end) = before_name.find('>').map(|p| p + 1) else { return };
    let (opener, call_prefix) = before_name.split_at(opener_end);
    let object_start = after_name.trim();
    let Some(after_object) = close.strip_prefix('}') else { return };
    let end_marker = match after_object.find('>') {
        Some(p) => after_object[..=p].to_string(),
        None => return,
    };
    if quote.is_empty() || object_start != "{" || end_marker.is_empty() {
        return;
    }
    let t = &mut spec.tools;
    t.format.per_call_start = opener.to_string();
    t.format.per_call_end = end_marker;
    t.function = crate::spec::FunctionMarkers { name_prefix: call_prefix.to_string(), name_suffix: String::new(), ..Default::default() };
    t.arguments = crate::spec::ArgumentMarkers { start: "{".into(), end: "}".into(), string_quote: quote, ..Default::default() };
}

/// LFM2 / LFM2.5: tool calls are a Python list of calls,
/// `[f(a=1), g(b='x')]`; LFM2 wraps it in special tokens,
/// `<|tool_call_start|>…<|tool_call_end|>`, LFM2.5 writes the bare list.
///
/// What is derived: llama.cpp's LFM2 template renders JSON calls inside the
/// tokens, so the analysis found them (its JSON call objects are still read,
/// as list items). LFM2's own template renders no call at all: the call
/// tokens are named after the tool-list tokens it writes
/// (`<|tool_list_start|>` → `<|tool_call_start|>`), the one derivation its
/// source allows. Not derivable: the Python call syntax (the model's
/// behaviour, which no render shows) and the `<think>` block these models
/// write (only LFM2.5's source mentions `</think>`, to strip it from
/// history).
///
/// LFM2.5-Instruct's template names no token at all (its tool list is
/// plain text), yet the model still writes the family's call tokens around
/// its list (vLLM's LFM2 parser reads both models so). Its bare list stays
/// the form grammars write; the tokens are read as a section alias. They
/// are the one string here no render or source gives: the tokenizer's.
fn python_call_list(spec: &mut FormatSpec, source: &str) {
    let f = &mut spec.tools.format;
    if f.section_start.trim().is_empty() {
        if let Some((start, end)) = list_tokens(source) {
            f.section_start = start.replace("_list_", "_call_");
            f.section_end = end.replace("_list_", "_call_");
        } else {
            let tokens = (LFM_CALL_TOKENS.0.to_string(), LFM_CALL_TOKENS.1.to_string());
            if !f.section_aliases.contains(&tokens) {
                f.section_aliases.push(tokens);
            }
        }
    }
    f.mode = crate::spec::ToolFormatMode::PythonCalls;
    f.tools_array_wrapped = false;
    let sections = std::iter::once((&f.section_start, &f.section_end)).chain(f.section_aliases.iter().map(|(start, end)| (start, end)));
    for token in sections.flat_map(|(start, end)| [start.clone(), end.clone()]) {
        if !token.is_empty() && !spec.preserved_tokens.contains(&token) {
            spec.preserved_tokens.push(token);
        }
    }
    if spec.reasoning.mode == crate::spec::ReasoningMode::None {
        spec.reasoning.mode = crate::spec::ReasoningMode::TagBased;
        spec.reasoning.start = "<think>".into();
        spec.reasoning.end = "</think>".into();
    }
}

/// Functionary v3.2's addressed blocks, from renders: the generation
/// prompt ends with the block opener (`>>>`, after its last line break), and
/// a content turn shows the recipient that makes a block content (`all`)
/// between the opener and the name suffix the generic analysis found (`\n`).
fn addressed_blocks(spec: &mut FormatSpec, r: &mut Renderer<'_>) {
    let prompt = spec.generation_prompt.thinking.trim_end();
    let opener = prompt.rsplit('\n').next().unwrap_or("").trim().to_string();
    let suffix = spec.tools.function.name_suffix.clone();
    if opener.is_empty() || suffix.is_empty() || opener.chars().any(char::is_alphanumeric) {
        return;
    }
    let turn = json!({"role": "assistant", "content": ASSISTANT_MSG});
    let Some(reply) = r.render("F1 content recipient", &Scenario { messages: convo(turn), tools: None, add_generation_prompt: false, enable_thinking: true })
    else {
        return;
    };
    let Some(before) = reply.find(ASSISTANT_MSG).and_then(|at| reply[..at].strip_suffix(suffix.as_str())) else { return };
    let Some(recipient) = before.rfind(opener.as_str()).map(|at| before[at + opener.len()..].to_string()) else { return };
    if recipient.trim().is_empty() || recipient.contains(char::is_whitespace) {
        return;
    }
    spec.tools.format.per_call_start = opener;
    spec.tools.format.content_recipient = recipient;
}

/// MiroThinker's MCP calls, described from the template source.
///
/// Both corpus templates fail on every assistant turn in Python's jinja2
/// too (they assign attributes of dicts, and one reads a macro caller's
/// variable), so no render shows a call or a reasoning block. What is read
/// instead:
/// - calls: the macro that writes a call turn (`render_tool_call`) prints
///   its markup as six string literals, in this order: the section opener
///   (`<use_mcp_tool>`), the server opener, the server closer with the name
///   prefix, the name suffix with the arguments opener, the arguments
///   closer, the section closer. The server name, the tool name and the
///   JSON arguments are printed between them. The server is the call's
///   namespace: the template derives it from the tool name
///   (`render_tool_server`), the parser drops it and reports the tool name,
///   which is the name the request declared;
/// - reasoning: the generation prompt without thinking appends an empty
///   block (`<think>\n\n</think>\n\n`), see [`empty_block_reasoning`].
fn mcp_calls(spec: &mut FormatSpec, source: &str) {
    empty_block_reasoning(spec);
    // The reasoning markers are the tokenizer's special tokens; the MCP tags
    // are plain text.
    spec.preserved_tokens = [&spec.reasoning.start, &spec.reasoning.end].iter().map(|m| m.trim().to_string()).filter(|m| !m.is_empty()).collect();
    let Some(literals) = macro_literals(source, "render_tool_call") else { return };
    let [section_start, ns_start, ns_end_name, name_args, args_end, section_end] = literals.as_slice() else { return };
    let split = |s: &str| s.trim().split_once('\n').map(|(a, b)| (a.trim().to_string(), b.trim().to_string()));
    let (Some((ns_end, name_prefix)), Some((name_suffix, args_start))) = (split(ns_end_name), split(name_args)) else { return };
    let t = &mut spec.tools;
    t.format.mode = crate::spec::ToolFormatMode::TagWithJson;
    t.format.section_start = section_start.trim().to_string();
    t.format.section_end = section_end.trim().to_string();
    t.function = crate::spec::FunctionMarkers {
        name_prefix,
        name_suffix,
        namespace_start: ns_start.trim().to_string(),
        namespace_end: ns_end,
        ..Default::default()
    };
    t.arguments = crate::spec::ArgumentMarkers { start: args_start, end: args_end.trim().to_string(), ..Default::default() };
    let c = &mut spec.capabilities;
    (c.supports_tools, c.supports_tool_calls, c.supports_parallel_tool_calls, c.supports_object_arguments) = (true, true, true, true);
}

/// Reasoning markers from the empty block that the generation prompt
/// without thinking appends to the one with thinking (`<think>\n\n</think>\n\n`):
/// its two words. A blank line between them is taken as the template's
/// layout, one newline on each side of the text, as the templates of this
/// shape write it (`<think>\n` + reasoning + `\n</think>\n\n`).
fn empty_block_reasoning(spec: &mut FormatSpec) {
    let g = &spec.generation_prompt;
    let Some(block) = g.no_thinking.strip_prefix(g.thinking.as_str()) else { return };
    let words: Vec<&str> = block.split_whitespace().collect();
    let [start, end] = words.as_slice() else { return };
    let between = block.trim_start()[start.len()..].split(end).next().unwrap_or("");
    let layout = if between == "\n\n" { "\n" } else { "" };
    let after = &block[block.rfind(end).unwrap_or(0) + end.len()..];
    spec.reasoning.mode = crate::spec::ReasoningMode::TagBased;
    spec.reasoning.start = format!("{start}{layout}");
    spec.reasoning.end = format!("{layout}{end}{after}");
}

/// The double-quoted string literals of a macro's body, in order, their
/// escapes decoded (`"\n<use_mcp_tool>"`). `None` without such a macro.
fn macro_literals(source: &str, name: &str) -> Option<Vec<String>> {
    let at = source.find(&format!("macro {name}("))?;
    let body = &source[at..];
    let body = &body[..body.find("endmacro")?];
    let mut out = Vec::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut lit = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => match chars.next()? {
                    'n' => lit.push('\n'),
                    't' => lit.push('\t'),
                    other => lit.push(other),
                },
                other => lit.push(other),
            }
        }
        out.push(lit);
    }
    Some(out)
}

/// The call tokens of the LFM2 tokenizers, for a template that writes none.
const LFM_CALL_TOKENS: (&str, &str) = ("<|tool_call_start|>", "<|tool_call_end|>");

/// The special tokens around a tool list in the template (`<|tool_list_start|>`,
/// `<|tool_list_end|>`).
fn list_tokens(source: &str) -> Option<(String, String)> {
    let token = |suffix: &str| -> Option<String> {
        let at = source.find(suffix)?;
        let start = source[..at].rfind("<|")?;
        Some(source[start..at + suffix.len()].to_string())
    };
    Some((token("_list_start|>")?, token("_list_end|>")?))
}

/// The harmony layout, from renders: the generation prompt gives the header
/// start and the role (`<|start|>` `assistant`), the generic analysis the
/// body marker (`<|message|>`), the end of a reply (`<|return|>`) and of a
/// call (`<|call|>`); a turn with reasoning and content gives the channel
/// marker, both channel words and the message end (`<|end|>`); a turn with
/// a call gives the recipient marker and the namespace (` to=` `functions.`).
fn harmony_channels(spec: &FormatSpec, r: &mut Renderer<'_>) -> Option<ChannelSpec> {
    let prompt = spec.generation_prompt.thinking.trim();
    let role_at = prompt.rfind(['>', ']'])? + 1;
    let (header_start, role) = (prompt[..role_at].to_string(), prompt[role_at..].trim().to_string());
    let message = spec.content.start.trim().to_string();
    if header_start.is_empty() || role.is_empty() || message.is_empty() {
        return None;
    }
    // The template takes reasoning from `thinking` (harmony's own field).
    let turn = json!({"role": "assistant", "content": ASSISTANT_MSG, "thinking": THINKING_CONTENT});
    let reply = r.render("H1 harmony channels", &Scenario { messages: convo(turn), tools: None, add_generation_prompt: false, enable_thinking: true })?;
    // `<|channel|>analysis<|message|>THINKING<|end|><|start|>assistant<|channel|>final<|message|>CONTENT`
    let thinking_at = reply.find(THINKING_CONTENT)?;
    let before = reply[..thinking_at].strip_suffix(message.as_str())?;
    let channel_header = &before[before.rfind(header_start.as_str())? + header_start.len()..];
    let channel_header = channel_header.trim_start().strip_prefix(role.as_str())?;
    let word_at = channel_header.rfind(['>', ']'])? + 1;
    let (channel, reasoning_channel) = (channel_header[..word_at].trim().to_string(), channel_header[word_at..].trim().to_string());
    let after = &reply[thinking_at + THINKING_CONTENT.len()..];
    let end = after[..after.find(header_start.as_str())?].trim().to_string();
    let content_at = after.find(ASSISTANT_MSG)?;
    let final_header = after[..content_at].strip_suffix(message.as_str())?;
    let final_channel = final_header[final_header.rfind(channel.as_str())? + channel.len()..].trim().to_string();
    // The call: `<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>`.
    let call = r.render("H2 harmony recipient", &Scenario::with_tools(convo(assistant_calls(vec![first_call()]))))?;
    let name_at = call.rfind(FUN_FIRST)?;
    let role_end = call[..name_at].rfind(role.as_str())? + role.len();
    let recipient_and_namespace = &call[role_end..name_at];
    let eq = recipient_and_namespace.find('=')? + 1;
    let (recipient, namespace) = (recipient_and_namespace[..eq].to_string(), recipient_and_namespace[eq..].to_string());
    let tool_channel = spec.tools.function.name_suffix.trim().strip_prefix(channel.as_str())?.split_whitespace().next()?.to_string();
    let mut message_ends = vec![end];
    for marker in [&spec.tools.function.close, &spec.content.end] {
        let marker = marker.trim();
        if !marker.is_empty() && !message_ends.iter().any(|m| m == marker) {
            message_ends.push(marker.to_string());
        }
    }
    Some(ChannelSpec {
        header_start,
        role,
        channel,
        message,
        // Harmony's content-type marker: the template never writes it
        // (it renders `json` without it), but models do; it cannot be derived.
        constrain: "<|constrain|>".to_string(),
        recipient,
        namespace,
        message_ends,
        reasoning_channel,
        content_channels: vec![final_channel, tool_channel],
    })
}

/// One dedicated family: its name and the test on the template source.
struct DedicatedFamily {
    name: &'static str,
    matches: fn(&str) -> bool,
}

/// What a family's description adds to the analysed spec (after the
/// generic analysis and the generation prompt). Families without a format
/// yet are left as analysed.
pub fn describe(family: &str, source: &str, spec: &mut FormatSpec, r: &mut Renderer<'_>) {
    match family {
        "LFM2" | "LFM2.5" => python_call_list(spec, source),
        "Functionary v3.2" => addressed_blocks(spec, r),
        // GigaChat 3 and Cohere2 MoE: the generic analysis reads their
        // calls (a JSON object after GigaChat's `function call` role
        // header; Cohere's JSON action array with `tool_call_id`,
        // `tool_name`, `parameters`), so nothing is added.
        "GigaChatV3" | "Cohere2 MoE" => {}
        "GPT-OSS" => {
            if let Some(channels) = harmony_channels(spec, r) {
                spec.channels = channels;
            }
        }
        // Kimi K2 Thinking often calls tools from inside its reasoning
        // without closing it (`<think>...<|tool_calls_section_begin|>`),
        // which no render shows: the calls end the reasoning.
        "Kimi K2 Thinking" => {
            spec.reasoning.ended_by_calls = true;
            singular_section(spec);
        }
        // Gemma 4 also calls tools from inside its thought channel without
        // closing it (`<|channel>thought\n…<|tool_call>call:…`, which no
        // render shows; vLLM's Gemma 4 reasoning parser ends the reasoning
        // at the call token): the call ends the reasoning.
        "Gemma4" => {
            gemma_layout(spec);
            spec.reasoning.ended_by_calls = spec.reasoning.mode != crate::spec::ReasoningMode::None;
        }
        "MiroThinker" => mcp_calls(spec, source),
        "DeepSeek V3.2/V4" => spec.tools.format.namespace_bars = DSML_BARS.map(String::from).to_vec(),
        _ => {}
    }
}

/// The bars DeepSeek V3.2 and V4 models also write around their `DSML`
/// token in place of the template's `｜`: doubled (`<｜｜DSML｜｜parameter
/// …>`, the most frequent of the leaked forms in GenericAgent #804's scan
/// of real replies), ASCII (`<|DSML|invoke …>`, cline #13348: about a
/// quarter of DeepSeek V4 Flash runs leak DSML, this form among them) and
/// `‖` (GenericAgent #804). Model behaviour no render shows, so data of
/// the family.
const DSML_BARS: [&str; 3] = ["｜｜", "|", "‖"];

/// The namespace of the call ids a family's model writes, `NAMESPACE
/// NAME:index`, where it has that convention: Kimi K2 writes
/// `functions.get_weather:0` (its model card; vLLM's and llama.cpp's Kimi
/// parsers read the name out of the id). Probes give their calls such ids
/// (`probe::name_index_ids`), so a template that prints the request's ids
/// as given (Moonshot's own Kimi K2 Thinking template) renders the name
/// where the model writes it, as the templates that build the id
/// themselves do.
pub fn call_id_namespace(family: &str) -> Option<&'static str> {
    (family == "Kimi K2 Thinking").then_some("functions.")
}

/// Kimi K2 also writes its section tokens in the singular
/// (`<|tool_call_section_begin|>` … `<|tool_call_section_end|>`), as vLLM
/// and llama.cpp users report; the calls inside are the same. The
/// singular is made from the markers the analysis found (their plural
/// word, `calls`, written `call`).
fn singular_section(spec: &mut FormatSpec) {
    let f = &mut spec.tools.format;
    let singular = |m: &str| m.replacen("_calls_", "_call_", 1);
    let alias = (singular(&f.section_start), singular(&f.section_end));
    if alias.0 != f.section_start && !f.section_aliases.contains(&alias) {
        f.section_aliases.push(alias);
    }
}

const FAMILIES: &[DedicatedFamily] = &[
    // Mistral Large 3 / Ministral / Devstral: [THINK] blocks and [TOOL_CALLS]name[ARGS]
    // without [CALL_ID] (Mistral Small 3.2 has [CALL_ID] and stays generic).
    DedicatedFamily {
        name: "Ministral/Magistral Large 3",
        matches: |s| s.contains("[SYSTEM_PROMPT]") && s.contains("[TOOL_CALLS]") && s.contains("[ARGS]") && !s.contains("[CALL_ID]"),
    },
    // GPT-OSS harmony format: channels (analysis/commentary/final) and recipients.
    DedicatedFamily { name: "GPT-OSS", matches: |s| s.contains("<|channel|>") },
    // Muse Glimmer: " to=<recipient>" and <|eom|>/<|eot|> terminators.
    DedicatedFamily { name: "Muse Glimmer", matches: |s| s.contains("<atem:function_calls>") && s.contains("<|eom|>") },
    // Functionary v3.2: ">>>recipient\n" blocks, content under ">>>all".
    DedicatedFamily { name: "Functionary v3.2", matches: |s| s.contains(">>>all") && s.contains(">>>${recipient}") },
    // Kimi K2: call ids "functions.<name>:<index>" carry the function name.
    DedicatedFamily {
        name: "Kimi K2 Thinking",
        matches: |s| s.contains("<|tool_calls_section_begin|>") && s.contains("<|tool_call_begin|>"),
    },
    DedicatedFamily {
        name: "Kimi K3",
        matches: |s| s.contains("<|open|>") && s.contains("<|close|>") && s.contains("<|end_of_msg|>"),
    },
    // Cohere2 MoE / North: <|START_TEXT|> content and <|START_ACTION|> JSON actions.
    DedicatedFamily { name: "Cohere2 MoE", matches: |s| s.contains("<|START_TEXT|>") && s.contains("<|START_ACTION|>") },
    // LFM2: tool list in special tokens, Python-call syntax for calls.
    // (LFM2.5-8B-A1B writes the LFM2 call tokens around its Python calls.)
    DedicatedFamily {
        name: "LFM2",
        matches: |s| {
            (s.contains("<|tool_list_start|>") && s.contains("<|tool_list_end|>"))
                || (s.contains("List of tools: ") && s.contains("<|tool_call_start|>[") && s.contains("+ \"(\" +"))
        },
    },
    DedicatedFamily { name: "LFM2.5", matches: |s| s.contains("List of tools: [") && !s.contains("<|tool_list_start|>") },
    // GigaChat 3: role separators; calls as a "function call" role message.
    DedicatedFamily {
        name: "GigaChatV3",
        matches: |s| s.contains("<|role_sep|>") && s.contains("<|message_sep|>") && !s.contains("<|function_call|>"),
    },
    // MiniMax M3: its namespace token "]<]minimax[>[" collides with marker syntax.
    DedicatedFamily {
        name: "MiniMax-M3",
        matches: |s| s.contains("]<]minimax[>[") && s.contains("<tool_call>") && s.contains("<invoke name="),
    },
    // DeepSeek V3.2/V4 DSML markup, built from a variable (not literal in the source).
    DedicatedFamily {
        name: "DeepSeek V3.2/V4",
        matches: |s| s.contains("dsml_token") && s.contains("DSML") && (s.contains("function_calls") || s.contains("tool_calls")),
    },
    // Gemma 4: `call:name{key:<|"|>value<|"|>}` with its own quoting.
    DedicatedFamily { name: "Gemma4", matches: |s| s.contains("'<|tool_call>call:'") },
    // MiroThinker: MCP calls as <use_mcp_tool><server_name>..<tool_name>..<arguments>.
    DedicatedFamily { name: "MiroThinker", matches: |s| s.contains("<use_mcp_tool>") && s.contains("<server_name>") },
    DedicatedFamily {
        name: "MiniCPM5",
        matches: |s| s.contains("Tool usage guidelines:") && s.contains("<function name=\"") && s.contains("<param name=\""),
    },
];

/// The dedicated family this template belongs to, if any.
///
/// # Example
/// ```
/// use chat_parser_generator::analysis::family::dedicated_family;
/// assert_eq!(dedicated_family("{{ '<|channel|>' }}"), Some("GPT-OSS"));
/// assert_eq!(dedicated_family("{{ '<tool_call>' }}"), None);
/// ```
pub fn dedicated_family(source: &str) -> Option<&'static str> {
    FAMILIES.iter().find(|f| (f.matches)(source)).map(|f| f.name)
}
