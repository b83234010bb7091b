//! Phase K: request variables that switch thinking.
//!
//! Templates read different variables to turn thinking off: Qwen3's
//! `enable_thinking`, DeepSeek V3.1's `thinking`, others their own. A
//! request passes them as `chat_template_kwargs` (the HF and vLLM
//! convention). Each variable the template reads without setting, beyond
//! the ones every request has, is rendered with `true`, `false` and `0`;
//! a value with which the template writes the no-thinking generation
//! prompt switches thinking off, one that writes the thinking prompt
//! switches it on.
//!
//! ```text
//! thinking: false  →  "<｜Assistant｜></think>"   (the no-thinking prompt)
//! thinking: true   →  "<｜Assistant｜><think>"    (the thinking prompt)
//! ```

use serde_json::{json, Value};

use super::probe::Renderer;
use crate::spec::{GenerationPrompt, Prefill, SwitchValue, ThinkingSwitch};

/// Variables every request sets (or the renderer does): not switches.
const STANDARD: &[&str] = &[
    "messages",
    "tools",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
    "raise_exception",
    "strftime_now",
    "datetime",
    "date_string",
    "functions",
    "documents",
    "tool_choice",
    "builtin_tools",
    "custom_tools",
    "tools_in_user_message",
    "namespace",
    "range",
    "dict",
    "loop",
];

/// The switches `prompt` is told apart by; none when the two prompts are
/// the same (then nothing the parser reads depends on thinking).
pub fn thinking_switches(r: &mut Renderer<'_>, prompt: &GenerationPrompt, request: &dyn Fn(bool) -> super::probe::Scenario) -> Vec<ThinkingSwitch> {
    if prompt.thinking == prompt.no_thinking {
        return Vec::new();
    }
    let mut out = Vec::new();
    for variable in r.template.variables() {
        if STANDARD.contains(&variable.as_str()) {
            continue;
        }
        let mut found = Vec::new();
        for value in [SwitchValue::Bool(true), SwitchValue::Bool(false), SwitchValue::Int(0)] {
            let v = match &value {
                SwitchValue::Bool(b) => json!(b),
                SwitchValue::Int(i) => json!(i),
            };
            let Some(suffix) = suffix_with(r, request, &variable, v) else { continue };
            if suffix == prompt.no_thinking {
                found.push(ThinkingSwitch { variable: variable.clone(), value, thinking: false });
            } else if suffix == prompt.thinking {
                found.push(ThinkingSwitch { variable: variable.clone(), value, thinking: true });
            }
        }
        // A variable that never turns thinking off is not a switch (the
        // probes render with thinking on).
        if found.iter().any(|s| !s.thinking) {
            // `0` says what `false` says for a flag: keep it only for
            // variables whose booleans do not decide.
            let bools = found.iter().filter(|s| matches!(s.value, SwitchValue::Bool(_))).count();
            out.extend(found.into_iter().filter(|s| bools < 2 || matches!(s.value, SwitchValue::Bool(_))));
        }
    }
    out
}

/// A template that ignores `enable_thinking` and switches thinking with a
/// variable of its own (Cohere2 MoE's and GigaChat 3.5's `reasoning`): the
/// prompts that variable picks, and what the template does without it.
pub struct OwnSwitch {
    pub thinking: String,
    pub no_thinking: String,
    pub switches: Vec<ThinkingSwitch>,
    /// Thinking on or off when the request does not set the variable
    /// (Cohere2 MoE: on; GigaChat 3.5: off).
    pub default_thinking: bool,
}

/// For a template whose prompt `enable_thinking` does not change
/// (`default`): the first variable whose `true` and `false` write two
/// prompts, one that leaves a reasoning block open (the thinking prompt,
/// by `prefill`) and one that does not. `None` when no variable does.
///
/// ```text
/// reasoning: true   →  "<|CHATBOT_TOKEN|><|START_THINKING|>"                    (open: thinking)
/// reasoning: false  →  "<|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>"    (closed)
/// (not set)         →  the first: thinking is on by default
/// ```
pub fn own_switch(
    r: &mut Renderer<'_>,
    default: &str,
    request: &dyn Fn(bool) -> super::probe::Scenario,
    prefill: &dyn Fn(&str) -> Prefill,
) -> Option<OwnSwitch> {
    let mut candidates = r.template.variables();
    candidates.extend(tested_variables(r.template.source()));
    for variable in candidates {
        if STANDARD.contains(&variable.as_str()) || variable == "enable_thinking" {
            continue;
        }
        let (Some(on), Some(off)) = (suffix_with(r, request, &variable, json!(true)), suffix_with(r, request, &variable, json!(false))) else { continue };
        let open = |p: &str| prefill(p) == Prefill::OpenReasoning;
        // `true` should mean thinking; a variable that turns it off when
        // true (`disable_reasoning`) is read the other way round.
        let (thinking, no_thinking, on_means_thinking) = match (open(&on), open(&off)) {
            (true, false) => (on, off, true),
            (false, true) => (off, on, false),
            _ => continue,
        };
        let default_thinking = if default == thinking {
            true
        } else if default == no_thinking {
            false
        } else {
            continue;
        };
        let switch = |value: bool| ThinkingSwitch { variable: variable.clone(), value: SwitchValue::Bool(value), thinking: value == on_means_thinking };
        return Some(OwnSwitch { thinking, no_thinking, switches: vec![switch(true), switch(false)], default_thinking });
    }
    None
}

/// Names the template tests for being defined (`reasoning is not
/// undefined`, `x is defined`): variables a request may pass, even where
/// the template then sets them itself (`{% set reasoning = reasoning if
/// reasoning is not undefined else true %}`, which hides them from the
/// undeclared variables).
fn tested_variables(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for test in [" is defined", " is not defined", " is undefined", " is not undefined"] {
        for (at, _) in source.match_indices(test) {
            let before = &source[..at];
            let start = before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
            let name = &before[start..];
            // A plain name, not an attribute (`message.reasoning is defined`).
            let attribute = before[..start].ends_with('.');
            if !name.is_empty() && !attribute && !name.starts_with(|c: char| c.is_ascii_digit()) && !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The generation prompt with `variable` set to `value`.
fn suffix_with(r: &mut Renderer<'_>, request: &dyn Fn(bool) -> super::probe::Scenario, variable: &str, value: Value) -> Option<String> {
    let render = |add: bool| {
        let mut ctx = r.context(&request(add));
        ctx.as_object_mut()?.insert(variable.to_string(), value.clone());
        r.template.render(&ctx).ok()
    };
    let with = render(true)?;
    let without = render(false).unwrap_or_default();
    Some(super::prompt_suffix(&with, &without).to_string())
}
