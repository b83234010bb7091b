//! Template analysis: from a chat template to a [`FormatSpec`].
//!
//! The template is rendered with probe inputs that differ in one detail at a
//! time and the renders are diffed ([`crate::diff`]); the markers around each
//! probe value are the format. The phases follow the reference auto-parser:
//! reasoning (R1-R3), content (C1), tools (T1-T7 with arguments A1-A2), then
//! preserved tokens, template-specific [`corrections`], the generation prompt,
//! and detection of [`family`] formats that need a dedicated parser.
//!
//! # Example
//! ```
//! use chat_parser_generator::{analysis::analyze, jinja::ChatTemplate, spec::*};
//! let src = "{% for m in messages %}<|{{ m.role }}|>{% if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
//! let t = ChatTemplate::new("mini.jinja", src).unwrap();
//! let spec = analyze(&t).unwrap().spec;
//! assert_eq!(spec.reasoning.mode, ReasoningMode::TagBased);
//! assert_eq!((spec.reasoning.start.as_str(), spec.reasoning.end.as_str()), ("<think>", "</think>"));
//! assert_eq!(spec.generation_prompt.thinking, "<|assistant|>");
//! ```

pub mod capabilities;
pub mod content;
pub mod corrections;
pub mod family;
pub mod kwargs;
pub mod pattern;
pub mod probe;
pub mod reasoning;
pub mod tools;

use serde_json::json;

use crate::jinja::{ChatTemplate, TemplateError, TemplateErrorKind};
use crate::spec::*;
use probe::{RenderFailure, Renderer, Scenario};

/// The result of analysing one template.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub spec: FormatSpec,
    /// Probe renders that failed. Templates raise on inputs they reject (a
    /// system message they do not support, two calls where one is allowed);
    /// the analysis works around those, but callers may want to see them.
    pub render_failures: Vec<RenderFailure>,
}

/// Why a template could not be analysed at all.
#[derive(Debug, Clone)]
pub struct AnalysisError {
    pub template: String,
    pub message: String,
    pub cause: Option<TemplateError>,
}

impl std::fmt::Display for AnalysisError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            // The cause already names the file and line.
            Some(cause) => write!(f, "{cause} (while analysing: {})", self.message),
            None => write!(f, "{}: {}", self.template, self.message),
        }
    }
}

impl std::error::Error for AnalysisError {}

/// The request the generation prompt is measured with: one user turn and one
/// declared tool, like a typical tool-enabled request.
fn generation_request(enable_thinking: bool, add_generation_prompt: bool, with_tools: bool) -> Scenario {
    let mut scenario = Scenario {
        messages: json!([{"role": "user", "content": "What is the weather in Paris?"}]),
        tools: Some(json!([{
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather for a city",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name"},
                        "days": {"type": "integer", "description": "Number of days"}
                    },
                    "required": ["city"]
                }
            }
        }])),
        add_generation_prompt,
        enable_thinking,
    };
    if !with_tools {
        scenario.tools = None;
    }
    scenario
}

