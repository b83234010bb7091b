//! The benchmark outputs (`chat_parser_bench::shapes`) parse into the
//! messages they were written for, with the generated parsers (whole, and in
//! chunks of 1 to 7 bytes) and with the reference parser: a benchmark
//! whose input silently became plain content would measure nothing.

use chat_parser_bench::parsers::TEMPLATES;
use chat_parser_bench::{shapes, template_path};
use chat_parser_generator::interp::StreamParser;
use chat_parser_generator::ir::build::{build, tool_signatures};
use chat_parser_runtime::MessageBuilder;

fn corpus_present() -> bool {
    let present = shapes::FAMILIES.iter().all(|f| TEMPLATES.contains(&f.file) && template_path(f.file).is_some());
    if !present {
        println!("shapes: skipped: corpus templates not found ($CHAT_PARSER_SHARED/templates or ../shared/templates)");
    }
    present
}

#[test]
fn sizes_are_about_16_kib() {
    for case in shapes::cases() {
        let n = case.text.len();
        println!("{}: {n} bytes", case.name);
        assert!((16 * 1024..18 * 1024).contains(&n), "{}: {n} bytes", case.name);
    }
}

#[test]
fn generated_parsers_read_the_intended_messages() {
    if !corpus_present() {
        return;
    }
    for case in shapes::cases() {
        // Odd sizes too: they cut markup (and the `<` of code against
        // `<|"|>`) at every offset.
        for chunk in [usize::MAX, 4, 1, 2, 3, 5, 7] {
            case.check_generated(chunk).unwrap();
        }
    }
}

#[test]
fn reference_parser_reads_the_intended_messages() {
    if !corpus_present() {
        return;
    }
    let options = shapes::parse_options();
    for case in shapes::cases() {
        let spec = chat_parser_bench::spec(case.family.file).unwrap();
        let grammar = build(&spec, &options);
        for chunk in [usize::MAX, 4] {
            let mut parser = StreamParser::new(&grammar)
                .with_tools(tool_signatures(&options))
                .with_hold_limit(chat_parser_generator::codegen::hold_limit(&spec)).with_pack(chat_parser_generator::codegen::pack_table(&spec));
            let mut message = MessageBuilder::new();
            for piece in case.text.as_bytes().chunks(chunk) {
                parser.feed(piece, &mut message);
            }
            parser.finish(&mut message);
            if let Err(e) = case.expected.check(&message.into_message()) {
                panic!("{} (reference parser, {chunk}-byte chunks): {e}", case.name);
            }
        }
    }
}
