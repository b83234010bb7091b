//! Analyses the project's own templates (`templates/*.jinja`) at build time
//! with the generator's build API and exposes the results to `src/lib.rs`.

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if let Err(e) = chat_parser_generator::build::Builder::new("templates").write_info_module(out.join("templates.rs")) {
        // A build script reports template problems as a build failure with the message.
        eprintln!("{e}");
        std::process::exit(1);
    }
}