/// Runs the whole analysis.
///
/// Fails only when the template cannot render even a plain user turn with a
/// generation prompt; every other failed probe just leaves its part of the
/// spec empty (and is listed in [`Analysis::render_failures`]).
pub fn analyze(template: &ChatTemplate) -> Result<Analysis, AnalysisError> {
    let mut r = Renderer::new(template);
    let mut spec = FormatSpec { template: template.name().to_string(), ..FormatSpec::default() };
    let family = family::dedicated_family(template.source());
    r.ids_with_names = family.and_then(family::call_id_namespace);

    spec.generation_prompt = generation_prompt(&mut r).map_err(|cause| AnalysisError {
        template: template.name().to_string(),
        message: "cannot render a user turn with a generation prompt".into(),
        cause: Some(cause),
    })?;
    // The request variables that switch thinking, measured on the request
    // the prompts were (tools, unless the template cannot describe them).
    let with_tools = r.try_render(&generation_request(true, true, true)).is_ok();
    spec.generation_prompt.switches =
        kwargs::thinking_switches(&mut r, &spec.generation_prompt, &|add| generation_request(true, add, with_tools));
    spec.capabilities = capabilities::detect(&mut r);
    r.string_arguments = spec.capabilities.supports_tool_calls && !spec.capabilities.supports_object_arguments;
    spec.reasoning = reasoning::analyze(&mut r, spec.capabilities.supports_tool_calls);
    spec.content = content::analyze(&mut r, &spec.reasoning);
    if spec.capabilities.supports_tool_calls {
        spec.tools = tools::analyze(&mut r, &spec.capabilities, &spec.reasoning);
    }
    spec.content.requires_nonnull_content = requires_nonnull_content(&mut r, &spec);
    let source = template.source();
    spec.corrections = corrections::apply(source, &mut spec).into_iter().map(String::from).collect();
    // (Before the preserved tokens: the marker it finds is one.)
    if family.is_none() {
        announced_calls(&mut r, &mut spec);
    }
    spec.preserved_tokens = if spec.corrections.iter().any(|c| c == "Functionary 3.1") {
        corrections::functionary_tokens()
    } else {
        preserved_tokens(&spec)
    };
    if let Some(name) = family {
        spec.family = Family::Dedicated(name.to_string());
        family::describe(name, source, &mut spec, &mut r);
    }
    // After the tools and the family's description: a turn's end is none
    // of the markers they found.
    if !spec.channels.is_used() {
        spec.content.end_of_turn = content::end_of_turn(&mut r, &spec);
        // A section end that runs on into the turn's end (Nemotron Nano v2
        // renders `</TOOLCALL><SPECIAL_12>`): the model stops at the turn's
        // end, which servers strip, so the section ends before it.
        let f = &mut spec.tools.format;
        let eots: Vec<&str> = spec.content.end_of_turn.iter().map(|e| e.trim()).filter(|e| !e.is_empty()).collect();
        // (Until none is left: it may end with several, in any order.)
        while let Some(own) = eots.iter().find_map(|eot| f.section_end.trim_end().strip_suffix(eot).filter(|own| !own.trim().is_empty())) {
            f.section_end = own.to_string();
        }
    }
    // After the family's description, which may give the reasoning markers.
    spec.generation_prompt.thinking_prefill = prefill(&spec.generation_prompt.thinking, &spec.reasoning);
    spec.generation_prompt.no_thinking_prefill = prefill(&spec.generation_prompt.no_thinking, &spec.reasoning);
    // A template that ignores `enable_thinking` may switch thinking with a
    // variable of its own, told apart by the reasoning block its prompts
    // leave open (so after the reasoning markers).
    if spec.generation_prompt.thinking == spec.generation_prompt.no_thinking {
        let reasoning = spec.reasoning.clone();
        let own = kwargs::own_switch(&mut r, &spec.generation_prompt.thinking, &|add| generation_request(true, add, with_tools), &|p| prefill(p, &reasoning));
        if let Some(own) = own {
            let g = &mut spec.generation_prompt;
            (g.thinking, g.no_thinking, g.switches, g.default_thinking) = (own.thinking, own.no_thinking, own.switches, Some(own.default_thinking));
            g.thinking_prefill = prefill(&g.thinking, &spec.reasoning);
            g.no_thinking_prefill = prefill(&g.no_thinking, &spec.reasoning);
        }
    }
    // And the tool markers: where the generation prompt opened the
    // reasoning block, calls end it. The model did not open that block
    // itself and often calls without closing it (DeepSeek V3.1 with
    // thinking on, sglang #9446; Qwen3.5, vLLM #35687 and llama.cpp
    // #21118). A call marker written like text ends it only at the start of
    // a line (`ir::build`): inside a sentence the reasoning mentions a call
    // (the reference's Nemotron vector keeps one), and a block the model
    // opened itself it also closes (its LFM2 vector).
    spec.reasoning.ended_by_calls |= spec.generation_prompt.thinking_prefill == Prefill::OpenReasoning && spec.tools.format.mode != ToolFormatMode::None;
    spelled_section_aliases(&mut spec.tools.format);
    Ok(Analysis { spec, render_failures: r.failures })
}

/// A section opener that is one special token with SentencePiece's word
/// separator in it (DeepSeek's `<｜tool▁calls▁begin｜>`) is also read
/// spelled out with `_` in the separator's place: distilled models write
/// it as text, not as the token. The section then ends with the template's
/// own end marker, as llama.cpp's DeepSeek R1 parser reads it (its opener
/// accepts `<｜tool_calls_begin｜>`, its end marker only the token). A
/// format data alias (`ToolFormat::section_aliases`): read, never written.
/// (llama.cpp also reads a space in the separator's place; each alias is
/// one more stop for content and reasoning, and this one costs R1's
/// one-shot parse of plain text 18% more instructions, so only the form
/// seen in recorded outputs is read.)
///
/// ```text
/// <｜tool▁calls▁begin｜> … <｜tool▁calls▁end｜>
///   + <｜tool_calls_begin｜> … <｜tool▁calls▁end｜>
/// ```
fn spelled_section_aliases(f: &mut crate::spec::ToolFormat) {
    const SEPARATOR: char = '\u{2581}';
    let (start, end) = (f.section_start.trim().to_string(), f.section_end.trim().to_string());
    if !(start.starts_with("<｜") && start.contains(SEPARATOR)) {
        return;
    }
    let alias = (start.replace(SEPARATOR, "_"), end);
    if !f.section_aliases.contains(&alias) {
        f.section_aliases.push(alias);
    }
}

