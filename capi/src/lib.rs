//! The C interface of the parsers chat-parser generates: a `no_std` static
//! (and dynamic) library that never allocates, and its header
//! `chat_parser.h` (written by the generator from the same list of
//! templates; `include/chat_parser.h` is the copy for the project's own
//! templates).
//!
//! The caller owns all memory: `cp_parser_size` says how many bytes a
//! parser needs, `cp_parser_init` makes one there, `cp_feed` and
//! `cp_finish` report events to a callback, and freeing is the caller's
//! business (a parser holds nothing else). The declared tools are copied
//! into the parser's memory as a table of borrowed names, so the C arrays
//! may be freed after `cp_parser_init` but the name bytes may not.
//!
//! A build for other templates: `CHAT_PARSER_CAPI_TEMPLATES=dir1:dir2 cargo
//! build --release --manifest-path capi/Cargo.toml`, with
//! `CHAT_PARSER_CAPI_HEADER=path/chat_parser.h` to receive their header.
#![no_std]

use chat_parser_runtime::{ArgType, Event, Options, ReasoningFormat, Sink, Tool};
use core::ffi::{c_char, c_int, c_void};
use core::mem::{align_of, size_of};

/// The generated parser modules, `AnyParser`, `TEMPLATES` and `CONSTANTS`.
// The modules also carry what C does not get here (the parse envelope,
// stop strings, `AnyParser::visit`).
#[allow(dead_code)]
mod parsers {
    include!(concat!(env!("OUT_DIR"), "/capi.rs"));
}

/// A template's constants, as the generated tables list them.
pub struct Constants {
    pub file: &'static str,
    pub generation_prompt: &'static str,
    pub generation_prompt_no_thinking: &'static str,
    pub reasoning_start: &'static str,
    pub reasoning_end: &'static str,
    pub preserved_tokens: &'static [&'static str],
    pub grammar_triggers: &'static [&'static str],
    pub gbnf: &'static str,
    pub lark: &'static str,
}

/// `cp_str`: text owned by the library.
#[repr(C)]
pub struct CpStr {
    pub ptr: *const c_char,
    pub len: usize,
}

impl CpStr {
    fn of(s: &'static str) -> CpStr {
        CpStr { ptr: s.as_ptr().cast(), len: s.len() }
    }
}

/// `cp_arg`.
#[repr(C)]
pub struct CpArg {
    pub name: *const c_char,
    pub name_len: usize,
    pub ty: i32,
}

/// `cp_tool`.
#[repr(C)]
pub struct CpTool {
    pub name: *const c_char,
    pub name_len: usize,
    pub args: *const CpArg,
    pub n_args: usize,
}

/// `cp_options`.
#[repr(C)]
pub struct CpOptions {
    pub enable_thinking: bool,
    pub reasoning_format: i32,
    pub parallel_tool_calls: bool,
    pub structured_output: bool,
    pub tools: *const CpTool,
    pub n_tools: usize,
}

/// `cp_event`.
#[repr(C)]
pub struct CpEvent {
    pub kind: i32,
    pub text: *const c_char,
    pub len: usize,
    pub call_index: usize,
    pub complete: bool,
    pub tail: usize,
    pub from: usize,
}

/// `cp_event_fn` (NULL: events are dropped).
pub type CpEventFn = Option<unsafe extern "C" fn(*const CpEvent, *mut c_void)>;

const CP_OK: c_int = 0;
const CP_ERR_TEMPLATE: c_int = -1;
const CP_ERR_MEMORY: c_int = -2;
const CP_ERR_TOOLS: c_int = -3;
/// `CP_PARSER_ALIGN`.
const PARSER_ALIGN: usize = 16;

/// What a parser's memory starts with; the tool table follows it.
struct CParser {
    parser: parsers::AnyParser<'static>,
    /// The call that tool events belong to.
    call: usize,
}

