chat_parser_macros::chat_parser!("../../../../macros/tests/ui/no_such_template.jinja", module = missing);

fn main() {
    // The stub keeps this compiling: only the macro's error is reported.
    let _ = missing::GENERATION_PROMPT;
    let mut parser = missing::Parser::new(missing::Options::default());
    let mut sink = |_: chat_parser_runtime::Event<'_>| {};
    parser.feed(b"Hi", &mut sink);
    parser.finish(&mut sink);
}
