//! The C interface of generated parsers: the header `chat_parser.h` and the
//! tables the `chat-parser-capi` crate serves it from.
//!
//! Both are written from the same list of templates by
//! [`crate::build::Builder::write_capi`], so the header's template numbers
//! are the tables' indices. The functions the header declares are defined
//! by `capi/src/lib.rs`; a test compiles C programs against the header and
//! the static library, so a declaration that drifted from its definition
//! fails there.
//!
//! # Example
//! ```
//! let h = chat_parser_generator::capi::header(&["think.jinja".to_string()]);
//! assert!(h.contains("#define CP_TEMPLATE_THINK 0"));
//! assert!(h.contains("#define CP_TEMPLATE_COUNT 1"));
//! ```

use std::fmt::Write;

/// The header's declarations, before the template numbers.
const DECLARATIONS: &str = r#"#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Ownership, in one place:
 * - The library allocates nothing. A parser lives in memory the caller
 *   provides (cp_parser_size bytes, aligned to CP_PARSER_ALIGN) and frees;
 *   nothing needs to be released besides that memory.
 * - cp_str values returned by the library point into the library's
 *   read-only data: valid for the life of the program, never freed.
 * - The tools of cp_options (names and argument names) are borrowed, not
 *   copied: they must stay valid and unchanged while the parser is used.
 * - The text of a cp_event points into the bytes being fed or into the
 *   parser's own memory: valid only during the callback. Copy it to keep it.
 * - Text is UTF-8, given as pointer and length; it is not NUL-terminated.
 */

/* A template: its index in the library's list (CP_TEMPLATE_* below). */
typedef int32_t cp_template;
/* No such template (cp_template_by_name). */
#define CP_NO_TEMPLATE (-1)

/* Text owned by the library, valid for the life of the program. */
typedef struct cp_str {
    const char *ptr;
    size_t len;
} cp_str;

/* How reasoning is reported (cp_options.reasoning_format). */
typedef int32_t cp_reasoning_format;
/* Reasoning stays in the content, markers included. */
#define CP_REASONING_NONE 0
/* Reasoning is reported as CP_EVENT_REASONING (the default). */
#define CP_REASONING_AUTO 1
/* Same as CP_REASONING_AUTO (DeepSeek's name for it). */
#define CP_REASONING_DEEPSEEK 2

/* How a tool argument is typed by its JSON schema (cp_arg.type). */
typedef int32_t cp_arg_type;
/* Read raw: the value is a string. */
#define CP_ARG_STRING 0
/* Read as JSON (numbers, booleans, objects, arrays, null). */
#define CP_ARG_JSON 1
/* No schema type: JSON when the whole value is a short JSON text. */
#define CP_ARG_AUTO 2
/* A string, or null when the value is exactly `null` (["string", "null"]). */
#define CP_ARG_STRING_OR_NULL 3

/* One argument of a declared tool. */
typedef struct cp_arg {
    const char *name;
    size_t name_len;
    cp_arg_type type;
} cp_arg;

/* A declared tool: calls to other names are not calls. */
typedef struct cp_tool {
    const char *name;
    size_t name_len;
    const cp_arg *args;
    size_t n_args;
} cp_tool;

/* The request's options, as the parser's Rust Options. */
typedef struct cp_options {
    bool enable_thinking;
    cp_reasoning_format reasoning_format;
    bool parallel_tool_calls;
    /* The reply is one JSON value (response_format), reported as content. */
    bool structured_output;
    /* The declared tools; none: tool-call markup is content. */
    const cp_tool *tools;
    size_t n_tools;
} cp_options;

/* The defaults: thinking on, reasoning extracted, one call, no tools. */
void cp_options_default(cp_options *out);

/* What an event reports (cp_event.kind). */
typedef int32_t cp_event_kind;
/* Visible answer text. */
#define CP_EVENT_CONTENT 0
/* Reasoning ("thinking") text. */
#define CP_EVENT_REASONING 1
/* A tool call begins (call_index counts calls from 0). */
#define CP_EVENT_TOOL_CALL_START 2
/* The call's complete function name, before any argument text. */
#define CP_EVENT_TOOL_NAME 3
/* The call's id, when the format carries one. */
#define CP_EVENT_TOOL_ID 4
/* A piece of the arguments' JSON text: a call's pieces make one object. */
#define CP_EVENT_TOOL_ARGS 5
/* The call ended: complete when its closing markup matched, not when its
   markup broke before the end of the output. */
#define CP_EVENT_TOOL_CALL_END 6
/* The output ended inside the open call, which ends here incomplete. Its
   text (its markup from its start) is the last `tail` bytes of the output:
   a call the output cut off is not a call, so return that text as content.
   Later events are that text read again. */
#define CP_EVENT_TOOL_CALL_CUT 7
/* The call that just ended incomplete (CP_EVENT_TOOL_CALL_END, not
   complete) broke before the end of the output: its text is the `tail`
   bytes of the output from byte `from`. Its arguments are not JSON: return
   that text as content in its place. Later events are the output read again
   from `from + tail`. */
#define CP_EVENT_TOOL_CALL_BROKEN 8

/* One event. text/len: the piece of text (empty for start and end). */
typedef struct cp_event {
    cp_event_kind kind;
    const char *text;
    size_t len;
    /* The call the event belongs to (tool events only). */
    size_t call_index;
    /* CP_EVENT_TOOL_CALL_END: the call's markup was complete. */
    bool complete;
    /* CP_EVENT_TOOL_CALL_CUT and _BROKEN: the length of the call's text. */
    size_t tail;
    /* CP_EVENT_TOOL_CALL_BROKEN: where the call's text starts in the output. */
    size_t from;
} cp_event;

