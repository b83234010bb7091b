//! Analyses the project's own templates (`templates/*.jinja`) at build time
//! with the generator's build API, and generates a parser for each, for
//! `src/lib.rs`.

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let builder = chat_parser_generator::build::Builder::new("templates");
    let result = builder.write_info_module(out.join("templates.rs")).and_then(|()| builder.write_parser_modules(out.join("parsers.rs")));
    if let Err(e) = result {
        // A build script reports template problems as a build failure with the message.
        eprintln!("{e}");
        std::process::exit(1);
    }
}
