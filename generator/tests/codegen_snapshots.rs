//! Snapshots of the parser modules generated for the project's own
//! templates, so that every change to code generation is reviewed as a diff
//! of what it writes (`cargo insta review`). `generated/*.rs` are the same
//! modules checked in where the root crate's tests compile and run them
//! (`tests/generated.rs` keeps those up to date).

use chat_parser_generator::{analyze, codegen, jinja::ChatTemplate};

#[test]
fn own_template_modules() {
    insta::glob!("../../templates", "*.jinja", |path| {
        let source = std::fs::read_to_string(path).expect("template readable");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let spec = analyze(&ChatTemplate::new(&name, &source).expect("compiles")).expect("analyses").spec;
        let module = codegen::module(&spec, &format!("chat-parser generate templates/{name}")).expect("generates");
        insta::assert_snapshot!(module);
    });
}
