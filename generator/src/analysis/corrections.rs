//! Template-specific corrections applied after the differential analysis.
//!
//! Some templates hide their format from the diff (they drop reasoning from
//! history, or print markers the probes never reach). Each correction is keyed
//! by substrings of the template source that identify one family, and says
//! which family and why.

use crate::spec::*;

struct Correction {
    name: &'static str,
    applies: fn(&str, &FormatSpec) -> bool,
    apply: fn(&mut FormatSpec),
}

fn set_reasoning(spec: &mut FormatSpec, start: &str, end: &str) {
    spec.reasoning = ReasoningSpec { mode: ReasoningMode::TagBased, start: start.into(), end: end.into(), ..ReasoningSpec::default() };
}

const CORRECTIONS: &[Correction] = &[
    // Llama 3.x: JSON calls without markers, but the 3.1 and 3.3 templates
    // write <|python_tag|> before built-in tool calls, and the models (3.2
    // too, whose template leaves built-in tools out: same chat tokens, same
    // tokenizer) write it before any call.
    Correction {
        name: "Llama 3.x python tag",
        applies: |s, spec| {
            let f = &spec.tools.format;
            let llama3 = s.contains("<|python_tag|>") || (s.contains("<|start_header_id|>") && s.contains("<|eot_id|>"));
            llama3 && f.mode == ToolFormatMode::JsonNative && f.section_start.trim().is_empty() && f.per_call_start.trim().is_empty()
        },
        apply: |spec| spec.tools.format.call_prefix = "<|python_tag|>".into(),
    },
    // Qwen QwQ / DeepSeek-R1 distills: the template strips reasoning from
    // history (`content.split('</think>')`), so no probe shows the markers, but
    // the model does write <think>...</think>.
    Correction {
        name: "old Qwen/DeepSeek thinking template",
        applies: |s, spec| {
            s.contains("content.split('</think>')")
                && !s.contains("reasoning_content")
                && !s.contains("<SPECIAL_12>")
                && spec.reasoning.mode == ReasoningMode::None
        },
        apply: |spec| set_reasoning(spec, "<think>", "</think>"),
    },
    // NVIDIA Nemotron Nano v2: the generation prompt opens `<think>\n`,
    // and the template never renders reasoning (it keeps only what follows
    // `</think>` in history), so the diff takes the opener for a content
    // wrapper. The model reasons up to `</think>` and answers after it, as
    // llama.cpp's and vLLM's Nemotron v2 parsers read it: the reply starts
    // in its reasoning (delimiter style, as Laguna), and a call at a line's
    // start ends it. Thinking is switched off by `/no_think` in a message,
    // which renders the block closed (`<think></think>`, a literal of the
    // source): the prompt without thinking.
    Correction {
        name: "Nemotron Nano v2 thinking",
        applies: |s, spec| {
            s.contains("content.split('</think>')")
                && s.contains("<SPECIAL_12>")
                && s.contains("'<think></think>'")
                && spec.reasoning.mode == ReasoningMode::None
                && spec.content.start.trim() == "<think>"
        },
        apply: |spec| {
            // (The newline the prompt writes after the opener, and the
            // model before the closer: layout.)
            set_reasoning(spec, "", "\n</think>");
            spec.reasoning.ended_by_calls = true;
            let c = &mut spec.content;
            *c = ContentSpec { end_of_turn: std::mem::take(&mut c.end_of_turn), requires_nonnull_content: c.requires_nonnull_content, ..ContentSpec::default() };
            let g = &mut spec.generation_prompt;
            if let Some(prompt) = g.thinking.trim_end().strip_suffix("<think>") {
                g.no_thinking = format!("{prompt}<think></think>");
            }
        },
    },
    // Poolside Laguna: the generation prompt prefills <think>, reasoning ends
    // at </think> and the answer at </assistant>.
    Correction {
        name: "Poolside Laguna",
        applies: |s, _| {
            s.contains("laguna_glm_thinking") && s.contains("{{- \"<assistant>\\n\" -}}") && s.contains("{{- '<think>' -}}")
        },
        apply: |spec| {
            set_reasoning(spec, "", "</think>");
            spec.content.mode = ContentMode::EndDelimited;
            spec.content.end = "</assistant>".into();
        },
    },
    // IBM Granite 3.3: thinking mode is a system-prompt instruction ("Write
    // your thoughts between <think></think> and ... <response></response>"),
    // invisible to the diff.
    Correction {
        name: "Granite 3.3",
        applies: |s, _| s.contains("Write your thoughts between <think></think> and write your response between <response></response>"),
        apply: |spec| {
            set_reasoning(spec, "<think>", "</think>");
            spec.content = ContentSpec {
                mode: ContentMode::WrappedWithReasoning,
                start: "<response>".into(),
                end: "</response>".into(),
                requires_nonnull_content: spec.content.requires_nonnull_content,
                end_of_turn: Vec::new(),
            };
        },
    },
    // Cohere Command R+: replies sit between <|CHATBOT_TOKEN|> and <|END_OF_TURN_TOKEN|>.
    Correction {
        name: "Cohere Command R+",
        applies: |s, spec| s.contains("<|CHATBOT_TOKEN|>") && s.contains("<|END_OF_TURN_TOKEN|>") && spec.content.start.is_empty(),
        apply: |spec| {
            spec.content.mode = ContentMode::AlwaysWrapped;
            spec.content.start = "<|CHATBOT_TOKEN|>".into();
            spec.content.end = "<|END_OF_TURN_TOKEN|>".into();
        },
    },
    // Functionary v3.1: calls are bare `<function=name>{...}</function>` with no
    // section marker; the diff sees the Llama 3 header as one.
    Correction {
        name: "Functionary 3.1",
        applies: |s, _| s.contains("set has_code_interpreter = tools | selectattr(\"type\", \"equalto\", \"code_interpreter\") | list | length > 0"),
        apply: |spec| {
            spec.content.mode = ContentMode::Plain;
            spec.content.end.clear();
            spec.tools.function.name_prefix.clear();
            spec.tools.format.section_start.clear();
            spec.tools.format.section_end.clear();
            spec.tools.format.per_call_start = "<function=".into();
            spec.tools.format.per_call_end = "</function>".into();
            spec.tools.function.close.clear();
        },
    },
    // DeepSeek-R1-Distill-Qwen: the history renders calls with a code fence and
    // the tool type; the markers the model writes are these.
    Correction {
        name: "DeepSeek-R1-Distill-Qwen",
        applies: |s, _| s.contains("{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'"),
        apply: |spec| {
            let f = &mut spec.tools.format;
            f.section_start = "<｜tool▁calls▁begin｜>".into();
            f.section_end = "<｜tool▁calls▁end｜>".into();
            f.per_call_start = "<｜tool▁call▁begin｜>function".into();
            f.per_call_end = "<｜tool▁call▁end｜>".into();
            spec.tools.function.name_prefix = "<｜tool▁sep｜>".into();
            spec.tools.function.close = "```".into();
        },
    },
];

/// Applies every correction whose source test matches; returns their names.
pub fn apply(source: &str, spec: &mut FormatSpec) -> Vec<&'static str> {
    let mut applied = Vec::new();
    for c in CORRECTIONS {
        if (c.applies)(source, spec) {
            (c.apply)(spec);
            applied.push(c.name);
        }
    }
    applied
}

/// Preserved tokens the Functionary 3.1 correction pins (its Llama 3 end tokens
/// and the call markers), replacing the collected ones.
pub fn functionary_tokens() -> Vec<String> {
    ["<|eot_id|>", "<|eom_id|>", "<function=", ">", "</function>"].iter().map(|s| s.to_string()).collect()
}
