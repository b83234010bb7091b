//! Every corpus template renders every analysis scenario, except where the
//! template itself raises on purpose (listed with its own message).

#[path = "support/figures.rs"]
mod figures;
use figures::figure;
mod common;

use chat_parser_generator::{analyze, jinja::ChatTemplate, jinja::TemplateErrorKind};

/// Templates whose own bugs make some scenarios fail in Python's jinja2 as
/// well (checked against jinja2 3.1.6 configured as HF transformers does):
/// `(template, error text, why)`.
const FAILS_IN_PYTHON_TOO: &[(&str, &str, &str)] = &[
    (
        "MiroThinker",
        "can only assign to namespaces",
        "`{% set message.tool_calls = ... %}` on a dict: jinja2 raises 'Cannot assign attribute on non-namespace object'",
    ),
    ("MiroThinker", "undefined value", "macros read the caller's loop variable `tool`, which jinja2 macros cannot see"),
    (
        "MiroThinker-v1",
        "can only assign to namespaces",
        "`{% set tool.mt_visited = 1 %}` / `{% set message.tool_calls = ... %}` on dicts: jinja2 raises too",
    ),
];

#[test]
fn analysis_scenarios_render() {
    let Some(shared) = common::shared_dir("render scenarios") else { return };
    let mut unexpected = Vec::new();
    let mut raised = 0;
    let mut templates = 0;
    for (name, path) in common::corpus_templates(&shared) {
        templates += 1;
        let source = std::fs::read_to_string(&path).expect("template readable");
        let template = match ChatTemplate::new(&name, &source) {
            Ok(t) => t,
            Err(e) => {
                unexpected.push(format!("{name}: does not compile: {e}"));
                continue;
            }
        };
        let analysis = match analyze(&template) {
            Ok(a) => a,
            Err(e) => {
                unexpected.push(format!("{name}: {e}"));
                continue;
            }
        };
        let mut seen = std::collections::BTreeSet::new();
        // Capability probes (`caps: ...`) are expected to fail where a template
        // lacks the capability; every other scenario must render.
        for failure in analysis.render_failures.iter().filter(|f| !f.scenario.starts_with("caps:")) {
            if failure.error.kind == TemplateErrorKind::Raised {
                if seen.insert(failure.error.message.clone()) {
                    raised += 1;
                    println!("{name}: raises on purpose in `{}`: {}", failure.scenario, failure.error.message);
                }
            } else if let Some((_, _, why)) =
                FAILS_IN_PYTHON_TOO.iter().find(|(t, text, _)| *t == name && failure.error.message.contains(text))
            {
                println!("{name}: fails in Python jinja2 too in `{}`: {why}", failure.scenario);
            } else {
                unexpected.push(format!("{name}: `{}`: {}", failure.scenario, failure.error));
            }
        }
    }
    figure(&format!("render scenarios: {templates} templates, {raised} distinct raise_exception messages, {} unexpected failures", unexpected.len()));
    assert!(unexpected.is_empty(), "render failures that are not the template's own raise:\n{}", unexpected.join("\n"));
}
