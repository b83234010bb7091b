//! Locating the shared corpus (`../shared` beside the checkout, or
//! `$CHAT_PARSER_SHARED`).
#![allow(dead_code)]

pub mod vectors;

use std::path::PathBuf;

/// The shared corpus directory, or `None` (after printing a skip line).
pub fn shared_dir(test: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("CHAT_PARSER_SHARED") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    if dir.join("templates").is_dir() {
        Some(dir)
    } else {
        println!("{test}: skipped: corpus not found at {} (set CHAT_PARSER_SHARED)", dir.display());
        None
    }
}

/// `(name, path)` of every corpus template, sorted.
pub fn corpus_templates(shared: &std::path::Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(shared.join("templates"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jinja"))
        .map(|p| (p.file_stem().unwrap_or_default().to_string_lossy().into_owned(), p))
        .collect();
    out.sort();
    out
}
