//! A `chat-parser parse` request (the JSON the CLI reads on stdin, see
//! `generator/src/main.rs`) and the runtime [`Options`] a generated parser
//! takes for it.
//!
//! The fields and their defaults are the CLI's: `text` (required),
//! `is_partial`, `tools`, `tool_choice`, `parallel_tool_calls`,
//! `reasoning_format`, `enable_thinking` (also read from
//! `chat_template_kwargs`), `json_schema` or `response_format`; other fields
//! are ignored.

use chat_parser_generator::ir::build::{tool_signatures, ParseOptions, ReasoningFormat, ToolChoice};
use chat_parser_runtime::{ArgType, Options, Tool};
use serde_json::{json, Value};

/// What a request asks to parse, and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub options: ParseOptions,
    pub text: String,
    /// The output is not complete yet: the parser is not finished.
    pub is_partial: bool,
}

impl Request {
    /// Reads a request body.
    ///
    /// # Example
    /// ```
    /// use chat_parser_bench::request::Request;
    /// let body = serde_json::json!({"text": "Hi", "parallel_tool_calls": true});
    /// let request = Request::from_json(&body).unwrap();
    /// assert!(request.options.parallel_tool_calls && request.options.enable_thinking);
    /// assert!(Request::from_json(&serde_json::json!({})).is_err());
    /// ```
    pub fn from_json(body: &Value) -> Result<Request, String> {
        let Value::Object(fields) = body else { return Err("the request must be a JSON object".into()) };
        // A field given as `null` counts as absent.
        let field = |name: &str| fields.get(name).filter(|v| !v.is_null());
        let boolean = |name: &str, value: Option<&Value>, default: bool| match value {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!("`{name}` must be true or false, not {other}")),
        };

        let text = match field("text") {
            Some(Value::String(text)) => text.clone(),
            Some(_) => return Err("`text` must be a string".into()),
            None => return Err("the request has no `text` (the model output to parse)".into()),
        };
        let is_partial = boolean("is_partial", field("is_partial"), false)?;
        let reasoning_format = match field("reasoning_format").map(Value::as_str) {
            None => ReasoningFormat::Auto,
            Some(Some("auto")) => ReasoningFormat::Auto,
            Some(Some("none")) => ReasoningFormat::None,
            Some(Some("deepseek")) => ReasoningFormat::Deepseek,
            Some(other) => return Err(format!("unknown reasoning_format {other:?} (none, auto or deepseek)")),
        };
        let kwargs_thinking = fields.get("chat_template_kwargs").and_then(|k| k.get("enable_thinking")).filter(|v| !v.is_null());
        let enable_thinking = match field("enable_thinking") {
            Some(value) => boolean("enable_thinking", Some(value), true)?,
            None => boolean("chat_template_kwargs.enable_thinking", kwargs_thinking, true)?,
        };
        let parallel_tool_calls = boolean("parallel_tool_calls", field("parallel_tool_calls"), false)?;
        let tools = match field("tools") {
            None => Vec::new(),
            Some(Value::Array(tools)) => {
                for (i, tool) in tools.iter().enumerate() {
                    let function = tool.get("function").unwrap_or(tool);
                    if !function.get("name").is_some_and(Value::is_string) {
                        return Err(format!("tools[{i}] is not a tool: expected {{\"type\": \"function\", \"function\": {{\"name\": ..}}}}"));
                    }
                }
                tools.clone()
            }
            Some(_) => return Err("`tools` must be an array of tool objects".into()),
        };
        let tool_choice = match field("tool_choice") {
            None => ToolChoice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                "none" => ToolChoice::None,
                other => return Err(format!("unknown tool_choice `{other}` (auto, required, none or a function object)")),
            },
            Some(Value::Object(choice)) if choice.get("type").and_then(Value::as_str) == Some("function") => ToolChoice::Required,
            Some(other) => return Err(format!("unsupported tool_choice {other}")),
        };
        let json_schema = match (field("json_schema"), field("response_format")) {
            (Some(_), Some(_)) => return Err("give either `json_schema` or `response_format`, not both".into()),
            (Some(schema), None) => Some(schema.clone()),
            (None, Some(format)) => match format.get("type").and_then(Value::as_str) {
                Some("text") => None,
                Some("json_object") => Some(json!({"type": "object"})),
                Some("json_schema") => match format.get("json_schema").and_then(|s| s.get("schema")).filter(|s| !s.is_null()) {
                    Some(schema) => Some(schema.clone()),
                    None => return Err("response_format of type json_schema needs `json_schema.schema`".into()),
                },
                _ => return Err(format!("unsupported response_format {format}")),
            },
            (None, None) => None,
        };
        Ok(Request {
            options: ParseOptions { enable_thinking, reasoning_format, parallel_tool_calls, tools, tool_choice, json_schema },
            text,
            is_partial,
        })
    }
}

/// A request's tools in the runtime's form: owned names and argument types
/// (typed from each tool's JSON schema as the reference parser types them)
/// that the [`Tool`]s of [`RuntimeTools::with_options`] borrow.
///
/// # Example
/// ```
/// use chat_parser_bench::request::RuntimeTools;
/// use chat_parser_generator::ir::build::ParseOptions;
/// let tool = serde_json::json!({"type": "function", "function": {"name": "f",
///     "parameters": {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "integer"}}}}});
/// let options = ParseOptions { tools: vec![tool], ..ParseOptions::default() };
/// RuntimeTools::new(&options).with_options(&options, |o| {
///     assert_eq!(o.tools[0].name, "f");
///     assert_eq!(o.tools[0].arg_type("s"), chat_parser_runtime::ArgType::String);
///     assert_eq!(o.tools[0].arg_type("n"), chat_parser_runtime::ArgType::Json);
/// });
/// ```
pub struct RuntimeTools {
    names: Vec<String>,
    args: Vec<Vec<(String, ArgType)>>,
}

impl RuntimeTools {
    pub fn new(options: &ParseOptions) -> RuntimeTools {
        let sigs = tool_signatures(options);
        RuntimeTools { names: sigs.iter().map(|s| s.name.clone()).collect(), args: sigs.into_iter().map(|s| s.args).collect() }
    }

    /// Calls `f` with the runtime options for `options` (`tool_choice: none`
    /// declares no tools; a schema asks for structured output).
    pub fn with_options<R>(&self, options: &ParseOptions, f: impl FnOnce(Options<'_>) -> R) -> R {
        let arg_refs: Vec<Vec<(&str, ArgType)>> = self.args.iter().map(|a| a.iter().map(|(n, t)| (n.as_str(), *t)).collect()).collect();
        let tools: Vec<Tool<'_>> = self.names.iter().zip(&arg_refs).map(|(n, a)| Tool { name: n, args: a }).collect();
        f(Options {
            enable_thinking: options.enable_thinking,
            reasoning_format: match options.reasoning_format {
                ReasoningFormat::None => chat_parser_runtime::ReasoningFormat::None,
                ReasoningFormat::Auto => chat_parser_runtime::ReasoningFormat::Auto,
                ReasoningFormat::Deepseek => chat_parser_runtime::ReasoningFormat::Deepseek,
            },
            parallel_tool_calls: options.parallel_tool_calls,
            tools: if options.tool_choice == ToolChoice::None { &[] } else { &tools },
            structured_output: options.json_schema.is_some(),
            chat_template_kwargs: &[],
        })
    }
}
