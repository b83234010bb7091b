chat_parser_macros::chat_parser!("../../../../macros/tests/ui/syntax_error.jinja", module = broken);

fn main() {
    let _ = broken::REASONING_END;
    let mut parser = broken::Parser::new(Default::default());
    parser.feed(b"<think>", &mut |_: chat_parser_runtime::Event<'_>| {});
}