/// An argument of the tool table.
type ArgEntry = (&'static str, ArgType);

// The memory's alignment covers everything stored in it.
const _: () = assert!(align_of::<CParser>() <= PARSER_ALIGN && align_of::<Tool<'static>>() <= PARSER_ALIGN && align_of::<ArgEntry>() <= PARSER_ALIGN);

/// Offsets of the tool table and its arguments in a parser's memory, and
/// the memory's size.
fn layout(n_tools: usize, n_args: usize) -> Option<(usize, usize, usize)> {
    let tools_at = size_of::<CParser>().next_multiple_of(align_of::<Tool<'static>>());
    let args_at = tools_at.checked_add(n_tools.checked_mul(size_of::<Tool<'static>>())?)?.next_multiple_of(align_of::<ArgEntry>());
    let end = args_at.checked_add(n_args.checked_mul(size_of::<ArgEntry>())?)?;
    Some((tools_at, args_at, end))
}

/// A C array as a slice (empty for NULL).
///
/// # Safety
/// `ptr` is NULL or points to `len` valid elements that outlive the slice.
unsafe fn c_slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    core::slice::from_raw_parts(ptr, len)
}

/// How many arguments the tools declare in all.
///
/// # Safety
/// Each tool's `args` is NULL or points to `n_args` arguments.
unsafe fn arg_count(tools: &[CpTool]) -> usize {
    tools.iter().fold(0usize, |n, t| n.saturating_add(c_slice(t.args, t.n_args).len()))
}

/// A C name as text, borrowed for as long as the caller keeps it.
///
/// # Safety
/// `ptr` is NULL or points to `len` readable bytes that outlive the parser.
unsafe fn c_name(ptr: *const c_char, len: usize) -> Option<&'static str> {
    if ptr.is_null() {
        return None;
    }
    core::str::from_utf8(core::slice::from_raw_parts(ptr.cast::<u8>(), len)).ok()
}

fn constants(template: i32) -> Option<&'static Constants> {
    usize::try_from(template).ok().and_then(|i| parsers::CONSTANTS.get(i))
}

fn default_options() -> CpOptions {
    let d = Options::default();
    CpOptions {
        enable_thinking: d.enable_thinking,
        reasoning_format: 1,
        parallel_tool_calls: d.parallel_tool_calls,
        structured_output: d.structured_output,
        tools: core::ptr::null(),
        n_tools: 0,
    }
}

/// `cp_options_default`.
///
/// # Safety
/// `out` is NULL or points to writable `cp_options`.
#[no_mangle]
pub unsafe extern "C" fn cp_options_default(out: *mut CpOptions) {
    if !out.is_null() {
        out.write(default_options());
    }
}

/// `cp_parser_size`.
///
/// # Safety
/// `options` is NULL or valid, with valid tool arrays.
#[no_mangle]
pub unsafe extern "C" fn cp_parser_size(template: i32, options: *const CpOptions) -> usize {
    if constants(template).is_none() {
        return 0;
    }
    let tools = if options.is_null() { &[] } else { c_slice((*options).tools, (*options).n_tools) };
    layout(tools.len(), arg_count(tools)).map_or(0, |(_, _, end)| end)
}

/// `cp_parser_init`.
///
/// # Safety
/// `mem` points to `cp_parser_size(template, options)` writable bytes;
/// `options` is NULL or valid, and the names it points to outlive the
/// parser.
#[no_mangle]
pub unsafe extern "C" fn cp_parser_init(mem: *mut c_void, template: i32, options: *const CpOptions) -> c_int {
    let Some(consts) = constants(template) else {
        return CP_ERR_TEMPLATE;
    };
    if mem.is_null() || mem as usize % PARSER_ALIGN != 0 {
        return CP_ERR_MEMORY;
    }
    let defaults = default_options();
    let options = if options.is_null() { &defaults } else { &*options };
    let c_tools = c_slice(options.tools, options.n_tools);
    let Some((tools_at, args_at, _)) = layout(c_tools.len(), arg_count(c_tools)) else {
        return CP_ERR_MEMORY;
    };
    let base = mem.cast::<u8>();
    let tools = base.add(tools_at).cast::<Tool<'static>>();
    let args = base.add(args_at).cast::<ArgEntry>();
    // The tool table: each tool's arguments, then the tool.
    let mut next_arg = 0;
    for (i, t) in c_tools.iter().enumerate() {
        let Some(name) = c_name(t.name, t.name_len) else {
            return CP_ERR_TOOLS;
        };
        let first = next_arg;
        for a in c_slice(t.args, t.n_args) {
            let Some(arg) = c_name(a.name, a.name_len) else {
                return CP_ERR_TOOLS;
            };
            let ty = match a.ty {
                0 => ArgType::String,
                1 => ArgType::Json,
                3 => ArgType::StringOrNull,
                _ => ArgType::Auto,
            };
            args.add(next_arg).write((arg, ty));
            next_arg += 1;
        }
        let declared: &'static [ArgEntry] = core::slice::from_raw_parts(args.add(first), next_arg - first);
        tools.add(i).write(Tool { name, args: declared });
    }
    let table: &'static [Tool<'static>] = core::slice::from_raw_parts(tools, c_tools.len());
    let reasoning_format = match options.reasoning_format {
        0 => ReasoningFormat::None,
        2 => ReasoningFormat::Deepseek,
        _ => ReasoningFormat::Auto,
    };
    let rust = Options {
        enable_thinking: options.enable_thinking,
        reasoning_format,
        parallel_tool_calls: options.parallel_tool_calls,
        tools: table,
        structured_output: options.structured_output,
        // C passes thinking as enable_thinking (the caller reads the
        // template's switch variables itself).
        chat_template_kwargs: &[],
    };
    let Some(parser) = parsers::AnyParser::new(consts.file, rust) else {
        return CP_ERR_TEMPLATE;
    };
    mem.cast::<CParser>().write(CParser { parser, call: 0 });
    CP_OK
}

/// Passes events to the C callback.
struct CSink<'a> {
    on_event: CpEventFn,
    user: *mut c_void,
    call: &'a mut usize,
}

