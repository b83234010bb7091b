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
use crate::spec::{GenerationPrompt, SwitchValue, ThinkingSwitch};

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
