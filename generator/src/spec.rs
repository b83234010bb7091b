//! The format spec: how one model writes reasoning, content and tool calls.
//!
//! This is the contract between template analysis and everything after it
//! (the format IR, generated parsers, grammars). It is plain data, serializable
//! with serde, so it can be checked in, diffed and snapshotted.
//!
//! Mode spellings (`TAG_BASED`, `JSON_NATIVE`, ...) follow the reference
//! auto-parser so specs can be compared with its analysis field by field.
//!
//! # Example
//! ```
//! use chat_parser_generator::spec::{FormatSpec, ReasoningMode};
//! let spec: FormatSpec = serde_json::from_str(r#"{"template": "x.jinja"}"#).unwrap();
//! assert_eq!(spec.reasoning.mode, ReasoningMode::None);
//! ```

use serde::{Deserialize, Serialize};

/// Everything the analysis learned about one template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FormatSpec {
    /// File name of the analysed template.
    pub template: String,
    /// Whether the generic analysis describes this format, or a dedicated
    /// family parser is needed.
    pub family: Family,
    pub capabilities: Capabilities,
    pub reasoning: ReasoningSpec,
    pub content: ContentSpec,
    pub tools: ToolsSpec,
    pub generation_prompt: GenerationPrompt,
    /// Markers that must stay single tokens when constraining decoding.
    pub preserved_tokens: Vec<String>,
    /// Template-specific corrections applied after the analysis (by name).
    pub corrections: Vec<String>,
    /// Replies made of messages with channel headers (harmony); empty for
    /// every other layout.
    pub channels: ChannelSpec,
}

/// A reply written as several messages, each with a header that names its
/// channel and, for a tool call, its recipient (OpenAI's harmony format):
///
/// ```text
/// <|channel|>analysis<|message|>reasoning<|end|>
/// <|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{...}<|call|>
/// <|start|>assistant<|channel|>final<|message|>content<|return|>
/// ```
///
/// The recipient may also follow the channel word
/// (`<|channel|>commentary to=functions.f <|constrain|>json<|message|>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChannelSpec {
    /// Starts a message's header (`<|start|>`), followed by the role.
    pub header_start: String,
    /// The model's role (`assistant`); a message addressed to it is its own.
    pub role: String,
    /// Before the channel word (`<|channel|>`).
    pub channel: String,
    /// Before the body (`<|message|>`).
    pub message: String,
    /// Before the body's content type (`<|constrain|>`), optional.
    pub constrain: String,
    /// Before the recipient (` to=`).
    pub recipient: String,
    /// The namespace of function recipients (`functions.`): a message to
    /// `functions.NAME` is a call of NAME. Other recipients are built-in
    /// tools (`python`, `browser.search`, `container.exec`) the request
    /// cannot declare: their messages are dropped.
    pub namespace: String,
    /// What ends a message (`<|end|>`, `<|call|>`, `<|return|>`); the
    /// first is the plain end between two messages.
    pub message_ends: Vec<String>,
    /// The channel that holds reasoning (`analysis`).
    pub reasoning_channel: String,
    /// Channels whose messages are content (`final`, and `commentary`
    /// without a recipient: a preamble).
    pub content_channels: Vec<String>,
}

impl ChannelSpec {
    /// Whether the reply is laid out as channel messages.
    pub fn is_used(&self) -> bool {
        !self.channel.is_empty() && !self.message.is_empty()
    }
}

/// Generic format, or a family that needs a dedicated format.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Family {
    #[default]
    Generic,
    /// A dedicated family, named as the reference names its handler.
    Dedicated(String),
}

