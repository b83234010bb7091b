//! Time to analyse one template (compile + every probe render + diffs).
//!
//! Runs over the project's templates and, when present, the shared corpus
//! (`../shared/templates` or `$CHAT_PARSER_SHARED/templates`). Run with
//! `cargo bench -p chat-parser-bench --bench analysis`.

use std::path::PathBuf;

use chat_parser_generator::{analyze, jinja::ChatTemplate};

fn main() {
    divan::main();
}

fn template_paths() -> Vec<PathBuf> {
    // The repository root: this crate is `bench/`.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = std::env::var_os("CHAT_PARSER_SHARED").map(PathBuf::from).unwrap_or_else(|| root.join("../shared"));
    let mut paths = Vec::new();
    for dir in [root.join("templates"), shared.join("templates")] {
        if let Ok(rd) = std::fs::read_dir(&dir) {
            paths.extend(rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "jinja")));
        }
    }
    paths.sort();
    paths
}

fn names() -> Vec<String> {
    template_paths().iter().map(|p| p.file_stem().unwrap_or_default().to_string_lossy().into_owned()).collect()
}

#[divan::bench(args = names(), sample_count = 20, sample_size = 1)]
fn analyze_template(bencher: divan::Bencher, name: &str) {
    let path = template_paths().into_iter().find(|p| p.file_stem().is_some_and(|s| s == name)).expect("template exists");
    let source = std::fs::read_to_string(&path).expect("readable");
    bencher.bench(|| {
        let template = ChatTemplate::new(name, &source).expect("compiles");
        analyze(&template).map(|a| a.spec.template.len()).unwrap_or(0)
    });
}
