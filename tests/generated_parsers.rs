//! The parsers `build.rs` generates for `templates/` (through the build.rs
//! API) parse like the reference parser, whole and in any chunking.

#[path = "support/equivalence.rs"]
mod equivalence;
#[path = "support/own_outputs.rs"]
mod own_outputs;

use chat_parser::parsers::AnyParser;
use chat_parser_generator::ir::build::{ParseOptions, ReasoningFormat};
use equivalence::*;
use own_outputs::{tool, TEXTS};

fn spec(file: &str) -> chat_parser_generator::FormatSpec {
    let path = format!("{}/templates/{file}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap();
    chat_parser_generator::spec_from_source(file, &source).unwrap()
}

fn generated(file: &str, options: &ParseOptions, pieces: &[&[u8]]) -> Vec<Ev> {
    let tools = RuntimeTools::new(options);
    tools.with_options(options, |o| {
        let mut p = AnyParser::new(file, o).expect("parser for template");
        let mut ev = Events::default();
        for piece in pieces {
            p.feed(piece, &mut ev);
        }
        p.finish(&mut ev);
        ev.0
    })
}

#[test]
fn generated_parsers_match_the_reference_parser() {
    let mut checked = 0;
    for file in chat_parser::parsers::TEMPLATES {
        let spec = spec(file);
        for tools in [vec![], vec![tool()]] {
            for enable_thinking in [true, false] {
                for reasoning_format in [ReasoningFormat::Auto, ReasoningFormat::None] {
                    for parallel_tool_calls in [false, true] {
                        let options = ParseOptions { enable_thinking, reasoning_format, parallel_tool_calls, tools: tools.clone(), ..Default::default() };
                        for text in TEXTS {
                            let whole = reference(&spec, &options, &[text.as_bytes()]);
                            for sizes in [&[usize::MAX][..], &[1], &[4], &[3, 7, 1, 13]] {
                                let pieces = chunks(text.as_bytes(), sizes);
                                let got = generated(file, &options, &pieces);
                                assert_eq!(got, whole, "{file} {options:?} chunks {sizes:?}\ntext: {text:?}");
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    println!("generated parsers (own templates): {checked} parses equal to the reference parser");
}
