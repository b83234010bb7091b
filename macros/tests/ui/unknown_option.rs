chat_parser_macros::chat_parser!("../../../../templates/think.jinja", module = think, flavour = spicy);

fn main() {
    let _ = think::REASONING_START;
}
