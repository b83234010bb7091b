chat_parser_macros::chat_parser!("../../../../macros/tests/ui/raises.jinja", module = raising);

fn main() {
    let _ = (raising::SPEC_JSON, raising::HOLD_LIMIT, raising::GRAMMAR_TRIGGERS);
    let options = chat_parser_runtime::Options { enable_thinking: false, ..Default::default() };
    let mut parser: raising::Parser<'_> = raising::Parser::new(options);
    parser.finish(&mut |_: chat_parser_runtime::Event<'_>| {});
}
