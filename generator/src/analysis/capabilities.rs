//! Template capabilities: what a template can render at all.
//!
//! Each capability is read off a render: a probe value is passed in and we
//! look for it in the output. (The reference instruments its own Jinja engine
//! to see which values a template *reads*; looking at what it *writes* needs no
//! engine hooks and answers the question the parser cares about: does this
//! input reach the prompt?)

use serde_json::json;

use super::probe::{Renderer, Scenario};
use crate::spec::Capabilities;

const SYSTEM_NEEDLE: &str = "SYS_NEEDLE_7d1f";
const TYPED_NEEDLE: &str = "TYPED_NEEDLE_4c2a";
const TOOL_DECL: &str = "tool_decl_fn";
const CALL_ONE: &str = "tool_call_fn";
const CALL_TWO: &str = "tool_call_second_fn";
const ARG_VALUE: &str = "ARG_VALUE_NEEDLE_9b";
const REASONING_NEEDLE: &str = "REASONING_NEEDLE_3e";

fn tool_decl() -> serde_json::Value {
    json!([{
        "type": "function",
        "function": {
            "name": TOOL_DECL,
            "description": "Tool description",
            "parameters": {"type": "object", "properties": {"arg": {"type": "string", "description": "Arg description"}}, "required": ["arg"]}
        }
    }])
}

fn call_conversation(calls: serde_json::Value) -> serde_json::Value {
    json!([
        {"role": "user", "content": "User message"},
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
        {"role": "assistant", "content": "The tool response was 'tool response'"},
        {"role": "user", "content": "User message"},
    ])
}

fn call(name: &str, id: &str, args: serde_json::Value) -> serde_json::Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

fn scenario(messages: serde_json::Value, tools: Option<serde_json::Value>) -> Scenario {
    Scenario { messages, tools, add_generation_prompt: true, enable_thinking: true }
}

/// Probes the template's capabilities.
///
/// Probe renders are named `caps: ...`: their failures are answers (a
/// template that cannot print typed content fails on it), not errors.
pub fn detect(r: &mut Renderer<'_>) -> Capabilities {
    let mut caps = Capabilities::default();

    let plain = r.render("caps: string content", &scenario(json!([{"role": "user", "content": "content"}]), None));
    caps.supports_string_content = plain.is_some();

    let typed = r.render(
        "caps: typed content",
        &scenario(json!([{"role": "user", "content": [{"type": "text", "text": TYPED_NEEDLE}]}]), None),
    );
    // A template that prints the list itself shows the needle too, inside the
    // list's repr; typed support means it took the text out of the part.
    caps.supports_typed_content =
        typed.is_some_and(|t| t.contains(TYPED_NEEDLE) && !t.contains("'type'") && !t.contains("\"type\""));

    let system = r.render(
        "caps: system role",
        &scenario(json!([{"role": "system", "content": SYSTEM_NEEDLE}, {"role": "user", "content": "User message"}]), None),
    );
    caps.supports_system_role = system.is_some_and(|t| t.contains(SYSTEM_NEEDLE));

    let declared = r.render("caps: tools", &scenario(json!([{"role": "user", "content": "User message"}]), Some(tool_decl())));
    caps.supports_tools = declared.is_some_and(|t| t.contains(TOOL_DECL));

    let object_args = r.render(
        "caps: tool call, object arguments",
        &scenario(call_conversation(json!([call(CALL_ONE, "call00001", json!({"arg": ARG_VALUE}))])), Some(tool_decl())),
    );
    let object_ok = object_args.as_deref().is_some_and(|t| t.contains(CALL_ONE));
    caps.supports_object_arguments = object_ok && object_args.as_deref().is_some_and(|t| t.contains(ARG_VALUE));
    caps.supports_tool_calls = object_ok;
    if !caps.supports_object_arguments {
        let string_args = r.render(
            "caps: tool call, string arguments",
            &scenario(
                call_conversation(json!([call(CALL_ONE, "call00001", json!(format!("{{\"arg\": \"{ARG_VALUE}\"}}")))])),
                Some(tool_decl()),
            ),
        );
        caps.supports_tool_calls = caps.supports_tool_calls || string_args.is_some_and(|t| t.contains(CALL_ONE));
    }

    if caps.supports_tool_calls {
        let args = if caps.supports_object_arguments {
            json!({"arg": "value"})
        } else {
            json!("{\"arg\": \"value\"}")
        };
        let parallel = r.render(
            "caps: parallel tool calls",
            &scenario(
                call_conversation(json!([call(CALL_ONE, "call00001", args.clone()), call(CALL_TWO, "call00002", args)])),
                Some(tool_decl()),
            ),
        );
        caps.supports_parallel_tool_calls = parallel.is_some_and(|t| t.contains(CALL_TWO));
    }

    let history = r.render(
        "caps: reasoning in history",
        &scenario(
            json!([
                {"role": "user", "content": "User message"},
                {"role": "assistant", "content": "Assistant message", "reasoning_content": REASONING_NEEDLE},
                {"role": "user", "content": "User message"},
            ]),
            None,
        ),
    );
    caps.supports_preserve_reasoning = history.is_some_and(|t| t.contains(REASONING_NEEDLE));

    let user_only = json!([{"role": "user", "content": "User message"}]);
    let on = r.render("caps: enable_thinking", &Scenario { enable_thinking: true, ..scenario(user_only.clone(), None) });
    let off = r.render("caps: enable_thinking", &Scenario { enable_thinking: false, ..scenario(user_only, None) });
    caps.supports_enable_thinking = matches!((on, off), (Some(a), Some(b)) if a != b);
    caps
}
