//! The `chat-parser-bench` binary on an own template: one JSON line with
//! every field, plausible figures, zero allocations; clear errors.

use std::path::PathBuf;
use std::process::{Command, Output};

use chat_parser_bench::parsers::AnyParser;
use serde_json::{json, Value};

const TEXT: &str = "I will save it.\n<tool_call>\n<function=save_snippet>\n<parameter=code>\nfn main() { println!(\"a < b\"); }\n</parameter>\n<parameter=line>\n12\n</parameter>\n</function>\n</tool_call>";

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chat-parser-bench")).args(args).output().expect("the binary runs")
}

/// A request file in the temp directory, unique to this test.
fn request_file(name: &str, request: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("chat-parser-bench-cli-{}-{name}.json", std::process::id()));
    std::fs::write(&path, request.to_string()).expect("temp file writable");
    path
}

fn request() -> Value {
    json!({
        "text": TEXT,
        "parallel_tool_calls": true,
        "tools": [{"type": "function", "function": {"name": "save_snippet", "parameters": {"type": "object", "properties": {
            "code": {"type": "string"}, "line": {"type": "integer"}
        }}}}],
        "messages": [{"role": "user", "content": "ignored"}]
    })
}

fn template() -> String {
    format!("{}/../templates/xml_args.jinja", env!("CARGO_MANIFEST_DIR"))
}

fn report(args: &[&str]) -> Value {
    let out = bench(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "exactly one line: {stdout}");
    serde_json::from_str(lines[0]).expect("the line is JSON")
}

#[test]
fn prints_one_json_line_with_every_field() {
    let path = request_file("ok", &request());
    let template = template();
    let line = report(&[&template, path.to_str().unwrap()]);
    let fields: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        ["template", "bytes", "oneshot_ns_per_byte", "stream_chunk_bytes", "stream_total_us", "heap_allocations", "state_bytes"]
    );
    assert_eq!(line["template"], "xml_args.jinja");
    assert_eq!(line["bytes"], TEXT.len());
    assert_eq!(line["stream_chunk_bytes"], 4);
    assert_eq!(line["heap_allocations"], 0);
    let state = AnyParser::new("xml_args.jinja", chat_parser_runtime::Options::default()).unwrap().state_bytes();
    assert_eq!(line["state_bytes"], state);
    let ns_per_byte = line["oneshot_ns_per_byte"].as_f64().unwrap();
    let stream_us = line["stream_total_us"].as_f64().unwrap();
    assert!(ns_per_byte > 0.0 && ns_per_byte < 10_000.0, "{line}");
    assert!(stream_us > 0.0 && stream_us < 100_000.0, "{line}");

    // A file name picks the same parser; the chunk size is an option.
    let by_name = report(&["xml_args.jinja", path.to_str().unwrap(), "--chunk-bytes", "7"]);
    assert_eq!(by_name["template"], "xml_args.jinja");
    assert_eq!(by_name["stream_chunk_bytes"], 7);
    assert_eq!(by_name["heap_allocations"], 0);
    let _ = std::fs::remove_file(path);
}

#[test]
fn errors_exit_with_status_2() {
    let path = request_file("errors", &request());
    let request = path.to_str().unwrap();
    let no_text = request_file("no-text", &json!({"tools": []}));
    let template = template();
    for (args, says) in [
        (vec!["no-such-template.jinja", request], "no generated parser for `no-such-template.jinja`"),
        (vec![&template, "/nonexistent/request.json"], "cannot read"),
        (vec![&template, no_text.to_str().unwrap()], "no `text`"),
        (vec![&template, request, "--chunk-bytes", "0"], "--chunk-bytes"),
        (vec![&template], "usage"),
    ] {
        let out = bench(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(stderr.contains(says) && stderr.lines().count() == 1, "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(no_text);
}
