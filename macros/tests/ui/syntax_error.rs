chat_parser_macros::chat_parser!("../../../../macros/tests/ui/syntax_error.jinja", module = broken);

fn main() {
    let _ = broken::REASONING_END;
}
