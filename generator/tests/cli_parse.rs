//! `chat-parser parse`: a request on stdin, the parsed message (and with
//! `--stream N` the deltas) on stdout, one-line errors.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// Runs the CLI with `stdin` as its input: (exit code, stdout, stderr).
fn run(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chat-parser"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut input = child.stdin.take().expect("stdin");
    // The command may fail before reading stdin (a bad template): ignore a broken pipe.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let out = child.wait_with_output().expect("binary ends");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn own(name: &str) -> String {
    format!("{}/../templates/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `parse` without streaming: the one printed message.
fn parse(template: &str, request: &Value) -> Value {
    let (code, out, err) = run(&["parse", &own(template)], &request.to_string());
    assert_eq!(code, 0, "stderr: {err}");
    assert!(err.is_empty(), "stderr: {err}");
    assert_eq!(out.lines().count(), 1, "one line: {out}");
    let message: Value = serde_json::from_str(&out).expect("JSON message");
    without_finish_reason(message, request)
}

/// Checks the message's `finish_reason` (`length` only when the output
/// ended inside a call, `null` for a partial output) and its shape, and
/// returns it without the reason.
fn without_finish_reason(mut message: Value, request: &Value) -> Value {
    let reason = message.as_object_mut().expect("object").shift_remove("finish_reason").expect("finish_reason");
    if request["is_partial"] == json!(true) {
        assert_eq!(reason, Value::Null, "{message}");
    } else {
        assert!(reason == json!("stop") || reason == json!("length"), "{reason}");
    }
    assert_message_shape(&message);
    message
}

/// Exactly `content`, `reasoning_content`, `tool_calls: [{name, id, arguments}]`, all strings.
fn assert_message_shape(message: &Value) {
    let keys: Vec<&str> = message.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(keys, ["content", "reasoning_content", "tool_calls"], "{message}");
    assert!(message["content"].is_string() && message["reasoning_content"].is_string(), "{message}");
    for call in message["tool_calls"].as_array().expect("tool_calls array") {
        let keys: Vec<&str> = call.as_object().expect("call object").keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "id", "arguments"], "{message}");
        assert!(call.as_object().unwrap().values().all(Value::is_string), "{message}");
    }
}

fn weather_tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather", "description": "Current weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}
        }},
        {"type": "function", "function": {
            "name": "get_time", "description": "Current time",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}
        }}
    ])
}

const XML_CALL: &str = "Checking — 🌤️ now.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";

#[test]
fn reasoning_and_content() {
    let m = parse("think.jinja", &json!({"messages": [{"role": "user", "content": "Hi"}], "text": "Let me think</think>Hi"}));
    assert_eq!(m, json!({"content": "Hi", "reasoning_content": "Let me think", "tool_calls": []}));
}

#[test]
fn reasoning_options() {
    // reasoning_format none: the reasoning stays in the content.
    let m = parse("think.jinja", &json!({"text": "hmm</think>ok", "reasoning_format": "none"}));
    assert_eq!(m["reasoning_content"], "");
    assert!(m["content"].as_str().unwrap().ends_with("hmm</think>ok"), "{m}");
    // deepseek is auto's other name.
    let m = parse("think.jinja", &json!({"text": "hmm</think>ok", "reasoning_format": "deepseek"}));
    assert_eq!((m["reasoning_content"].as_str(), m["content"].as_str()), (Some("hmm"), Some("ok")));
    // Thinking disabled: the prompt closed the block, everything is content.
    for request in [
        json!({"text": "hmm</think>ok", "enable_thinking": false}),
        json!({"text": "hmm</think>ok", "chat_template_kwargs": {"enable_thinking": false}}),
    ] {
        let m = parse("think.jinja", &request);
        assert_eq!((m["reasoning_content"].as_str(), m["content"].as_str()), (Some(""), Some("hmm</think>ok")), "{request}");
    }
    // The request's own `enable_thinking` wins over the template arguments;
    // a variable the template does not read changes nothing.
    for (request, thinking) in [
        (json!({"text": "hmm</think>ok", "enable_thinking": true, "chat_template_kwargs": {"enable_thinking": false}}), true),
        (json!({"text": "hmm</think>ok", "chat_template_kwargs": {"enable_thinking": 0}}), false),
        (json!({"text": "hmm</think>ok", "chat_template_kwargs": {"thinking": false}}), true),
    ] {
        let m = parse("think.jinja", &request);
        assert_eq!(m["reasoning_content"].as_str() == Some("hmm"), thinking, "{request}: {m}");
    }
}

