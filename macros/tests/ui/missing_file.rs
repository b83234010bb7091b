chat_parser_macros::chat_parser!("../../../../macros/tests/ui/no_such_template.jinja", module = missing);

fn main() {
    // The stub keeps this compiling: only the macro's error is reported.
    let _ = missing::GENERATION_PROMPT;
}
