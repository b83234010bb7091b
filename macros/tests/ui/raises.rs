chat_parser_macros::chat_parser!("../../../../macros/tests/ui/raises.jinja", module = raising);

fn main() {
    let _ = raising::SPEC_JSON;
}
