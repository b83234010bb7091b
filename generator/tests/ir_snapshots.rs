//! Snapshots of the format IR built for the project's own templates, with
//! one declared tool (the grammar every backend is generated from).

use chat_parser_generator::{analyze, ir::build::*, jinja::ChatTemplate};

#[test]
fn own_template_grammars() {
    let tool = serde_json::json!({"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]
    }}});
    insta::glob!("../../templates", "*.jinja", |path| {
        let source = std::fs::read_to_string(path).expect("template readable");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let spec = analyze(&ChatTemplate::new(&name, &source).expect("compiles")).expect("analyses").spec;
        let mut out = String::new();
        for (label, options) in [
            ("tools, thinking", ParseOptions { tools: vec![tool.clone()], ..ParseOptions::default() }),
            ("no tools, reasoning_format none", ParseOptions { reasoning_format: ReasoningFormat::None, ..ParseOptions::default() }),
            ("tools, parallel, no thinking", ParseOptions { tools: vec![tool.clone()], parallel_tool_calls: true, enable_thinking: false, ..ParseOptions::default() }),
        ] {
            out.push_str(&format!("# {label}\n{}\n\n", build(&spec, &options)));
        }
        insta::assert_snapshot!(out);
    });
}
