//! `generated/` holds the checked-in, reviewable output for the project's own
//! templates: the format spec (`<name>.spec.json`) and the parser module
//! (`<name>.rs`, what `chat-parser generate templates/<name>.jinja` prints).
//! These tests fail when a file is stale (`tests/generated_checked_in.rs`
//! compiles and runs the checked-in modules: kept apart so that this test
//! still builds, and can regenerate them, when they are missing or no longer
//! compile).
//!
//! Regenerate with: `CHAT_PARSER_BLESS=1 cargo test --release --test generated`

use std::path::Path;

use chat_parser_generator::{analyze, jinja::ChatTemplate};

const BLESS: &str = "CHAT_PARSER_BLESS=1 cargo test --release --test generated";

/// Compares `fresh` with `target`, rewriting it when blessing; a stale file is
/// added to `stale`.
fn check(target: &Path, fresh: &str, stale: &mut Vec<String>) {
    if std::fs::read_to_string(target).ok().as_deref() != Some(fresh) {
        if std::env::var_os("CHAT_PARSER_BLESS").is_some() {
            std::fs::write(target, fresh).expect("write generated/");
        } else {
            stale.push(target.display().to_string());
        }
    }
}

fn templates() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let templates = chat_parser_generator::build::Builder::new(root.join("templates")).cargo_directives(false).templates().expect("templates/");
    assert!(!templates.is_empty());
    templates
}

#[test]
fn generated_specs_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for path in templates() {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let file = format!("{stem}.jinja");
        let source = std::fs::read_to_string(&path).expect("readable");
        let spec = analyze(&ChatTemplate::new(&file, &source).expect("compiles")).expect("analyses").spec;
        let fresh = serde_json::to_string_pretty(&spec).expect("serializable") + "\n";
        check(&root.join("generated").join(format!("{stem}.spec.json")), &fresh, &mut stale);
    }
    assert!(stale.is_empty(), "stale generated files:\n{}\nregenerate with: {BLESS}", stale.join("\n"));
}

/// Each `generated/<module>.rs` is what `chat-parser generate templates/<file>`
/// prints when run from the repository root (its header names that command;
/// the CLI's own test checks that it prints the same).
#[test]
fn generated_parser_modules_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stale = Vec::new();
    for path in templates() {
        let file = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let given = format!("templates/{file}");
        let source = std::fs::read_to_string(&path).expect("readable");
        let spec = chat_parser_generator::spec_from_source(&given, &source).expect("analyses");
        let fresh = chat_parser_generator::codegen::module(&spec, &format!("chat-parser generate {given}")).expect("generates");
        let name = chat_parser_generator::build::module_name(&file);
        check(&root.join("generated").join(format!("{name}.rs")), &fresh, &mut stale);
    }
    assert!(
        stale.is_empty(),
        "stale generated parser modules:\n{}\nregenerate with: {BLESS}\n(or one at a time from the repository root: cargo run --release --bin chat-parser -- generate templates/NAME.jinja --out generated/NAME.rs)",
        stale.join("\n")
    );
}