/// Calls a template never renders but its tools' system prompt announces:
/// Granite 3.x tells the model to "respond only with <|tool_call|> followed
/// by a JSON list of tools used", and renders no assistant's calls, so the
/// probes find no call format (nor does the reference's analysis); vLLM's
/// and llama.cpp's Granite parsers read `<|tool_call|>[{"name": …,
/// "arguments": {…}}, …]`. The marker is the one special token (`<|…|>`)
/// the prompt writes only when tools are given, where the tool list does
/// not follow it (a token that wraps the list, Phi-4's `<|tool|>`, is not
/// a call marker); the calls after it are taken to be a JSON list of
/// OpenAI-shaped call objects, the shape both parsers read (that shape and
/// its field names are assumed, not derived). Nothing changes where the
/// analysis found a call format, or the tools' prompt writes no single new
/// token.
fn announced_calls(r: &mut Renderer<'_>, spec: &mut FormatSpec) {
    if spec.tools.format.mode != ToolFormatMode::None || !spec.capabilities.supports_tools {
        return;
    }
    let (Ok(with), Ok(without)) = (r.try_render(&generation_request(true, true, true)), r.try_render(&generation_request(true, true, false))) else {
        return;
    };
    let known = special_tokens(&without);
    let mut new = special_tokens(&with);
    new.retain(|t| !known.contains(t));
    let [marker] = new.as_slice() else { return };
    let lists_tools = with.match_indices(marker.as_str()).any(|(at, _)| with[at + marker.len()..].trim_start().starts_with(['[', '{']));
    if lists_tools {
        return;
    }
    spec.tools.format = ToolFormat {
        mode: ToolFormatMode::JsonNative,
        section_start: marker.clone(),
        tools_array_wrapped: true,
        name_field: "name".into(),
        args_field: "arguments".into(),
        ..ToolFormat::default()
    };
}

/// The special tokens a text writes (`<|word|>`, `<|/word|>`), each once,
/// in order.
fn special_tokens(text: &str) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for (at, _) in text.match_indices("<|") {
        let rest = &text[at + 2..];
        let Some(end) = rest.find("|>") else { continue };
        let word = &rest[..end];
        let name = word.strip_prefix('/').unwrap_or(word);
        if !name.is_empty() && name.len() <= 40 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            let token = format!("<|{word}|>");
            if !tokens.contains(&token) {
                tokens.push(token);
            }
        }
    }
    tokens
}

/// The suffix `add_generation_prompt: true` adds, for thinking on and off.
fn generation_prompt(r: &mut Renderer<'_>) -> Result<GenerationPrompt, TemplateError> {
    let mut measure = |enable_thinking: bool| -> Result<String, TemplateError> {
        let mut diff = |with_tools: bool| -> Result<String, TemplateError> {
            let with = r.try_render(&generation_request(enable_thinking, true, with_tools))?;
            // A template that rejects the turn without a prompt still has one: all of it.
            let without = r.try_render(&generation_request(enable_thinking, false, with_tools)).unwrap_or_default();
            Ok(prompt_suffix(&with, &without).to_string())
        };
        // Templates that cannot describe these tools (legacy tool formats) still
        // have a generation prompt: measure it without tools.
        diff(true).or_else(|_| diff(false))
    };
    let thinking = measure(true)?;
    let no_thinking = measure(false)?;
    Ok(GenerationPrompt { thinking, no_thinking, ..GenerationPrompt::default() })
}

/// What `add_generation_prompt: true` added: the render with it (`with`)
/// past what it shares with the render without it, never starting inside a
/// marker. (Phi-3.5 writes `{{ eos_token }}` where the prompt would go: with
/// `<|endoftext|>` against `<|assistant|>`, the shared `<|` belongs to the
/// prompt.)
pub(crate) fn prompt_suffix<'a>(with: &'a str, without: &str) -> &'a str {
    let mut at = crate::diff::common_prefix_len(without, with);
    if at < without.len() {
        let mut start = 0;
        for segment in crate::diff::segments(with) {
            let end = start + segment.text.len();
            if start < at && at < end && segment.kind == crate::diff::SegmentKind::Marker {
                at = start;
                break;
            }
            start = end;
        }
    }
    &with[at..]
}

