//! The two ways to bring a template's format into a crate agree: the
//! `chat_parser!` macro and the build.rs API (used by this crate's build script).

chat_parser_macros::chat_parser!("templates/think.jinja");
chat_parser_macros::chat_parser!("templates/xml_args.jinja");

#[test]
fn macro_and_build_script_agree() {
    let built = chat_parser::templates::THINK;
    assert_eq!(think::GENERATION_PROMPT, built.generation_prompt);
    assert_eq!(think::REASONING_START, built.reasoning_start);
    assert_eq!(think::REASONING_END, built.reasoning_end);
    assert_eq!(think::PRESERVED_TOKENS, built.preserved_tokens);
    assert_eq!(think::SPEC_JSON, built.spec_json);
    assert_eq!(think::REASONING_END.trim(), "</think>");
}

#[test]
fn macro_embeds_the_spec() {
    let spec: chat_parser_generator::FormatSpec = serde_json::from_str(xml_args::SPEC_JSON).expect("spec JSON");
    assert_eq!(spec.tools.format.per_call_start, "<tool_call>\n");
    assert_eq!(spec.tools.function.name_prefix, "<function=");
    assert!(xml_args::PRESERVED_TOKENS.contains(&"<parameter="));
}

#[test]
fn build_script_covers_every_template() {
    let files: Vec<&str> = chat_parser::templates::ALL.iter().map(|t| t.file).collect();
    assert_eq!(files, ["json_tool_call.jinja", "mistral_tool_calls.jinja", "plain.jinja", "tag_json_args.jinja", "think.jinja", "xml_args.jinja"]);
    assert!(chat_parser::templates::ALL.iter().all(|t| t.handler == "autoparser"));
}
