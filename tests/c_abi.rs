//! The C interface (`capi/`): the static library is built as C users build
//! it, C programs are compiled against it with the `cc` crate, and what
//! they print must equal what the Rust parsers report.
//!
//! - Events: every output of `support/own_outputs.rs` in every option
//!   combination, and the round-trip texts of the project's templates, fed
//!   from C in 1-byte and in random chunks (the same chunks on both sides),
//!   compared as text lines; again with AddressSanitizer and
//!   UndefinedBehaviorSanitizer, where any report fails the run.
//! - The library is `no_std` and never allocates: its undefined symbols
//!   (`nm -u`, less what the archive defines itself) are a few C library
//!   and compiler-runtime functions, none of them an allocator or Rust's
//!   `std`.
//! - `capi/include/chat_parser.h` is what the generator writes for
//!   `templates/` (`CHAT_PARSER_BLESS=1` rewrites it).
//! - The C example builds with the README's command and runs.
//!
//! Without a C compiler or `nm`, the test prints a SKIP line.

#[path = "support/equivalence.rs"]
mod equivalence;
#[path = "../generator/tests/support/figures.rs"]
mod figures;
#[path = "support/own_outputs.rs"]
mod own_outputs;
#[path = "../generator/tests/support/roundtrip_texts.rs"]
mod roundtrip_texts;

use chat_parser::parsers::{AnyParser, TEMPLATES};
use chat_parser_generator::ir::build::{tool_signatures, ParseOptions, ReasoningFormat};
use chat_parser_runtime::{ArgType, Event, Sink};
use equivalence::RuntimeTools;
use figures::figure;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One output to replay, and how to cut it.
struct Case {
    file: String,
    options: ParseOptions,
    text: Vec<u8>,
    /// 0: 1-byte chunks; else the seed of random chunk sizes.
    seed: u64,
    max: usize,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut both = |out: &mut Vec<Case>, file: &str, options: &ParseOptions, text: &[u8]| {
        seed = seed.wrapping_add(0x9E37_79B9);
        for (seed, max) in [(0, 1), (seed, 1 + (seed % 23) as usize)] {
            out.push(Case { file: file.to_string(), options: options.clone(), text: text.to_vec(), seed, max });
        }
    };
    for file in TEMPLATES {
        for tools in [vec![], vec![own_outputs::tool()]] {
            for enable_thinking in [true, false] {
                for reasoning_format in [ReasoningFormat::Auto, ReasoningFormat::None] {
                    for parallel_tool_calls in [false, true] {
                        let options = ParseOptions { enable_thinking, reasoning_format, parallel_tool_calls, tools: tools.clone(), ..Default::default() };
                        for text in own_outputs::TEXTS {
                            both(&mut out, file, &options, text.as_bytes());
                        }
                    }
                }
            }
        }
        let path = root().join("templates").join(file);
        let source = std::fs::read_to_string(&path).expect("template");
        let template = chat_parser_generator::jinja::ChatTemplate::new(file, &source).expect("template parses");
        let spec = chat_parser_generator::spec_from_source(file, &source).expect("analysis");
        if !spec.capabilities.supports_tool_calls {
            continue;
        }
        let mut rng = roundtrip_texts::Rng(0xC0FFEE ^ (file.len() as u64) << 7);
        for case in 0..roundtrip_texts::CASES {
            let g = roundtrip_texts::generate(&mut rng, &spec, case);
            let Ok(text) = roundtrip_texts::assistant_text(&template, &spec, &g) else { continue };
            let options = ParseOptions { tools: g.tools.clone(), parallel_tool_calls: true, ..ParseOptions::default() };
            both(&mut out, file, &options, text.as_bytes());
        }
    }
    out
}

/// The chunk sizes of a case (the driver's `next_random`).
fn chunk_sizes(c: &Case) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut state = c.seed;
    let mut at = 0;
    while at < c.text.len() {
        let n = if c.seed == 0 {
            1
        } else {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            1 + (state.wrapping_mul(0x2545F4914F6CDD1D) % c.max as u64) as usize
        };
        let n = n.min(c.text.len() - at);
        sizes.push(n);
        at += n;
    }
    sizes
}

