//! The probe inputs the analysis renders, and a renderer that remembers why a
//! render failed.
//!
//! Every needle is a string that cannot occur in a template by accident, so
//! finding it in a render says exactly where the template put that input.

use serde_json::{json, Value};

use crate::jinja::{ChatTemplate, TemplateError};

pub const FUN_FIRST: &str = "FFF_FIRST_FUN_F";
pub const FUN_SECOND: &str = "SSS_SECOND_FUN_S";
pub const ARG_FIRST: &str = "AA_ARG_FST_AA";
pub const ARG_SECOND: &str = "BB_ARG_SND_BB";
pub const USER_MSG: &str = "U_USER_MSG Hello END_U";
pub const ASSISTANT_MSG: &str = "A_ASST_MSG I can help END_A";
pub const THINKING_CONTENT: &str = "REASON_PART I am thinking END_R";
pub const CALL_ID_001: &str = "call00001";
pub const CALL_ID_002: &str = "call00002";
pub const CALL_ID_999: &str = "call99999";

/// One render request: the variables HF's `apply_chat_template` passes.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub messages: Value,
    pub tools: Option<Value>,
    pub add_generation_prompt: bool,
    pub enable_thinking: bool,
}

impl Scenario {
    /// A conversation without generation prompt, thinking enabled, with the
    /// two probe tools declared (the shape most phases start from).
    pub fn with_tools(messages: Value) -> Scenario {
        Scenario { messages, tools: Some(probe_tools()), add_generation_prompt: false, enable_thinking: true }
    }

    pub fn context(&self) -> Value {
        let mut ctx = json!({
            "messages": self.messages,
            "add_generation_prompt": self.add_generation_prompt,
            "enable_thinking": self.enable_thinking,
        });
        if let (Some(tools), Some(map)) = (&self.tools, ctx.as_object_mut()) {
            map.insert("tools".into(), tools.clone());
        }
        ctx
    }
}

/// A render that failed, kept so callers can tell a template that raises on
/// purpose from one the renderer cannot handle.
#[derive(Debug, Clone)]
pub struct RenderFailure {
    pub scenario: &'static str,
    pub error: TemplateError,
}

/// Renders scenarios and records failures instead of stopping at the first.
pub struct Renderer<'t> {
    pub template: &'t ChatTemplate,
    pub failures: Vec<RenderFailure>,
    /// The template reads a `functions` variable (the tools as JSON text), as
    /// Fireworks' firefunction templates do; their servers pass it.
    wants_functions_text: bool,
    /// Pass tool-call arguments as JSON text instead of objects (for
    /// templates that only handle string arguments, like the OpenAI wire format).
    pub string_arguments: bool,
    /// Give the probes' calls ids in this family's own convention
    /// (`namespace.NAME:index`, see [`name_index_ids`]) instead of
    /// `call00001`: a template that prints the request's ids as given shows
    /// the model's call syntax only through them.
    pub ids_with_names: Option<&'static str>,
    /// Renders by context: phases share scenarios (the one-call render is
    /// used by six of them), and big templates take a millisecond per render.
    cache: std::collections::HashMap<String, Result<String, TemplateError>>,
}

impl<'t> Renderer<'t> {
    pub fn new(template: &'t ChatTemplate) -> Self {
        let wants_functions_text = template.source().contains("+ functions");
        Renderer { template, failures: Vec::new(), wants_functions_text, string_arguments: false, ids_with_names: None, cache: Default::default() }
    }

    /// The variables for a scenario, with the extras serving stacks pass:
    /// today's date (pinned, so renders are deterministic) and, where the
    /// template wants it, the tools as JSON text.
    pub fn context(&self, scenario: &Scenario) -> Value {
        let mut ctx = scenario.context();
        if let Some(map) = ctx.as_object_mut() {
            // The tokenizer's tokens, as a server passes them (empty when
            // not given: the template alone does not show them).
            let special = self.template.special_tokens();
            map.insert("bos_token".into(), json!(special.bos_token));
            map.insert("eos_token".into(), json!(special.eos_token));
            map.insert("datetime".into(), json!("Jan 01 2026"));
            map.insert("date_string".into(), json!("01 Jan 2026"));
            if let Some(messages) = map.get_mut("messages").and_then(Value::as_array_mut) {
                if self.string_arguments {
                    messages.iter_mut().for_each(stringify_arguments);
                }
                if let Some(namespace) = self.ids_with_names {
                    name_index_ids(messages, namespace);
                }
            }
            if self.wants_functions_text {
                let text = scenario.tools.as_ref().map(|t| t.to_string()).unwrap_or_default();
                map.insert("functions".into(), json!(text));
            }
        }
        ctx
    }

