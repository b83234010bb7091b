//! Generates a parser for every template in the directories named by
//! `CHAT_PARSER_TEMPLATES` (separated by `:`; default: the project's
//! `templates/` and, when present, the corpus templates: `$CHAT_PARSER_SHARED/templates`,
//! else `../shared/templates` beside the checkout), with the special tokens
//! of `tests/data/special_tokens.json`. Templates that cannot be analysed
//! are left out with a warning.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=CHAT_PARSER_TEMPLATES");
    println!("cargo:rerun-if-env-changed=CHAT_PARSER_SHARED");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("..");
    let dirs: Vec<PathBuf> = match std::env::var("CHAT_PARSER_TEMPLATES") {
        Ok(list) => list.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect(),
        Err(_) => {
            // The corpus: $CHAT_PARSER_SHARED (as the tests read it), else ../shared.
            let shared = std::env::var_os("CHAT_PARSER_SHARED").map(PathBuf::from).unwrap_or_else(|| root.join("../shared"));
            [root.join("templates"), shared.join("templates")].into_iter().filter(|d| d.is_dir()).collect()
        }
    };
    // The library finds the templates' sources (for the reference parser) where the parsers came from.
    if let Ok(joined) = std::env::join_paths(&dirs) {
        println!("cargo:rustc-env=CHAT_PARSER_BENCH_TEMPLATE_DIRS={}", joined.to_string_lossy());
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let Some(builder) = chat_parser_generator::build::Builder::for_dirs(&dirs) else {
        eprintln!("CHAT_PARSER_TEMPLATES names no directory");
        std::process::exit(1);
    };
    // The corpus templates' tokenizer tokens (the Mistral family ends a turn
    // with `{{ eos_token }}`); the tests read the same file.
    let special = root.join("tests/data/special_tokens.json");
    println!("cargo:rustc-env=CHAT_PARSER_BENCH_SPECIAL_TOKENS={}", special.display());
    let builder = builder.skip_failures(true).special_tokens(special);
    if let Err(e) = builder.write_parser_modules(out.join("parsers.rs")) {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