/// What a generation prompt leaves open for the model.
fn prefill(prompt: &str, reasoning: &ReasoningSpec) -> Prefill {
    if reasoning.mode == ReasoningMode::None {
        return Prefill::Nothing;
    }
    let find_last = |marker: &str| {
        let marker = marker.trim();
        (!marker.is_empty()).then(|| prompt.rfind(marker).map(|pos| (pos, pos + marker.len()))).flatten()
    };
    match (find_last(&reasoning.start), find_last(&reasoning.end)) {
        (Some((start, _)), Some((end, _))) if end > start => Prefill::ClosedReasoning,
        // Either the prompt ends with the start marker, or the marker is
        // followed by boilerplate the template writes for the model (Apriel:
        // "<|begin_assistant|>\nHere are my reasoning steps:\n"): in both cases
        // the model continues inside the reasoning block, which only its end
        // marker closes.
        (Some(_), _) => Prefill::OpenReasoning,
        // A bare end marker closing the prompt (GLM with thinking off: "</think>").
        (None, Some((_, after))) if prompt[after..].trim().is_empty() => Prefill::ClosedReasoning,
        _ => Prefill::Nothing,
    }
}

/// Whether a tool-call turn needs `content` to be a string: the template
/// fails on a null content, or prints it (`None`) where an empty string
/// prints nothing.
fn requires_nonnull_content(r: &mut Renderer<'_>, spec: &FormatSpec) -> bool {
    if !spec.capabilities.supports_tool_calls {
        return false;
    }
    let with_content = |content: serde_json::Value| {
        Scenario::with_tools(probe::convo(json!({"role": "assistant", "content": content, "tool_calls": [probe::first_call()]})))
    };
    let empty = r.try_render(&with_content(json!("")));
    match (r.try_render(&with_content(serde_json::Value::Null)), empty) {
        (Err(e), Ok(_)) => e.kind != TemplateErrorKind::OutOfFuel,
        (Ok(null), Ok(empty)) => null.matches("None").count() > empty.matches("None").count(),
        _ => false,
    }
}

/// Every marker, trimmed, once, in spec order; markers without a letter or
/// digit (`>`, `">`, `[`) are bare punctuation that ordinary text tokenizes
/// too, so keeping them whole would change how plain text is encoded.
fn preserved_tokens(spec: &FormatSpec) -> Vec<String> {
    let t = &spec.tools;
    let candidates = [
        &spec.reasoning.start,
        &spec.reasoning.end,
        &spec.content.start,
        &spec.content.end,
        &t.format.section_start,
        &t.format.section_end,
        &t.format.per_call_start,
        &t.format.per_call_end,
        &t.function.name_prefix,
        &t.function.name_suffix,
        &t.function.close,
        &t.arguments.start,
        &t.arguments.end,
        &t.arguments.name_prefix,
        &t.arguments.name_suffix,
        &t.arguments.separator,
        &t.arguments.value_prefix,
        &t.arguments.value_suffix,
        &t.call_id.prefix,
        &t.call_id.suffix,
    ];
    let mut out: Vec<String> = Vec::new();
    for c in candidates {
        let token = c.trim();
        let marker = token.chars().any(char::is_alphanumeric);
        if marker && !out.iter().any(|t| t == token) {
            out.push(token.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn think() -> ReasoningSpec {
        ReasoningSpec { mode: ReasoningMode::TagBased, start: "<think>\n".into(), end: "\n</think>".into(), ..ReasoningSpec::default() }
    }

    #[test]
    fn prefill_kinds() {
        assert_eq!(prefill("<|im_start|>assistant\n<think>\n", &think()), Prefill::OpenReasoning);
        assert_eq!(prefill("<|im_start|>assistant\n<think>\n\n</think>\n\n", &think()), Prefill::ClosedReasoning);
        assert_eq!(prefill("<|assistant|></think>", &think()), Prefill::ClosedReasoning);
        assert_eq!(prefill("<|im_start|>assistant\n", &think()), Prefill::Nothing);
        assert_eq!(prefill("<think>\n", &ReasoningSpec::default()), Prefill::Nothing);
        let apriel = ReasoningSpec { mode: ReasoningMode::TagBased, start: "<|begin_assistant|>\n".into(), end: "\n[BEGIN FINAL RESPONSE]".into(), ..ReasoningSpec::default() };
        assert_eq!(prefill("\n<|begin_assistant|>\nHere are my reasoning steps:\n", &apriel), Prefill::OpenReasoning);
    }
}