#[test]
fn tool_call_arguments() {
    let m = parse("xml_args.jinja", &json!({"tools": weather_tools(), "text": XML_CALL}));
    assert_eq!(m["content"].as_str().map(str::trim), Some("Checking — 🌤️ now."));
    let calls = m["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{m}");
    assert_eq!(calls[0]["name"], "get_weather");
    assert_eq!(calls[0]["id"], "");
    let args: Value = serde_json::from_str(calls[0]["arguments"].as_str().unwrap()).expect("arguments are JSON");
    assert_eq!(args, json!({"city": "São Paulo", "days": 3}));
}

#[test]
fn tool_choice() {
    // A named function (OpenAI's object form) parses the call like "required".
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    for choice in [json!("auto"), json!("required"), named] {
        let m = parse("xml_args.jinja", &json!({"tools": weather_tools(), "tool_choice": choice, "text": XML_CALL}));
        assert_eq!(m["tool_calls"][0]["name"], "get_weather", "{choice}: {m}");
    }
    // "none": the call is just text.
    let m = parse("xml_args.jinja", &json!({"tools": weather_tools(), "tool_choice": "none", "text": XML_CALL}));
    assert_eq!(m["tool_calls"], json!([]));
    assert_eq!(m["content"], XML_CALL);
}

#[test]
fn parallel_calls_with_ids() {
    let text = r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123XYZ"}, {"name": "get_time", "arguments": {"tz": "CET"}, "id": "def456UVW"}]"#;
    let m = parse("mistral_tool_calls.jinja", &json!({"tools": weather_tools(), "parallel_tool_calls": true, "text": text}));
    let calls = m["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{m}");
    assert_eq!((calls[0]["name"].as_str(), calls[0]["id"].as_str()), (Some("get_weather"), Some("abc123XYZ")));
    assert_eq!((calls[1]["name"].as_str(), calls[1]["id"].as_str()), (Some("get_time"), Some("def456UVW")));
    let args: Value = serde_json::from_str(calls[1]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"tz": "CET"}));
}