/* Receives each event, with the pointer given to cp_feed or cp_finish. */
typedef void (*cp_event_fn)(const cp_event *event, void *user);

/* The alignment a parser's memory needs. */
#define CP_PARSER_ALIGN 16

/* cp_parser_init's results. */
#define CP_OK 0
/* The template number is not one of CP_TEMPLATE_*. */
#define CP_ERR_TEMPLATE (-1)
/* The memory is NULL or not aligned to CP_PARSER_ALIGN. */
#define CP_ERR_MEMORY (-2)
/* A tool or argument name is NULL or not UTF-8. */
#define CP_ERR_TOOLS (-3)

/* Bytes of memory a parser of `template` needs for these options (NULL:
 * the defaults); 0 for an unknown template. The tools count: their table
 * is kept in the same memory. */
size_t cp_parser_size(cp_template template_, const cp_options *options);

/* Makes a parser in `mem` (cp_parser_size bytes, CP_PARSER_ALIGN-aligned).
 * Returns CP_OK or a CP_ERR_* code (then `mem` holds no parser). */
int cp_parser_init(void *mem, cp_template template_, const cp_options *options);

/* Parses the next `len` bytes of the model's output (any split: a chunk may
 * end inside a marker or a character); reports events as they are known. */
void cp_feed(void *parser, const uint8_t *bytes, size_t len, cp_event_fn on_event, void *user);

/* The output ended: reports what was held back. Feed nothing after it. */
void cp_finish(void *parser, cp_event_fn on_event, void *user);

/* The templates: how many, by name (the file name, with or without
 * ".jinja"), and each one's name. */
size_t cp_template_count(void);
cp_template cp_template_by_name(const char *name, size_t len);
cp_str cp_template_name(cp_template template_);

/* What the template appends for the assistant's turn, with thinking on or
 * off; the model's output continues after it. */
cp_str cp_generation_prompt(cp_template template_, bool enable_thinking);
/* The reasoning markers (empty when the template has none). */
cp_str cp_reasoning_start(cp_template template_);
cp_str cp_reasoning_end(cp_template template_);
/* Tokens a tokenizer must keep whole, by index below the count. */
size_t cp_preserved_token_count(cp_template template_);
cp_str cp_preserved_token(cp_template template_, size_t index);
/* Texts that start a lazy grammar, by index below the count. */
size_t cp_grammar_trigger_count(cp_template template_);
cp_str cp_grammar_trigger(cp_template template_, size_t index);
/* The static grammars of the template's tool calls (empty without tools). */
cp_str cp_grammar_gbnf(cp_template template_);
cp_str cp_grammar_lark(cp_template template_);
"#;

/// The header `chat_parser.h` for parsers of `files` (template file names,
/// in the library's order).
pub fn header(files: &[String]) -> String {
    let mut h = String::new();
    h.push_str("/*\n * chat_parser.h: the C interface of the parsers chat-parser generated.\n");
    h.push_str(" *\n * @generated by chat-parser-generator (capi::header) from the templates the\n");
    h.push_str(" * library was built for. Do not edit: a test fails when it is stale\n");
    h.push_str(" * (CHAT_PARSER_BLESS=1 rewrites it).\n */\n");
    h.push_str("#ifndef CHAT_PARSER_H\n#define CHAT_PARSER_H\n\n");
    h.push_str(DECLARATIONS);
    h.push_str("\n/* The templates this library was built for. */\n");
    for (i, f) in files.iter().enumerate() {
        let _ = writeln!(h, "#define CP_TEMPLATE_{} {i} /* {f} */", crate::build::const_name(f));
    }
    let _ = writeln!(h, "#define CP_TEMPLATE_COUNT {}", files.len());
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* CHAT_PARSER_H */\n");
    h
}

/// Rust code for the C interface's tables, appended to the parser modules:
/// `CONSTANTS`, each template's constants in `TEMPLATES` order, as
/// `crate::Constants` (defined by the crate that includes them).
pub fn tables(mods: &[(String, String)]) -> String {
    let mut code = String::from("/// Each template's constants, in `TEMPLATES` order.\npub static CONSTANTS: &[crate::Constants] = &[\n");
    for (file, m) in mods {
        let _ = writeln!(
            code,
            "    crate::Constants {{ file: {file:?}, generation_prompt: {m}::GENERATION_PROMPT, generation_prompt_no_thinking: {m}::GENERATION_PROMPT_NO_THINKING, \
             reasoning_start: {m}::REASONING_START, reasoning_end: {m}::REASONING_END, preserved_tokens: {m}::PRESERVED_TOKENS, \
             grammar_triggers: {m}::GRAMMAR_TRIGGERS, gbnf: {m}::GBNF, lark: {m}::LARK }},"
        );
    }
    code.push_str("];\n");
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_numbers_templates_in_order() {
        let h = header(&["a-b.jinja".to_string(), "xml_args.jinja".to_string()]);
        assert!(h.contains("#define CP_TEMPLATE_A_B 0 /* a-b.jinja */"));
        assert!(h.contains("#define CP_TEMPLATE_XML_ARGS 1 /* xml_args.jinja */"));
        assert!(h.contains("#define CP_TEMPLATE_COUNT 2"));
        assert!(h.starts_with("/*") && h.ends_with("#endif /* CHAT_PARSER_H */\n"));
    }

    #[test]
    fn tables_name_each_module() {
        let t = tables(&[("think.jinja".to_string(), "think".to_string())]);
        assert!(t.contains("file: \"think.jinja\""));
        assert!(t.contains("gbnf: think::GBNF"));
    }
}
