//! Model outputs for the project's own templates (`templates/`): answers,
//! reasoning, calls in each template's markup, broken and cut-off calls,
//! multi-byte characters; and the tool they call.
#![allow(dead_code)]

use serde_json::json;

/// The tool the outputs call.
pub fn tool() -> serde_json::Value {
    json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}})
}

pub const TEXTS: &[&str] = &[
    "Hello there.",
    "<think>\nLet me think.\n</think>\n\nThe answer is 4.",
    "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>",
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"abc123def\"}]",
    "<tool_call>get_weather\n{\"city\": \"Rome\"}</tool_call> and <tool_call>nope{}</tool_call>",
    "text <tool_call>\n{\"name\": \"unknown\", \"arguments\": {}}\n</tool_call> more",
    "<think>unterminated reasoning <tool_call>",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par",
    "caf\u{e9} \u{1F600} <tool_call>\n<function=get_weather>\n<parameter=city>\n\u{1F600}\n</parameter>\n",
];
