//! `generated/` holds the checked-in, reviewable output for the project's own
//! templates; this test fails when it is stale.
//!
//! Regenerate with: `CHAT_PARSER_BLESS=1 cargo test --release --test generated`

use std::path::Path;

use chat_parser_generator::{analyze, jinja::ChatTemplate};

#[test]
fn generated_specs_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bless = std::env::var_os("CHAT_PARSER_BLESS").is_some();
    let templates = chat_parser_generator::build::Builder::new(root.join("templates")).cargo_directives(false).templates().expect("templates/");
    assert!(!templates.is_empty());
    let mut stale = Vec::new();
    for path in templates {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let file = format!("{stem}.jinja");
        let source = std::fs::read_to_string(&path).expect("readable");
        let spec = analyze(&ChatTemplate::new(&file, &source).expect("compiles")).expect("analyses").spec;
        let fresh = serde_json::to_string_pretty(&spec).expect("serializable") + "\n";
        let target = root.join("generated").join(format!("{stem}.spec.json"));
        if std::fs::read_to_string(&target).ok().as_deref() != Some(fresh.as_str()) {
            if bless {
                std::fs::write(&target, &fresh).expect("write generated/");
            } else {
                stale.push(target.display().to_string());
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files:\n{}\nregenerate with: CHAT_PARSER_BLESS=1 cargo test --release --test generated",
        stale.join("\n")
    );
}