#[test]
fn structured_output() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "array"}}});
    for request in [
        json!({"text": "{\"a\": [1, 2]}", "json_schema": schema}),
        json!({"text": "{\"a\": [1, 2]}", "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}}),
    ] {
        let m = parse("plain.jinja", &request);
        let content: Value = serde_json::from_str(m["content"].as_str().unwrap()).expect("content is JSON");
        assert_eq!(content, json!({"a": [1, 2]}), "{request}");
    }
}

#[test]
fn partial_output_is_not_finished() {
    // A possible `</think>` prefix is held back while the output may go on...
    let m = parse("think.jinja", &json!({"text": "Let me think</thi", "is_partial": true}));
    assert_eq!(m["reasoning_content"], "Let me think");
    // ...and is text once the output is known to be complete.
    let m = parse("think.jinja", &json!({"text": "Let me think</thi", "is_partial": false}));
    assert_eq!(m["reasoning_content"], "Let me think</thi");
    // A call cut off inside its arguments: what is certain so far.
    let text = "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar";
    let m = parse("xml_args.jinja", &json!({"tools": weather_tools(), "text": text, "is_partial": true}));
    assert_eq!(m["tool_calls"][0]["name"], "get_weather");
    assert!(m["tool_calls"][0]["arguments"].as_str().unwrap().starts_with("{\"city\": \"Par"), "{m}");
}

/// Folds deltas (as JSON, the way an OpenAI client does) into a message.
fn fold(deltas: &[Value]) -> Value {
    let (mut content, mut reasoning) = (String::new(), String::new());
    let mut calls: Vec<[String; 3]> = Vec::new();
    for delta in deltas {
        content += delta["content"].as_str().unwrap_or("");
        reasoning += delta["reasoning_content"].as_str().unwrap_or("");
        for call in delta["tool_calls"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let index = call["index"].as_u64().expect("index") as usize;
            assert!(index <= calls.len(), "indexes are dense: {delta}");
            if index == calls.len() {
                assert_eq!(call["type"], "function", "a call's first delta is its header: {delta}");
                calls.push(Default::default());
            }
            calls[index][0] += call["function"]["name"].as_str().unwrap_or("");
            calls[index][1] += call["id"].as_str().unwrap_or("");
            calls[index][2] += call["function"]["arguments"].as_str().unwrap_or("");
        }
    }
    let calls: Vec<Value> = calls.into_iter().map(|[name, id, arguments]| json!({"name": name, "id": id, "arguments": arguments})).collect();
    json!({"content": content, "reasoning_content": reasoning, "tool_calls": calls})
}

/// `parse --stream N`: checks the shape of every line and that the deltas
/// fold into the final message; returns (deltas, message).
fn stream(template: &str, request: &Value, chunk: usize) -> (Vec<Value>, Value) {
    stream_with(template, request, &["--stream", &chunk.to_string()])
}

/// `parse` with these options (`--stream ...` among them): as [`stream`].
fn stream_with(template: &str, request: &Value, options: &[&str]) -> (Vec<Value>, Value) {
    let path = own(template);
    let args: Vec<&str> = ["parse", path.as_str()].into_iter().chain(options.iter().copied()).collect();
    let (code, out, err) = run(&args, &request.to_string());
    assert_eq!(code, 0, "stderr: {err}");
    let mut lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    let message = without_finish_reason(lines.pop().expect("the final message"), request);
    for delta in &lines {
        let fields = delta.as_object().expect("delta object");
        assert!(!fields.is_empty(), "no empty deltas");
        assert!(fields.keys().all(|k| ["content", "reasoning_content", "tool_calls"].contains(&k.as_str())), "{delta}");
        assert!(fields.get("content").is_none_or(|c| c.as_str().is_some_and(|c| !c.is_empty())), "{delta}");
        assert!(fields.get("reasoning_content").is_none_or(|c| c.as_str().is_some_and(|c| !c.is_empty())), "{delta}");
        for call in fields.get("tool_calls").map(|c| c.as_array().expect("array").clone()).unwrap_or_default() {
            assert!(call["index"].is_u64(), "a delta's call has an index: {delta}");
        }
    }
    assert_eq!(fold(&lines), message, "folded deltas of {options:?}");
    (lines, message)
}

#[test]
fn streaming_deltas_fold_into_the_message() {
    let cases = [
        ("think.jinja", json!({"text": "Let me think</think>Hi"})),
        ("think.jinja", json!({"text": "Réfléchir… 🤔</think>Привет, мир"})),
        ("xml_args.jinja", json!({"tools": weather_tools(), "text": XML_CALL})),
        (
            "mistral_tool_calls.jinja",
            json!({"tools": weather_tools(), "parallel_tool_calls": true, "text":
                r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123XYZ"}, {"name": "get_time", "arguments": {"tz": "CET"}, "id": "def456UVW"}]"#}),
        ),
        (
            "json_tool_call.jinja",
            json!({"tools": weather_tools(), "parallel_tool_calls": true, "text":
                "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>"}),
        ),
        ("xml_args.jinja", json!({"tools": weather_tools(), "text": "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar", "is_partial": true})),
    ];
    for (template, request) in &cases {
        let whole = parse(template, request);
        for chunk in [1, 2, 3, 7, 1000] {
            let (deltas, message) = stream(template, request, chunk);
            assert_eq!(message, whole, "{template} streamed in {chunk}-byte chunks: {request}");
            if chunk == 1 && !request["text"].as_str().unwrap().is_empty() {
                assert!(!deltas.is_empty(), "{template}: deltas as the text arrives");
            }
        }
    }
}

#[test]
fn streaming_one_byte_chunks_of_think() {
    let (deltas, message) = stream("think.jinja", &json!({"text": "Let me think</think>Hi"}), 1);
    assert_eq!(message, json!({"content": "Hi", "reasoning_content": "Let me think", "tool_calls": []}));
    // Several deltas: output is reported while it streams, not only at the end.
    assert!(deltas.len() > 2, "{deltas:?}");
    assert!(deltas.iter().all(|d| d.get("tool_calls").is_none()));
}

#[test]
fn streaming_tool_call_header_then_arguments() {
    let (deltas, message) = stream("xml_args.jinja", &json!({"tools": weather_tools(), "text": XML_CALL}), 1);
    let call_deltas: Vec<&Value> = deltas.iter().filter_map(|d| d.get("tool_calls")).flat_map(|c| c.as_array().unwrap()).collect();
    let header = call_deltas.first().expect("a call delta");
    assert_eq!((header["index"].as_u64(), header["type"].as_str()), (Some(0), Some("function")));
    assert_eq!(header["function"]["name"], "get_weather");
    assert!(call_deltas[1..].iter().all(|c| c.get("type").is_none() && c["function"].get("name").is_none()));
    let args: Value = serde_json::from_str(message["tool_calls"][0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"city": "São Paulo", "days": 3}));
}

fn assert_one_line_error(args: &[&str], stdin: &str, expected: &str) {
    let (code, out, err) = run(args, stdin);
    assert_eq!(code, 2, "{args:?} with {stdin:?} should fail: {out}");
    assert!(out.is_empty(), "nothing on stdout: {out}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(err.contains(expected), "{err:?} should mention {expected:?}");
}

#[test]
fn bad_requests() {
    let think = own("think.jinja");
    let args = ["parse", think.as_str()];
    assert_one_line_error(&args, "not json", "not valid JSON");
    assert_one_line_error(&args, "", "not valid JSON");
    assert_one_line_error(&args, "{\"text\": \"a\"", "not valid JSON");
    assert_one_line_error(&args, "[\"text\"]", "must be a JSON object");
    assert_one_line_error(&args, r#"{"messages": [{"role": "user", "content": "Hi"}]}"#, "no `text`");
    assert_one_line_error(&args, r#"{"text": 3}"#, "`text` must be a string");
    assert_one_line_error(&args, r#"{"text": "x", "reasoning_format": "loud"}"#, "unknown reasoning_format `loud`");
    assert_one_line_error(&args, r#"{"text": "x", "tool_choice": "maybe"}"#, "unknown tool_choice `maybe`");
    assert_one_line_error(&args, r#"{"text": "x", "enable_thinking": "no"}"#, "`enable_thinking` must be true or false");
    assert_one_line_error(&args, r#"{"text": "x", "chat_template_kwargs": [1]}"#, "`chat_template_kwargs` must be an object");
    assert_one_line_error(&args, r#"{"text": "x", "tools": {"name": "f"}}"#, "`tools` must be an array");
    assert_one_line_error(&args, r#"{"text": "x", "tools": [{"type": "function"}]}"#, "tools[0] is not a tool");
    assert_one_line_error(
        &args,
        r#"{"text": "x", "json_schema": {}, "response_format": {"type": "json_object"}}"#,
        "either `json_schema` or `response_format`",
    );
    assert_one_line_error(&args, r#"{"text": "x", "response_format": {"type": "yaml"}}"#, "unsupported response_format");
}

#[test]
fn bad_templates_and_arguments() {
    let request = r#"{"text": "Hi"}"#;
    assert_one_line_error(&["parse", "/no/such/template.jinja"], request, "cannot read /no/such/template.jinja");
    let dir = std::env::temp_dir().join(format!("chat-parser-cli-parse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let broken = dir.join("broken.jinja");
    std::fs::write(&broken, "{% for m in messages %}\n{{ m.content }\n{% endfor %}").unwrap();
    let broken = broken.display().to_string();
    assert_one_line_error(&["parse", &broken], request, &format!("{broken}:2: syntax error"));
    let _ = std::fs::remove_dir_all(&dir);
    let think = own("think.jinja");
    for bad in ["0", "many", "1,,2", "rand:1", "rand:x:3", "rand:1:0"] {
        assert_one_line_error(&["parse", &think, "--stream", bad], request, "--stream needs chunk sizes");
    }
    assert_one_line_error(&["parse", &think, "--stream"], request, "--stream needs chunk sizes");
    assert_one_line_error(&["parse", &think, "--cut-off-calls", "drop"], request, "--cut-off-calls takes content or incomplete");
    assert_one_line_error(&["parse", &think, "--chunk", "3"], request, "unknown option `--chunk`");
    assert_one_line_error(&["parse"], request, "usage: chat-parser parse TEMPLATE.jinja");
    // `--stream=N` works too.
    let (code, out, _) = run(&["parse", &own("plain.jinja"), "--stream=4"], request);
    assert_eq!(code, 0);
    assert_eq!(out.lines().last().and_then(|l| serde_json::from_str::<Value>(l).ok()).map(|m| m["content"].clone()), Some(json!("Hi")));
}

#[test]
fn usage_mentions_both_commands() {
    let (code, out, _) = run(&["--help"], "");
    assert_eq!(code, 0);
    assert!(out.contains("chat-parser analyze TEMPLATE.jinja [--format spec|reference]"), "{out}");
    assert!(out.contains("chat-parser parse TEMPLATE.jinja [--stream CHUNKS]"), "{out}");
    let (code, _, err) = run(&[], "");
    assert_eq!(code, 2);
    assert!(err.contains("chat-parser parse TEMPLATE.jinja [--stream CHUNKS]"), "{err}");
}

/// `--stream` replays token-shaped chunkings: a list of sizes cycled and a
/// seeded random one give the same message as the whole text, and the same
/// seed gives the same deltas.
#[test]
fn chunk_lists_and_seeded_random_chunks() {
    let request = json!({"tools": weather_tools(), "text": XML_CALL});
    let whole = parse("xml_args.jinja", &request);
    for chunks in ["1,3,7", "2", "rand:1:5", "rand:42:16"] {
        let (_, message) = stream_with("xml_args.jinja", &request, &["--stream", chunks]);
        assert_eq!(message, whole, "--stream {chunks}");
    }
    let (a, _) = stream_with("xml_args.jinja", &request, &["--stream", "rand:7:9"]);
    let (b, _) = stream_with("xml_args.jinja", &request, &["--stream=rand:7:9"]);
    let (c, _) = stream_with("xml_args.jinja", &request, &["--stream", "rand:8:9"]);
    assert_eq!(a, b, "one seed, one chunking");
    assert_ne!(a, c, "another seed, other chunks");
}

/// A call the output cut off: by default not a call (its text is content)
/// and `finish_reason` is `length`; `--cut-off-calls incomplete` keeps it,
/// marked; `--hold-calls` never streams it.
#[test]
fn cut_off_calls() {
    let text = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CE";
    let request = json!({"tools": weather_tools(), "parallel_tool_calls": true, "text": text});
    let path = own("json_tool_call.jinja");
    let line = |args: &[&str]| {
        let (code, out, err) = run(args, &request.to_string());
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(out.lines().last().unwrap()).unwrap()
    };
    let message = line(&["parse", &path]);
    assert_eq!(message["finish_reason"], "length");
    assert_eq!(message["tool_calls"].as_array().unwrap().len(), 1, "the complete call stays: {message}");
    assert_eq!(message["tool_calls"][0]["name"], "get_weather");
    assert_eq!(
        message["content"],
        "Sure.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CE",
        "the cut-off call's text (from the end of the call before) is content"
    );
    let kept = line(&["parse", &path, "--cut-off-calls", "incomplete"]);
    assert_eq!(kept["tool_calls"][1], json!({"name": "get_time", "id": "", "arguments": "{\"tz\": \"CE", "complete": false}));
    for chunks in ["1", "3", "rand:3:7"] {
        let (deltas, held) = stream_with("json_tool_call.jinja", &request, &["--stream", chunks, "--hold-calls"]);
        assert_eq!(held, without_finish_reason(message.clone(), &request), "--hold-calls folds into the message");
        let names: Vec<&Value> = deltas.iter().filter_map(|d| d.get("tool_calls")).flat_map(|c| c.as_array().unwrap()).filter_map(|c| c["function"].get("name")).collect();
        assert_eq!(names, [&json!("get_weather")], "the cut-off call is never sent");
    }
    let complete = json!({"tools": weather_tools(), "text": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"});
    let (code, out, _) = run(&["parse", &path], &complete.to_string());
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["finish_reason"], "stop");
}

/// A template that ends a turn with `{{ eos_token }}` learns its end marker
/// from `--eos-token`, or from a tokenizer config given as the template; an
/// `--eos-token` without its text is a one-line error.
#[test]
fn special_tokens_end_the_reply() {
    let request = json!({"text": "Hello</s>"}).to_string();
    let content = |args: &[&str]| {
        let (code, out, err) = run(args, &request);
        assert_eq!(code, 0, "stderr: {err}");
        serde_json::from_str::<Value>(&out).expect("JSON message")["content"].clone()
    };
    let template = own("mistral_tool_calls.jinja");
    let config = format!("{}/../tests/data/mistral_tokenizer_config.json", env!("CARGO_MANIFEST_DIR"));
    assert_eq!(content(&["parse", &template]), json!("Hello</s>"));
    assert_eq!(content(&["parse", &template, "--eos-token", "</s>"]), json!("Hello"));
    assert_eq!(content(&["parse", "--eos-token=</s>", &template]), json!("Hello"));
    assert_eq!(content(&["parse", &config]), json!("Hello"));
    // The flag overrides the config's own token.
    assert_eq!(content(&["parse", &config, "--eos-token", "<|end|>"]), json!("Hello</s>"));
    for args in [&["analyze", &template, "--eos-token"][..], &["grammar", &template, "--eos-token", "--json"], &["analyze", &template, "--eos-token="]] {
        let (code, _, err) = run(args, "{}");
        assert_eq!(code, 2, "{args:?}");
        assert!(err.starts_with("error: --eos-token needs the token's text") && err.lines().count() == 1, "{err}");
    }
    let (code, out, _) = run(&["generate", &template, "--eos-token", "</s>"], "");
    assert_eq!(code, 0);
    assert!(out.contains("--eos-token '</s>'"), "the header's command regenerates the same module");
}