/// The cases in the driver's input format.
fn driver_input(cases: &[Case]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cases {
        let format = match c.options.reasoning_format {
            ReasoningFormat::None => 0,
            ReasoningFormat::Auto => 1,
            ReasoningFormat::Deepseek => 2,
        };
        let o = &c.options;
        out.extend(format!("case {}\nopts {} {format} {} {}\n", c.file, u8::from(o.enable_thinking), u8::from(o.parallel_tool_calls), u8::from(o.json_schema.is_some())).bytes());
        let sigs = tool_signatures(o);
        out.extend(format!("tools {}\n", sigs.len()).bytes());
        for s in &sigs {
            out.extend(format!("tool {} {}\n{}\n", s.args.len(), s.name.len(), s.name).bytes());
            for (name, ty) in &s.args {
                let ty = match ty {
                    ArgType::String => 0,
                    ArgType::Json => 1,
                    ArgType::Auto => 2,
                    ArgType::StringOrNull => 3,
                };
                out.extend(format!("arg {ty} {}\n{name}\n", name.len()).bytes());
            }
        }
        out.extend(format!("chunks {} {}\ntext {}\n", c.seed, c.max, c.text.len()).bytes());
        out.extend(&c.text);
        out.push(b'\n');
    }
    out
}

/// Events as the driver prints them.
struct Lines {
    out: String,
    call: usize,
}

impl Sink for Lines {
    fn event(&mut self, e: Event<'_>) {
        let (mut tail, mut from) = (0, 0);
        let (kind, text, complete) = match e {
            Event::Content(s) => (0, s, false),
            Event::Reasoning(s) => (1, s, false),
            Event::ToolCallStart { index } => {
                self.call = index;
                (2, "", false)
            }
            Event::ToolName(s) => (3, s, false),
            Event::ToolId(s) => (4, s, false),
            Event::ToolArgs(s) => (5, s, false),
            Event::ToolCallEnd { complete } => (6, "", complete),
            Event::ToolCallCut { tail: n } => {
                tail = n;
                (7, "", false)
            }
            Event::ToolCallBroken { from: at, len } => {
                (from, tail) = (at, len);
                (8, "", false)
            }
        };
        let _ = write!(self.out, "{kind} {} {} {tail} {from} ", self.call, u8::from(complete));
        for &b in text.as_bytes() {
            if (0x20..0x7f).contains(&b) && b != b'\\' {
                self.out.push(b as char);
            } else {
                let _ = write!(self.out, "\\x{b:02x}");
            }
        }
        self.out.push('\n');
    }
}

/// What the Rust parsers report for the cases, in the driver's lines.
fn expected(cases: &[Case]) -> String {
    let mut lines = Lines { out: String::new(), call: 0 };
    for (i, c) in cases.iter().enumerate() {
        let _ = writeln!(lines.out, "case {i}");
        lines.call = 0;
        let tools = RuntimeTools::new(&c.options);
        tools.with_options(&c.options, |o| {
            let mut p = AnyParser::new(&c.file, o).expect("parser for template");
            let mut at = 0;
            for n in chunk_sizes(c) {
                p.feed(&c.text[at..at + n], &mut lines);
                at += n;
            }
            p.finish(&mut lines);
        });
        lines.out.push_str("end\n");
    }
    lines.out
}

/// Builds the static library as a C user would (its own workspace, which
/// aborts on panic), in `target/capi`.
fn build_library() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = root().join("target").join("capi");
    let status = Command::new(cargo)
        .args(["build", "--release", "--manifest-path"])
        .arg(root().join("capi/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("CHAT_PARSER_CAPI_TEMPLATES")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building capi/ failed");
    target_dir.join("release").join("libchat_parser_capi.a")
}

/// The host's target triple (for `cc`).
fn host_triple() -> String {
    let out = Command::new("rustc").arg("-vV").output().expect("rustc -vV");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().find_map(|l| l.strip_prefix("host: ")).expect("host line").trim().to_string()
}

/// Compiles C `sources` with the library into `exe`, with `flags`.
fn compile(sources: &[PathBuf], library: &Path, exe: &Path, flags: &[&str]) -> Result<(), String> {
    let triple = host_triple();
    let compiler = cc::Build::new()
        .target(&triple)
        .host(&triple)
        .opt_level(1)
        .cargo_metadata(false)
        .try_get_compiler()
        .map_err(|e| e.to_string())?;
    let mut cmd = compiler.to_command();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"]).args(flags).arg("-I").arg(root().join("capi/include"));
    cmd.args(sources).arg(library).arg("-o").arg(exe);
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?}:\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

/// Runs `exe` with `args`; its standard output.
fn run(exe: &Path, args: &[&Path]) -> String {
    let out = Command::new(exe).args(args).env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0").env("UBSAN_OPTIONS", "print_stacktrace=1").output().expect("driver runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.trim().is_empty(), "{} failed ({}):\n{stderr}", exe.display(), out.status);
    String::from_utf8(out.stdout).expect("driver prints UTF-8")
}

