//! Prints what the build script learned about each bundled template.
//!
//! ```sh
//! cargo run --example formats
//! ```

fn main() {
    for t in chat_parser::templates::ALL {
        println!("{}", t.file);
        println!("  handler:           {}", t.handler);
        println!("  generation prompt: {:?}", t.generation_prompt);
        if !t.reasoning_end.is_empty() {
            println!("  reasoning:         {:?} .. {:?}", t.reasoning_start, t.reasoning_end);
        }
        println!("  preserved tokens:  {:?}", t.preserved_tokens);
    }
}