impl Sink for CSink<'_> {
    fn event(&mut self, event: Event<'_>) {
        let (mut tail, mut from) = (0, 0);
        let (kind, text, complete) = match event {
            Event::Content(s) => (0, s, false),
            Event::Reasoning(s) => (1, s, false),
            Event::ToolCallStart { index } => {
                *self.call = index;
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
        if let Some(f) = self.on_event {
            let e = CpEvent { kind, text: text.as_ptr().cast(), len: text.len(), call_index: *self.call, complete, tail, from };
            // SAFETY: the caller gave a valid callback; the event lives
            // through the call.
            unsafe { f(&e, self.user) };
        }
    }
}

/// `cp_feed`.
///
/// # Safety
/// `parser` was made by `cp_parser_init` and not moved; `bytes` points to
/// `len` readable bytes (or `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cp_feed(parser: *mut c_void, bytes: *const u8, len: usize, on_event: CpEventFn, user: *mut c_void) {
    if parser.is_null() || (bytes.is_null() && len > 0) {
        return;
    }
    let p = &mut *parser.cast::<CParser>();
    let chunk = if len == 0 { &[][..] } else { core::slice::from_raw_parts(bytes, len) };
    p.parser.feed(chunk, &mut CSink { on_event, user, call: &mut p.call });
}

/// `cp_finish`.
///
/// # Safety
/// `parser` was made by `cp_parser_init` and not moved.
#[no_mangle]
pub unsafe extern "C" fn cp_finish(parser: *mut c_void, on_event: CpEventFn, user: *mut c_void) {
    if parser.is_null() {
        return;
    }
    let p = &mut *parser.cast::<CParser>();
    p.parser.finish(&mut CSink { on_event, user, call: &mut p.call });
}

/// `cp_template_count`.
#[no_mangle]
pub extern "C" fn cp_template_count() -> usize {
    parsers::CONSTANTS.len()
}

/// `cp_template_by_name`: the file name, with or without `.jinja`.
///
/// # Safety
/// `name` points to `len` readable bytes (or is NULL).
#[no_mangle]
pub unsafe extern "C" fn cp_template_by_name(name: *const c_char, len: usize) -> i32 {
    let Some(name) = c_name(name, len) else {
        return -1;
    };
    parsers::CONSTANTS
        .iter()
        .position(|c| c.file == name || c.file.strip_suffix(".jinja") == Some(name))
        .and_then(|i| i32::try_from(i).ok())
        .unwrap_or(-1)
}

/// A template's text by `pick`, empty for an unknown template.
fn text_of(template: i32, pick: impl Fn(&'static Constants) -> &'static str) -> CpStr {
    CpStr::of(constants(template).map_or("", pick))
}

/// `cp_template_name`.
#[no_mangle]
pub extern "C" fn cp_template_name(template: i32) -> CpStr {
    text_of(template, |c| c.file)
}

/// `cp_generation_prompt`.
#[no_mangle]
pub extern "C" fn cp_generation_prompt(template: i32, enable_thinking: bool) -> CpStr {
    text_of(template, |c| if enable_thinking { c.generation_prompt } else { c.generation_prompt_no_thinking })
}

/// `cp_reasoning_start`.
#[no_mangle]
pub extern "C" fn cp_reasoning_start(template: i32) -> CpStr {
    text_of(template, |c| c.reasoning_start)
}

/// `cp_reasoning_end`.
#[no_mangle]
pub extern "C" fn cp_reasoning_end(template: i32) -> CpStr {
    text_of(template, |c| c.reasoning_end)
}

/// `cp_preserved_token_count`.
#[no_mangle]
pub extern "C" fn cp_preserved_token_count(template: i32) -> usize {
    constants(template).map_or(0, |c| c.preserved_tokens.len())
}

/// `cp_preserved_token`.
#[no_mangle]
pub extern "C" fn cp_preserved_token(template: i32, index: usize) -> CpStr {
    text_of(template, |c| c.preserved_tokens.get(index).copied().unwrap_or(""))
}

/// `cp_grammar_trigger_count`.
#[no_mangle]
pub extern "C" fn cp_grammar_trigger_count(template: i32) -> usize {
    constants(template).map_or(0, |c| c.grammar_triggers.len())
}

/// `cp_grammar_trigger`.
#[no_mangle]
pub extern "C" fn cp_grammar_trigger(template: i32, index: usize) -> CpStr {
    text_of(template, |c| c.grammar_triggers.get(index).copied().unwrap_or(""))
}

/// `cp_grammar_gbnf`.
#[no_mangle]
pub extern "C" fn cp_grammar_gbnf(template: i32) -> CpStr {
    text_of(template, |c| c.gbnf)
}

/// `cp_grammar_lark`.
#[no_mangle]
pub extern "C" fn cp_grammar_lark(template: i32) -> CpStr {
    text_of(template, |c| c.lark)
}

extern "C" {
    /// The C library's `abort`: a panic (a bug; the parsers never panic on
    /// any input) ends the process instead of unwinding into C.
    fn abort() -> !;
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `abort` takes nothing and never returns.
    unsafe { abort() }
}
