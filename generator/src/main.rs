//! The `chat-parser` command line.
//!
//! ```text
//! chat-parser analyze TEMPLATE.jinja [--format spec|reference]
//! ```

use std::process::ExitCode;

use chat_parser_generator::{analyze, jinja::ChatTemplate, reference::reference_view};

const USAGE: &str = "usage: chat-parser analyze TEMPLATE.jinja [--format spec|reference]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<String, String> {
    let Some((command, rest)) = args.split_first() else { return Err(USAGE.into()) };
    match command.as_str() {
        "analyze" => analyze_command(rest),
        "-h" | "--help" | "help" => Ok(USAGE.into()),
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    }
}

fn analyze_command(args: &[String]) -> Result<String, String> {
    let mut path = None;
    let mut format = "spec".to_string();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--format" => format = it.next().cloned().ok_or("--format needs a value (spec or reference)")?,
            flag if flag.starts_with("--format=") => format = flag["--format=".len()..].to_string(),
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`\n{USAGE}")),
            p if path.is_none() => path = Some(p.to_string()),
            extra => return Err(format!("unexpected argument `{extra}`\n{USAGE}")),
        }
    }
    let path = path.ok_or(USAGE)?;
    let source = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let template = ChatTemplate::new(&path, &source).map_err(|e| e.to_string())?;
    let analysis = analyze(&template).map_err(|e| e.to_string())?;
    let value = match format.as_str() {
        "spec" => serde_json::to_value(&analysis.spec).map_err(|e| e.to_string())?,
        "reference" => reference_view(&analysis.spec),
        other => return Err(format!("unknown format `{other}` (spec or reference)")),
    };
    serde_json::to_string_pretty(&value).map_err(|e| e.to_string())
}
