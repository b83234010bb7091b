//! Compile-time errors of `chat_parser!`: each names the template file (and
//! line) at the macro's path argument, and none cascades into further errors.
//!
//! trybuild compiles each case in `target/tests/trybuild/chat-parser-macros`,
//! so the cases reach this directory's templates with `../../../../macros/...`.
//! Update the expected output with `TRYBUILD=overwrite`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
