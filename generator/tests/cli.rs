//! The `chat-parser` command line: output and one-line errors.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chat-parser")).args(args).output().expect("binary runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("chat-parser-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write template");
    path.display().to_string()
}

fn own(name: &str) -> String {
    format!("{}/../templates/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn analyze_prints_the_spec() {
    let (code, out, _) = run(&["analyze", &own("xml_args.jinja")]);
    assert_eq!(code, 0);
    let spec: serde_json::Value = serde_json::from_str(&out).expect("JSON spec");
    assert_eq!(spec["tools"]["format"]["mode"], "TAG_WITH_TAGGED");
    assert_eq!(spec["tools"]["arguments"]["name_prefix"], "<parameter=");
}

#[test]
fn reference_format_uses_reference_names() {
    let (code, out, _) = run(&["analyze", &own("mistral_tool_calls.jinja"), "--format", "reference"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["handler"], "autoparser");
    assert_eq!(v["autoparser"]["tools"]["format"]["section_start"], "[TOOL_CALLS]");
    assert_eq!(v["autoparser"]["tools"]["format"]["tools_array_wrapped"], true);
    assert!(v["generation_prompt"].is_string());
}

fn assert_one_line_error(args: &[&str], expected: &str) {
    let (code, out, err) = run(args);
    assert_ne!(code, 0, "{args:?} should fail");
    assert!(out.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(expected), "{err:?} should mention {expected:?}");
}

#[test]
fn missing_file() {
    assert_one_line_error(&["analyze", "/no/such/template.jinja"], "cannot read /no/such/template.jinja");
}

#[test]
fn syntax_error_names_file_and_line() {
    let path = scratch("syntax.jinja", "{% for m in messages %}\n{{ m.content }\n{% endfor %}");
    assert_one_line_error(&["analyze", &path], &format!("{path}:2: syntax error"));
}

#[test]
fn template_that_raises() {
    let path = scratch("raise.jinja", "{{ raise_exception('This template only renders system prompts') }}");
    assert_one_line_error(&["analyze", &path], "template raised: This template only renders system prompts");
}

#[test]
fn analysis_failure() {
    // Renders nothing for any conversation: there is no format to find.
    let path = scratch("empty.jinja", "{% for m in messages %}{% endfor %}");
    let (code, out, err) = run(&["analyze", &path]);
    // An empty template still analyses (as plain content): it just has no markers.
    assert_eq!(code, 0, "{err}");
    let spec: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(spec["tools"]["format"]["mode"], "NONE");
    let path = scratch("undefined.jinja", "{{ messages[0].content + undefined_helper() }}");
    assert_one_line_error(&["analyze", &path], "undefined.jinja:1:");
}

#[test]
fn bad_usage() {
    assert_one_line_error(&["analyze", &own("plain.jinja"), "--format", "yaml"], "unknown format `yaml`");
    let (code, _, err) = run(&[]);
    assert_ne!(code, 0);
    assert!(err.contains("usage"));
}
