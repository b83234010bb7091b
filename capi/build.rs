//! Generates a parser for every template in the directories named by
//! `CHAT_PARSER_CAPI_TEMPLATES` (separated by `:`; default: the project's
//! `templates/`), the tables the C functions read, and the header
//! `chat_parser.h` (in `OUT_DIR`; also copied to `$CHAT_PARSER_CAPI_HEADER`
//! when set, for a C build to include).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=CHAT_PARSER_CAPI_TEMPLATES");
    println!("cargo:rerun-if-env-changed=CHAT_PARSER_CAPI_HEADER");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("..");
    let dirs: Vec<PathBuf> = match std::env::var("CHAT_PARSER_CAPI_TEMPLATES") {
        Ok(list) => list.split(':').filter(|s| !s.is_empty()).map(PathBuf::from).collect(),
        Err(_) => vec![root.join("templates")],
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let Some(builder) = chat_parser_generator::build::Builder::for_dirs(&dirs) else {
        eprintln!("CHAT_PARSER_CAPI_TEMPLATES names no directory");
        std::process::exit(1);
    };
    let header = out.join("chat_parser.h");
    if let Err(e) = builder.write_capi(out.join("capi.rs"), &header) {
        // Template problems are build failures, with the file and line.
        eprintln!("{e}");
        std::process::exit(1);
    }
    if let Some(copy) = std::env::var_os("CHAT_PARSER_CAPI_HEADER") {
        if let Err(e) = std::fs::copy(&header, &copy) {
            eprintln!("{}: {e}", PathBuf::from(copy).display());
            std::process::exit(1);
        }
    }
}