/// The archive's undefined symbols: referenced by a member and defined by
/// none.
fn undefined_symbols(library: &Path) -> Option<Vec<String>> {
    let symbols = |args: &[&str]| -> Option<std::collections::BTreeSet<String>> {
        let out = Command::new("nm").args(args).arg(library).output().ok()?;
        out.status.success().then(|| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| {
                    let parts: Vec<&str> = l.split_whitespace().collect();
                    match parts.as_slice() {
                        ["U", name] => Some(name.to_string()),
                        [_, kind, name] if *kind != "U" && args.contains(&"--defined-only") => Some(name.to_string()),
                        _ => None,
                    }
                })
                .collect()
        })
    };
    let undefined = symbols(&["-u"])?;
    let defined = symbols(&["--defined-only"])?;
    Some(undefined.difference(&defined).cloned().collect())
}

/// Whether the library may need `symbol` from the system: the C library's
/// memory and byte functions, `abort` (the panic handler), and the compiler
/// runtime's integer helpers (`__udivti3`). Not an allocator, not `std`.
fn allowed(symbol: &str) -> bool {
    matches!(symbol, "memcpy" | "memmove" | "memset" | "memcmp" | "bcmp" | "strlen" | "abort")
        || (symbol.starts_with("__") && (symbol.ends_with("ti3") || symbol.ends_with("di3")))
}

#[test]
fn c_programs_match_the_rust_parsers() {
    // The header first: the C programs include the checked-in copy.
    let header = chat_parser_generator::capi::header(&TEMPLATES.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let checked_in = root().join("capi/include/chat_parser.h");
    if std::env::var_os("CHAT_PARSER_BLESS").is_some() {
        std::fs::write(&checked_in, &header).expect("write the header");
    }
    let old = std::fs::read_to_string(&checked_in).unwrap_or_default();
    assert!(old == header, "capi/include/chat_parser.h is stale: rewrite it with CHAT_PARSER_BLESS=1 cargo test --release --test c_abi");

    if Command::new("nm").arg("--version").output().is_err() {
        println!("SKIP c abi: no `nm` on this machine");
        return;
    }
    let library = build_library();

    let undefined = undefined_symbols(&library).expect("nm reads the library");
    let bad: Vec<&String> = undefined.iter().filter(|s| !allowed(s)).collect();
    assert!(bad.is_empty(), "the static library needs symbols beyond the C library's basics (an allocator? std?): {bad:?}");
    figure(&format!("c abi: undefined symbols of the static library: {}", undefined.join(", ")));

    let work = root().join("target/capi/c-tests");
    std::fs::create_dir_all(&work).expect("work dir");
    let cases = cases();
    let input = work.join("cases.txt");
    std::fs::write(&input, driver_input(&cases)).expect("write the cases");
    let want = expected(&cases);
    let driver = root().join("tests/c/driver.c");
    for (label, flags) in [("plain", &[][..]), ("asan+ubsan", &["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"][..])] {
        let exe = work.join(format!("driver-{}", label.replace('+', "-")));
        if let Err(e) = compile(std::slice::from_ref(&driver), &library, &exe, flags) {
            if label == "plain" {
                println!("SKIP c abi: no C compiler: {e}");
                return;
            }
            panic!("{e}");
        }
        let got = run(&exe, &[&input]);
        if got != want {
            let (g, w): (Vec<&str>, Vec<&str>) = (got.lines().collect(), want.lines().collect());
            let at = g.iter().zip(&w).position(|(a, b)| a != b).unwrap_or(g.len().min(w.len()));
            let case = w[..at].iter().rev().find(|l| l.starts_with("case ")).copied().unwrap_or("case ?");
            panic!("{label}: C and Rust differ at line {at} ({case}):\n  C:    {:?}\n  Rust: {:?}", g.get(at), w.get(at));
        }
        let events = want.lines().filter(|l| !l.starts_with("case ") && *l != "end").count();
        figure(&format!("c abi ({label}): {} cases over {} templates, 1-byte and random chunks: {events} events equal to Rust's", cases.len(), TEMPLATES.len()));
    }

    // The example, built as README.md says.
    let exe = work.join("stream");
    compile(&[root().join("examples/c/stream.c")], &library, &exe, &[]).expect("the C example builds");
    let out = run(&exe, &[]);
    assert!(out.contains("tool call 0: get_weather") && out.contains("content:"), "the C example printed:\n{out}");
    figure("c abi: examples/c/stream.c builds and runs");
}
