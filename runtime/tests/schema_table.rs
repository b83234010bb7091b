//! The JSON-schema table (`tests/grammar/schemas.json`): every schema is
//! converted (collecting warnings, never panicking), the grammars are checked
//! for a few structural properties here, and then judged by llguidance
//! through `tests/grammar/check.py`: each entry's valid instances must be
//! accepted and its invalid ones rejected, in both the GBNF and Lark forms.
//!
//! Table entries: `name`, `schema`, `valid`, `invalid` (instances as text),
//! optional `python` (values as Python literals), `warn` (the conversion
//! must warn; otherwise it must not) and `note` (why an instance is where it
//! is when that differs from plain JSON schema).

#![cfg(feature = "alloc")]

#[path = "../../generator/tests/support/figures.rs"]
mod figures;
use figures::figure;
use chat_parser_runtime::grammar::schema::{schema_rule, SchemaOptions};
use chat_parser_runtime::grammar::value::Value;
use chat_parser_runtime::grammar::{Expr, Grammar};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Exit status of check.py when llguidance is not installed.
const EXIT_SKIP: i32 = 3;
/// Expression nodes a table schema's grammar may have.
const MAX_NODES: usize = 20_000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn table() -> Vec<serde_json::Value> {
    let path = workspace().join("tests/grammar/schemas.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn texts(entry: &serde_json::Value, key: &str) -> Vec<String> {
    entry[key].as_array().map(|a| a.iter().filter_map(|t| t.as_str().map(String::from)).collect()).unwrap_or_default()
}

/// Calls `f` on every expression in `e`, outermost first.
fn walk(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Seq(items) | Expr::Alt(items) => items.iter().for_each(|i| walk(i, f)),
        Expr::Repeat { expr, .. } => walk(expr, f),
        _ => {}
    }
}

/// Structural problems of a converted grammar.
fn structure(g: &Grammar) -> Vec<String> {
    let mut problems = Vec::new();
    let names: Vec<&str> = g.names().collect();
    let mut nodes = 0;
    for name in &names {
        let Some(body) = g.get(name) else { continue };
        walk(body, &mut |e| {
            nodes += 1;
            match e {
                Expr::Ref(r) if !names.contains(&r.as_str()) => problems.push(format!("{name} refers to undefined rule {r}")),
                // Multi-character literals would be single llguidance
                // tokens competing with character-level paths; only the
                // keywords may be.
                Expr::Lit(s) if s.chars().count() > 1 && !["true", "false", "null", "True", "False", "None"].contains(&s.as_str()) => {
                    problems.push(format!("{name} has the multi-character literal {s:?}"))
                }
                _ => {}
            }
        });
    }
    if nodes > MAX_NODES {
        problems.push(format!("{nodes} expression nodes (more than {MAX_NODES})"));
    }
    problems
}

/// Each case's Lark grammar run by the llguidance crate over its instances
/// (one token per byte): the cases that disagree, with the first instance.
fn crate_check(cases: &[serde_json::Value]) -> Vec<String> {
    use llguidance::{api::TopLevelGrammar, toktrie::ApproximateTokEnv, Matcher, ParserFactory};
    let env = ApproximateTokEnv::single_byte_env();
    let mut factory = ParserFactory::new_simple(&env).expect("llguidance parser factory");
    factory.quiet();
    let mut wrong = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let lark = case["lark"].as_str().unwrap_or("").to_string();
        let parser = match factory.create_parser(TopLevelGrammar::from_lark(lark)) {
            Ok(p) => p,
            Err(e) => {
                wrong.push(format!("{name}: does not compile: {e}"));
                continue;
            }
        };
        let texts = |key: &str| case[key].as_array().cloned().unwrap_or_default();
        let all = texts("accept").into_iter().map(|t| (t, true)).chain(texts("reject").into_iter().map(|t| (t, false)));
        for (text, want) in all {
            let text = text.as_str().unwrap_or("").to_string();
            let mut m = Matcher::new(Ok(parser.deep_clone()));
            let fed = text.bytes().all(|b| m.consume_token(u32::from(b)).is_ok());
            if (fed && m.is_accepting().unwrap_or(false)) != want {
                wrong.push(format!("{name}: {} {text:?}", if want { "rejected" } else { "accepted" }));
                break;
            }
        }
    }
    wrong
}

#[test]
fn schema_table() {
    let table = table();
    assert!(table.len() >= 70, "the table has {} entries", table.len());
    let mut failures = Vec::new();
    let mut cases = Vec::new();
    for entry in &table {
        let name = entry["name"].as_str().unwrap_or("?");
        let (valid, invalid) = (texts(entry, "valid"), texts(entry, "invalid"));
        if valid.is_empty() || invalid.is_empty() {
            failures.push(format!("{name}: needs valid and invalid instances"));
        }
        let text = serde_json::to_string(&entry["schema"]).unwrap_or_default();
        let schema = match Value::parse(&text) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: schema does not parse: {e}"));
                continue;
            }
        };
        // The value type writes the JSON it read.
        if serde_json::from_str::<serde_json::Value>(&schema.to_string()).ok().as_ref() != Some(&entry["schema"]) {
            failures.push(format!("{name}: Value does not round-trip: {schema}"));
        }
        let options = SchemaOptions { python: entry["python"] == json!(true), ..Default::default() };
        let mut g = Grammar::new();
        let mut warnings = Vec::new();
        let start = schema_rule(&mut g, "schema", &schema, &options, &mut warnings);
        g.define("root", start.clone());
        let want_warning = entry["warn"] == json!(true);
        if warnings.is_empty() == want_warning {
            failures.push(format!("{name}: warnings {warnings:?}, expected {}", if want_warning { "some" } else { "none" }));
        }
        failures.extend(structure(&g).into_iter().map(|p| format!("{name}: {p}")));
        // Converting again adds nothing (identical rules are reused), unless
        // a recursive $ref reserved a rule name.
        if !text.contains("$ref") {
            let rules = g.names().count();
            let again = schema_rule(&mut g, "schema", &schema, &options, &mut Vec::new());
            if again != start || g.names().count() != rules {
                failures.push(format!("{name}: converting twice added rules"));
            }
        }
        cases.push(json!({
            "template": format!("schema:{name}"),
            "name": name,
            "gbnf": g.to_gbnf(),
            "lark": g.to_lark(),
            "lazy": false,
            "triggers": [],
            "accept": valid,
            "reject": invalid,
        }));
    }
    assert!(failures.is_empty(), "{} problem(s):\n{}", failures.len(), failures.join("\n"));

    // The Lark form, run by the llguidance crate itself.
    let wrong = crate_check(&cases);
    figure(&format!("schemas (llguidance crate, Lark form): {}/{} accept all, reject all", cases.len() - wrong.len(), cases.len()));
    assert!(wrong.is_empty(), "{} schema(s) disagree with llguidance:\n{}", wrong.len(), wrong.join("\n"));

    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("schema_cases.json");
    let doc = serde_json::to_string_pretty(&json!({ "cases": cases })).unwrap_or_default();
    std::fs::write(&file, doc).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let run =
        Command::new("python3").arg("tests/grammar/check.py").arg(&file).args(["--label", "schemas"]).current_dir(workspace()).output();
    let out = match run {
        Ok(out) => out,
        Err(e) => {
            figure(&format!("schemas: SKIP (python3 not runnable: {e})"));
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => stdout.lines().for_each(figure),
        Some(EXIT_SKIP) => figure("schemas: SKIP (llguidance not installed)"),
        code => panic!("check.py exited with {code:?} on {} ({} entries)\n{stdout}{stderr}", file.display(), table.len()),
    }
}