/// What the template can render.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    pub supports_system_role: bool,
    pub supports_tools: bool,
    pub supports_tool_calls: bool,
    pub supports_parallel_tool_calls: bool,
    pub supports_string_content: bool,
    pub supports_typed_content: bool,
    pub supports_object_arguments: bool,
    /// `reasoning_content` of earlier assistant turns appears in the prompt.
    pub supports_preserve_reasoning: bool,
    /// Rendering with `enable_thinking` true and false gives different prompts.
    pub supports_enable_thinking: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReasoningMode {
    /// No reasoning markers.
    #[default]
    None,
    /// Reasoning between a start and an end marker (the start may be empty:
    /// delimiter style, ended by the end marker only).
    TagBased,
    /// Reasoning only appears together with tool calls.
    ToolsOnly,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReasoningSpec {
    pub mode: ReasoningMode,
    pub start: String,
    pub end: String,
    /// The model may leave its reasoning block open and start its tool calls
    /// right away (Kimi K2): where calls start, reasoning ends. Off for most
    /// families, whose models mention call markup inside their reasoning.
    pub ended_by_calls: bool,
    /// Reasoning blocks may come again after content (interleaved thinking,
    /// Gemma 4), and an end marker without a block is dropped as markup.
    pub interleaved: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ContentMode {
    #[default]
    Plain,
    AlwaysWrapped,
    WrappedWithReasoning,
    EndDelimited,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContentSpec {
    pub mode: ContentMode,
    pub start: String,
    pub end: String,
    pub requires_nonnull_content: bool,
    /// What the template writes to end an assistant turn, after content or
    /// after calls (`<|im_end|>`, `<|eot_id|>`, `<|eom_id|>`): in an output
    /// (a server that does not strip stop tokens) it ends the reply and is
    /// never content. Found by rendering (`analysis::content::end_of_turn`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub end_of_turn: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ToolFormatMode {
    #[default]
    None,
    /// The whole call is JSON: `{"name": ..., "arguments": {...}}`.
    JsonNative,
    /// Name in markup, arguments a JSON object: `<function=f>{...}</function>`.
    TagWithJson,
    /// Name and each argument in markup: `<parameter=k>v</parameter>`.
    TagWithTagged,
    /// A Python list of calls, `[f(a=1), g(b='x')]`: keyword arguments whose
    /// values are Python literals (or JSON). A list element written as a
    /// JSON call object (`{"name": …, "arguments": {…}}`) is read too.
    PythonCalls,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolFormat {
    pub mode: ToolFormatMode,
    pub section_start: String,
    pub section_end: String,
    pub per_call_start: String,
    pub per_call_end: String,
    /// `{"get_weather": {...}}`: the function name is the object key.
    pub fun_name_is_key: bool,
    /// Calls are written as a JSON array `[{...}, {...}]`.
    pub tools_array_wrapped: bool,
    /// JSON field holding a nested function object (`"function": {...}`).
    pub function_field: String,
    pub name_field: String,
    pub args_field: String,
    /// JSON field carrying the call id given in the history.
    pub id_field: String,
    /// JSON field the model fills with an id it generates.
    pub gen_id_field: String,
    /// Order of the JSON fields as the template writes them.
    pub parameter_order: Vec<String>,
    /// Non-string argument values (or the whole arguments object) are written
    /// as Python literals (`{'k': 'v'}`, `True`, `None`) instead of JSON: the
    /// template prints them without `tojson`.
    pub python_dict_arguments: bool,
    /// Scalar argument values are written the Python way (`True`, `False`,
    /// `None`): the template prints them with `|string` (Qwen3-Coder does).
    pub python_scalar_arguments: bool,
    /// Replies made of addressed blocks (Functionary v3.2): each block is
    /// `per_call_start` + a recipient + `function.name_suffix`, and the
    /// block addressed to this recipient (`all`) is content, any other a
    /// call to the tool it names (`>>>all\ntext`, `>>>get_weather\n{…}`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub content_recipient: String,
    /// A token models write right before a call although the template's
    /// own calls lack it (Llama 3.x's `<|python_tag|>`, which its template
    /// writes before built-in tool calls only): read and dropped.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub call_prefix: String,
    /// Other `(section_start, section_end)` pairs models write around the
    /// same calls although the template never does (Kimi K2 writes
    /// `<|tool_call_section_begin|>`, its section token in the singular):
    /// read like the section, never written by grammars.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub section_aliases: Vec<(String, String)>,
    /// Other bars models write around the namespace token all tool markers
    /// share (DeepSeek V3.2/V4 write `｜DSML｜` also as `｜｜DSML｜｜`,
    /// `|DSML|` or `‖DSML‖`): the template's forms are read so spelled
    /// too, never written by grammars.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespace_bars: Vec<String>,
}

impl Default for ToolFormat {
    /// Field names default to the OpenAI shape (`{"function": {"name": ..., "arguments": ...}}`).
    fn default() -> Self {
        ToolFormat {
            mode: ToolFormatMode::None,
            section_start: String::new(),
            section_end: String::new(),
            per_call_start: String::new(),
            per_call_end: String::new(),
            fun_name_is_key: false,
            tools_array_wrapped: false,
            function_field: "function".into(),
            name_field: "name".into(),
            args_field: "arguments".into(),
            id_field: String::new(),
            gen_id_field: String::new(),
            parameter_order: Vec::new(),
            python_dict_arguments: false,
            python_scalar_arguments: false,
            call_prefix: String::new(),
            content_recipient: String::new(),
            section_aliases: Vec::new(),
            namespace_bars: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FunctionMarkers {
    pub name_prefix: String,
    pub name_suffix: String,
    pub close: String,
    /// A namespace written before the name, between these two markers
    /// (MiroThinker's MCP server, `<server_name>tool-python</server_name>`
    /// before `<tool_name>run_python</tool_name>`). The parser reads it and
    /// drops it: the reported name is the function name alone, the name the
    /// request's tools declare. Optional in the output. Empty: none.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace_start: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace_end: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArgumentMarkers {
    pub start: String,
    pub end: String,
    pub name_prefix: String,
    pub name_suffix: String,
    pub value_prefix: String,
    pub value_suffix: String,
    pub separator: String,
    /// The value prefix written before a value that is not a string, when
    /// it differs from `value_prefix` (DeepSeek V3.2's DSML writes
    /// `string="true">` before raw strings and `string="false">` before JSON
    /// values). The value's type is then part of the markup: a parser reads
    /// it there, whatever the request's schema says. Empty: one prefix.
    pub json_value_prefix: String,
    /// Arguments are one object literal, `{key:value,...}` between
    /// `start` and `end`, with bare keys and string values between this
    /// quote (Gemma 4's `<|"|>`); other values are JSON. Empty: not this layout.
    pub string_quote: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CallIdPosition {
    #[default]
    None,
    PreFuncName,
    BetweenFuncAndArgs,
    PostArgs,
    /// The template writes no id of its own: it makes one out of the name,
    /// `namespace.NAME:index` (Kimi K2's `functions.get_weather:0`), where the
    /// name would be. The parser reads the name out of the id and reports
    /// both; `suffix` is the marker after the id.
    NameInId,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CallIdMarkers {
    pub pos: CallIdPosition,
    pub prefix: String,
    pub suffix: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolsSpec {
    pub format: ToolFormat,
    pub function: FunctionMarkers,
    pub arguments: ArgumentMarkers,
    pub call_id: CallIdMarkers,
}

impl ToolsSpec {
    /// The markup of calls the output writes (sections, calls, arguments,
    /// string markers, what follows an id), as the spec holds them
    /// (untrimmed; empty where the format has none).
    pub fn markers(&self) -> [&String; 12] {
        let (f, n, a) = (&self.format, &self.function, &self.arguments);
        [
            &f.section_start,
            &f.section_end,
            &f.per_call_start,
            &f.per_call_end,
            &n.name_prefix,
            &n.close,
            &a.start,
            &a.end,
            &a.name_prefix,
            &a.value_suffix,
            &a.string_quote,
            &self.call_id.suffix,
        ]
    }
}

/// What the generation prompt already opened for the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prefill {
    /// Output starts fresh.
    #[default]
    Nothing,
    /// The prompt ends inside an opened reasoning block: output starts with reasoning.
    OpenReasoning,
    /// The prompt opened and closed an (empty) reasoning block.
    ClosedReasoning,
}

/// The text the template appends for the assistant's turn
/// (render with `add_generation_prompt` true minus the render with false).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerationPrompt {
    /// With `enable_thinking: true`.
    pub thinking: String,
    /// With `enable_thinking: false`.
    pub no_thinking: String,
    pub thinking_prefill: Prefill,
    pub no_thinking_prefill: Prefill,
    /// Request variables (`chat_template_kwargs`) that switch thinking:
    /// with this value, the template writes the thinking or the
    /// no-thinking prompt above. Found by rendering
    /// (`analysis::kwargs`); `enable_thinking` is one where the template
    /// reads it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub switches: Vec<ThinkingSwitch>,
    /// Set where the template ignores `enable_thinking` and switches
    /// thinking with a variable of its own (Cohere2 MoE's and GigaChat
    /// 3.5's `reasoning`, in `switches`): thinking on or off when the
    /// request does not set that variable, whatever `enable_thinking` says.
    /// The two prompts above are then the variable's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_thinking: Option<bool>,
}

/// A request variable's value that picks one of the generation prompts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThinkingSwitch {
    pub variable: String,
    /// `true`/`false` (compared by Jinja truthiness) or a number
    /// (compared by value: Seed-OSS's `thinking_budget: 0`).
    pub value: SwitchValue,
    /// Whether the template writes the thinking prompt with it.
    pub thinking: bool,
}

/// A probe value of a [`ThinkingSwitch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SwitchValue {
    Bool(bool),
    Int(i64),
}

impl GenerationPrompt {
    /// Whether a request's `chat_template_kwargs` switch thinking on or
    /// off (`None` when none of them is a switch, and the template reads
    /// `enable_thinking`; its own default where it does not:
    /// [`Self::default_thinking`]). A later variable of the template's
    /// list wins over an earlier one.
    ///
    /// ```
    /// use chat_parser_generator::spec::{GenerationPrompt, SwitchValue, ThinkingSwitch};
    /// let p = GenerationPrompt {
    ///     switches: vec![ThinkingSwitch { variable: "thinking".into(), value: SwitchValue::Bool(false), thinking: false }],
    ///     ..GenerationPrompt::default()
    /// };
    /// let kwargs = serde_json::json!({"thinking": false});
    /// assert_eq!(p.thinking_from_kwargs(kwargs.as_object().unwrap()), Some(false));
    /// ```
    pub fn thinking_from_kwargs(&self, kwargs: &serde_json::Map<String, serde_json::Value>) -> Option<bool> {
        // A template that ignores `enable_thinking` has its own default.
        let mut out = self.default_thinking;
        for s in &self.switches {
            let Some(v) = kwargs.get(&s.variable) else { continue };
            let hit = match &s.value {
                SwitchValue::Bool(b) => truthy(v) == *b,
                SwitchValue::Int(want) => v.as_f64() == Some(*want as f64),
            };
            if hit {
                out = Some(s.thinking);
            }
        }
        out
    }
}

/// Jinja's truthiness of a JSON value.
fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        serde_json::Value::String(s) => !s.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        serde_json::Value::Object(o) => !o.is_empty(),
    }
}
