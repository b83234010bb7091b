//! A spec in the reference auto-parser's vocabulary.
//!
//! Same field names and mode spellings as the `handler` and `autoparser`
//! objects of the reference's analysis files, plus `generation_prompt`, so a
//! script can compare the two field by field.

use serde_json::{json, Value};

use crate::spec::{Family, FormatSpec};

/// Renders `spec` as the reference would describe it.
///
/// # Example
/// ```
/// use chat_parser_generator::{reference::reference_view, spec::FormatSpec};
/// let v = reference_view(&FormatSpec::default());
/// assert_eq!(v["handler"], "autoparser");
/// assert_eq!(v["autoparser"]["reasoning"]["mode"], "NONE");
/// ```
pub fn reference_view(spec: &FormatSpec) -> Value {
    let handler = match &spec.family {
        Family::Generic => "autoparser".to_string(),
        Family::Dedicated(name) => format!("specialized: {name}"),
    };
    let f = &spec.tools.format;
    let caps = &spec.capabilities;
    json!({
        "handler": handler,
        "caps": {
            "supports_object_arguments": caps.supports_object_arguments,
            "supports_parallel_tool_calls": caps.supports_parallel_tool_calls,
            "supports_preserve_reasoning": caps.supports_preserve_reasoning,
            "supports_string_content": caps.supports_string_content,
            "supports_system_role": caps.supports_system_role,
            "supports_tool_calls": caps.supports_tool_calls,
            "supports_tools": caps.supports_tools,
            "supports_typed_content": caps.supports_typed_content,
        },
        "template_supports_enable_thinking": caps.supports_enable_thinking,
        "autoparser": {
            "reasoning": spec.reasoning,
            "content": spec.content,
            "tools": {
                "format": {
                    "mode": f.mode,
                    "section_start": f.section_start,
                    "section_end": f.section_end,
                    "per_call_start": f.per_call_start,
                    "per_call_end": f.per_call_end,
                    "fun_name_is_key": f.fun_name_is_key,
                    "tools_array_wrapped": f.tools_array_wrapped,
                    "function_field": f.function_field,
                    "name_field": f.name_field,
                    "args_field": f.args_field,
                    "id_field": f.id_field,
                    "gen_id_field": f.gen_id_field,
                    "parameter_order": f.parameter_order,
                },
                "function": spec.tools.function,
                "arguments": spec.tools.arguments,
                "call_id": spec.tools.call_id,
            },
            "preserved_tokens": spec.preserved_tokens,
        },
        // The prompt the template writes by default (GigaChat 3.5's own
        // switch is off unless set).
        "generation_prompt": if spec.generation_prompt.default_thinking == Some(false) { &spec.generation_prompt.no_thinking } else { &spec.generation_prompt.thinking },
    })
}