    /// Renders without recording a failure.
    pub fn try_render(&mut self, scenario: &Scenario) -> Result<String, TemplateError> {
        let ctx = self.context(scenario);
        let key = ctx.to_string();
        if let Some(hit) = self.cache.get(&key) {
            return hit.clone();
        }
        let result = self.template.render(&ctx);
        self.cache.insert(key, result.clone());
        result
    }

    /// The render, or `None` when the template failed or rendered nothing
    /// (an empty render carries no information for a comparison).
    pub fn render(&mut self, name: &'static str, scenario: &Scenario) -> Option<String> {
        match self.try_render(scenario) {
            Ok(text) if !text.is_empty() => Some(text),
            Ok(_) => None,
            Err(error) => {
                self.failures.push(RenderFailure { scenario: name, error });
                None
            }
        }
    }

    /// Renders `a` and `b` and splits them into common and differing parts.
    pub fn compare(&mut self, name: &'static str, a: &Scenario, b: &Scenario) -> Option<Comparison> {
        let output_a = self.render(name, a)?;
        let output_b = self.render(name, b)?;
        let diff = crate::diff::diff_split(&output_a, &output_b);
        Some(Comparison { diff, output_a, output_b })
    }
}

/// Two renders and their diff.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub diff: crate::diff::DiffSplit,
    pub output_a: String,
    pub output_b: String,
}

/// Gives the calls of `messages` ids made of the name and the call's index
/// in the conversation, `namespace.NAME:index` (Kimi K2:
/// `functions.get_weather:0`), and the tool replies the same ids.
///
/// ```
/// use chat_parser_generator::analysis::probe::name_index_ids;
/// use serde_json::json;
/// let mut messages = vec![
///     json!({"role": "assistant", "tool_calls": [{"id": "call00001", "function": {"name": "foo", "arguments": {}}}]}),
///     json!({"role": "tool", "tool_call_id": "call00001", "content": "ok"}),
/// ];
/// name_index_ids(&mut messages, "functions.");
/// assert_eq!(messages[0]["tool_calls"][0]["id"], "functions.foo:0");
/// assert_eq!(messages[1]["tool_call_id"], "functions.foo:0");
/// ```
pub fn name_index_ids(messages: &mut [Value], namespace: &str) {
    let mut renamed: Vec<(String, String)> = Vec::new();
    for message in messages.iter_mut() {
        if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for call in calls {
                let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
                let id = format!("{namespace}{name}:{}", renamed.len());
                let old = call.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                call["id"] = json!(id);
                renamed.push((old, id));
            }
        }
        let reply = message.get("tool_call_id").and_then(Value::as_str).map(str::to_string);
        if let Some(new) = reply.and_then(|old| renamed.iter().rev().find(|(o, _)| *o == old).map(|(_, n)| n.clone())) {
            message["tool_call_id"] = json!(new);
        }
    }
}

/// Turns object arguments of a message's tool calls into JSON text.
fn stringify_arguments(message: &mut Value) {
    let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) else { return };
    for call in calls {
        if let Some(args) = call.pointer_mut("/function/arguments") {
            if !args.is_string() {
                *args = Value::String(args.to_string());
            }
        }
    }
}

pub fn user_msg() -> Value {
    json!({"role": "user", "content": USER_MSG})
}

pub fn probe_tools() -> Value {
    let params = json!({
        "type": "object",
        "properties": {
            ARG_FIRST: {"type": "string", "description": "First argument"},
            ARG_SECOND: {"type": "string", "description": "Second argument"},
        },
        "required": [],
    });
    json!([
        {"type": "function", "function": {"name": FUN_FIRST, "description": "Test function foo", "parameters": params}},
        {"type": "function", "function": {"name": FUN_SECOND, "description": "Test function bar", "parameters": params}},
    ])
}

pub fn tool_call(name: &str, args: Value, id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

/// The standard call: first function, both arguments.
pub fn first_call() -> Value {
    tool_call(FUN_FIRST, json!({ARG_FIRST: "XXXX", ARG_SECOND: "YYYY"}), CALL_ID_001)
}

pub fn second_call() -> Value {
    tool_call(FUN_SECOND, json!({ARG_FIRST: "XXXX", ARG_SECOND: "YYYY"}), CALL_ID_002)
}

/// An assistant turn that makes these calls with empty content.
pub fn assistant_calls(calls: Vec<Value>) -> Value {
    json!({"role": "assistant", "content": "", "tool_calls": calls})
}

pub fn assistant_text() -> Value {
    json!({"role": "assistant", "content": ASSISTANT_MSG})
}

/// `[user, turn]`.
pub fn convo(turn: Value) -> Value {
    json!([user_msg(), turn])
}
