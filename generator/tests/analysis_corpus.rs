//! The analysis agrees with the reference on every corpus template, except
//! where `docs/analysis-deviations.md` documents a deliberate difference.

#[path = "support/figures.rs"]
mod figures;
use figures::figure;
mod common;

use chat_parser_generator::{analyze, jinja::ChatTemplate, reference::reference_view};
use serde_json::Value;

/// Fields compared for templates the reference analyses generically.
const GENERIC_FIELDS: &[&str] = &[
    "reasoning.mode",
    "reasoning.start",
    "reasoning.end",
    "content.mode",
    "content.start",
    "content.end",
    "tools.format.mode",
    "tools.format.section_start",
    "tools.format.section_end",
    "tools.format.per_call_start",
    "tools.format.per_call_end",
    "tools.format.fun_name_is_key",
    "tools.format.tools_array_wrapped",
    "tools.format.function_field",
    "tools.format.name_field",
    "tools.format.args_field",
    "tools.format.id_field",
    "tools.format.gen_id_field",
    "tools.format.parameter_order",
    "tools.function.name_prefix",
    "tools.function.name_suffix",
    "tools.function.close",
    "tools.arguments.start",
    "tools.arguments.end",
    "tools.arguments.name_prefix",
    "tools.arguments.name_suffix",
    "tools.arguments.value_prefix",
    "tools.arguments.value_suffix",
    "tools.arguments.separator",
    "tools.call_id.pos",
    "tools.call_id.prefix",
    "tools.call_id.suffix",
];

fn field<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |v, k| v.get(k).unwrap_or(&Value::Null))
}

/// `(template, field)` pairs listed in the deviations document's table.
fn documented_deviations() -> Vec<(String, String)> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/analysis-deviations.md")).unwrap_or_default();
    doc.lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            Some((cells.get(1)?.trim_matches('`').to_string(), cells.get(2)?.trim_matches('`').to_string()))
        })
        .collect()
}

#[test]
fn analysis_agrees_with_reference() {
    let Some(shared) = common::shared_dir("analysis") else { return };
    let documented = documented_deviations();
    let mut agree = 0;
    let mut total = 0;
    let mut prompt_agree = 0;
    let mut prompt_total = 0;
    let mut undocumented = Vec::new();
    for (name, path) in common::corpus_templates(&shared) {
        let reference_path = shared.join("reference/analysis").join(format!("{name}.json"));
        let Ok(reference_text) = std::fs::read_to_string(&reference_path) else { continue };
        let reference: Value = serde_json::from_str(&reference_text).expect("reference analysis is JSON");
        let source = std::fs::read_to_string(&path).expect("template readable");
        let ours = match ChatTemplate::new(&name, &source).map_err(|e| e.to_string()).and_then(|t| analyze(&t).map_err(|e| e.to_string())) {
            Ok(a) => reference_view(&a.spec),
            Err(e) => {
                println!("{name}: analysis failed: {e}");
                undocumented.push(format!("{name}: analysis failed: {e}"));
                total += 1;
                continue;
            }
        };
        let mut diffs = Vec::new();
        let mut compare = |path: &str, ours_v: &Value, theirs: &Value| {
            if ours_v != theirs {
                diffs.push((path.to_string(), ours_v.clone(), theirs.clone()));
            }
        };
        compare("handler", &ours["handler"], &reference["handler"]);
        let generic = reference["handler"] == "autoparser";
        if generic {
            for f in GENERIC_FIELDS {
                compare(f, field(&ours["autoparser"], f), field(&reference["autoparser"], f));
            }
        }
        prompt_total += 1;
        let reference_prompt = &reference["request_with_tools"]["generation_prompt"];
        if &ours["generation_prompt"] == reference_prompt {
            prompt_agree += 1;
        } else {
            diffs.push(("generation_prompt".into(), ours["generation_prompt"].clone(), reference_prompt.clone()));
        }
        total += 1;
        if diffs.is_empty() {
            agree += 1;
            continue;
        }
        for (f, o, t) in &diffs {
            let is_documented = documented.iter().any(|(dt, df)| dt == &name && df == f);
            println!("{name}: {f}: ours {o} reference {t}{}", if is_documented { " (documented)" } else { "" });
            if !is_documented {
                undocumented.push(format!("{name}: {f}"));
            }
        }
    }
    figure(&format!("analysis: {agree}/{total} templates agree"));
    figure(&format!("generation prompts: {prompt_agree}/{prompt_total} agree"));
    assert!(undocumented.is_empty(), "undocumented disagreements:\n{}", undocumented.join("\n"));
}
