//! Snapshots of the format spec of each of the project's own templates
//! (`templates/`, one per format family).

use chat_parser_generator::{analyze, jinja::ChatTemplate};

#[test]
fn own_template_specs() {
    insta::glob!("../../templates", "*.jinja", |path| {
        let source = std::fs::read_to_string(path).expect("template readable");
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let template = ChatTemplate::new(&name, &source).expect("own templates compile");
        let spec = analyze(&template).expect("own templates analyse").spec;
        insta::assert_json_snapshot!(spec);
    });
}
