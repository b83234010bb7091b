/*
 * Replays model outputs through the C interface and prints every event as
 * a text line (tests/c_abi.rs writes the cases and compares the lines with
 * the Rust parsers' events).
 *
 * Input (binary-safe: texts and names are length-prefixed):
 *   case <template name>\n
 *   opts <enable_thinking> <reasoning_format> <parallel_tool_calls> <structured_output>\n
 *   tools <n>\n      then per tool: tool <n_args> <name_len>\n<name>\n
 *                    then per argument: arg <type> <name_len>\n<name>\n
 *   chunks <seed> <max>\n   (seed 0: 1-byte chunks; else xorshift64* sizes 1..max)
 *   text <len>\n<bytes>\n
 * Output per case: "case <i>\n", one line per event, "end\n".
 */
#include "chat_parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what) {
    fprintf(stderr, "driver: %s\n", what);
    exit(2);
}

/* Reads `len` bytes and the newline after them into a new buffer. */
static char *read_blob(FILE *in, size_t len) {
    char *buf = malloc(len + 1);
    if (!buf) die("out of memory");
    if (fread(buf, 1, len, in) != len || fgetc(in) != '\n') die("short blob");
    buf[len] = 0;
    return buf;
}

static void print_escaped(const char *text, size_t len) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            putchar(c);
        } else {
            printf("\\x%02x", c);
        }
    }
}

static void on_event(const cp_event *e, void *user) {
    (void)user;
    printf("%d %zu %d %zu %zu ", (int)e->kind, e->call_index, e->complete ? 1 : 0, e->tail, e->from);
    print_escaped(e->text, e->len);
    putchar('\n');
}

/* The chunk sizes tests/c_abi.rs uses too (xorshift64*). */
static uint64_t next_random(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

int main(int argc, char **argv) {
    if (argc != 2) die("usage: driver CASES");
    FILE *in = fopen(argv[1], "rb");
    if (!in) die("cannot open the cases");
    char name[256];
    size_t index = 0;
    while (fscanf(in, "case %255s\n", name) == 1) {
        cp_options options;
        cp_options_default(&options);
        int thinking, format, parallel, structured;
        if (fscanf(in, "opts %d %d %d %d\n", &thinking, &format, &parallel, &structured) != 4) die("bad opts");
        options.enable_thinking = thinking != 0;
        options.reasoning_format = format;
        options.parallel_tool_calls = parallel != 0;
        options.structured_output = structured != 0;
        size_t n_tools;
        if (fscanf(in, "tools %zu\n", &n_tools) != 1) die("bad tools");
        cp_tool *tools = calloc(n_tools ? n_tools : 1, sizeof *tools);
        if (!tools) die("out of memory");
        for (size_t t = 0; t < n_tools; t++) {
            size_t n_args, len;
            if (fscanf(in, "tool %zu %zu\n", &n_args, &len) != 2) die("bad tool");
            tools[t].name = read_blob(in, len);
            tools[t].name_len = len;
            cp_arg *args = calloc(n_args ? n_args : 1, sizeof *args);
            if (!args) die("out of memory");
            for (size_t a = 0; a < n_args; a++) {
                int type;
                if (fscanf(in, "arg %d %zu\n", &type, &len) != 2) die("bad arg");
                args[a].type = type;
                args[a].name = read_blob(in, len);
                args[a].name_len = len;
            }
            tools[t].args = args;
            tools[t].n_args = n_args;
        }
        options.tools = tools;
        options.n_tools = n_tools;
        unsigned long long seed;
        size_t max;
        if (fscanf(in, "chunks %llu %zu\n", &seed, &max) != 2) die("bad chunks");
        size_t text_len;
        if (fscanf(in, "text %zu\n", &text_len) != 1) die("bad text");
        /* The text in its own allocation, so that AddressSanitizer sees a
         * read past any chunk's end. */
        char *text = read_blob(in, text_len);

        cp_template template_ = cp_template_by_name(name, strlen(name));
        if (template_ == CP_NO_TEMPLATE) die("unknown template");
        size_t size = cp_parser_size(template_, &options);
        void *mem = aligned_alloc(CP_PARSER_ALIGN, (size + CP_PARSER_ALIGN - 1) / CP_PARSER_ALIGN * CP_PARSER_ALIGN);
        if (!mem) die("out of memory");
        if (cp_parser_init(mem, template_, &options) != CP_OK) die("init failed");

        printf("case %zu\n", index++);
        uint64_t state = seed;
        size_t at = 0;
        while (at < text_len) {
            size_t n = seed == 0 ? 1 : 1 + (size_t)(next_random(&state) % max);
            if (n > text_len - at) n = text_len - at;
            /* Each chunk copied to a buffer of exactly its size. */
            uint8_t *chunk = malloc(n);
            if (!chunk) die("out of memory");
            memcpy(chunk, text + at, n);
            cp_feed(mem, chunk, n, on_event, NULL);
            free(chunk);
            at += n;
        }
        cp_finish(mem, on_event, NULL);
        printf("end\n");

        free(mem);
        free(text);
        for (size_t t = 0; t < n_tools; t++) {
            for (size_t a = 0; a < tools[t].n_args; a++) free((void *)tools[t].args[a].name);
            free((void *)tools[t].args);
            free((void *)tools[t].name);
        }
        free(tools);
    }
    fclose(in);
    return 0;
}
