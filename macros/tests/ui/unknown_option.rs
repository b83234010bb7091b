chat_parser_macros::chat_parser!("../../../../templates/think.jinja", module = think, flavour = spicy);

fn main() {
    // The template is fine: the real module is emitted next to the option's error.
    let _ = think::REASONING_START;
    let mut parser = think::Parser::new(Default::default());
    parser.feed(b"<think>", &mut |_: chat_parser_runtime::Event<'_>| {});
}
