//! Figure lines of long tests.

/// Prints a summary line, and appends it to the file `CHAT_PARSER_FIGURES`
/// names, when set: CI shows the figures of passing tests (whose output the
/// harness hides) without running this long test a second time.
pub fn figure(line: &str) {
    println!("{line}");
    if let Some(path) = std::env::var_os("CHAT_PARSER_FIGURES") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{line}");
        }
    }
}
