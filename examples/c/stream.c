/*
 * Streams a model's output through a generated parser from C and prints
 * what a server would send: content, and tool calls as they complete.
 *
 * Build and run (from the repository root):
 *   cargo build --release --manifest-path capi/Cargo.toml
 *   cc -std=c11 -I capi/include examples/c/stream.c \
 *      capi/target/release/libchat_parser_capi.a -o stream && ./stream
 */
#include "chat_parser.h"

#include <stdalign.h>
#include <stdio.h>
#include <string.h>

/* The output of a model using templates/json_tool_call.jinja, as it might
 * arrive from the sampler. */
static const char OUTPUT[] =
    "Let me check the weather in Paris.\n"
    "<tool_call>\n"
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n"
    "</tool_call>";

/* What the callback assembles between two chunks. */
struct reply {
    char args[256];
    size_t args_len;
};

static void on_event(const cp_event *e, void *user) {
    struct reply *r = user;
    switch (e->kind) {
    case CP_EVENT_CONTENT:
        /* Event text lives only during the callback: print (or copy) it now. */
        printf("content: \"%.*s\"\n", (int)e->len, e->text);
        break;
    case CP_EVENT_TOOL_CALL_START:
        r->args_len = 0;
        break;
    case CP_EVENT_TOOL_NAME:
        printf("tool call %zu: %.*s\n", e->call_index, (int)e->len, e->text);
        break;
    case CP_EVENT_TOOL_ARGS:
        if (r->args_len + e->len < sizeof r->args) {
            memcpy(r->args + r->args_len, e->text, e->len);
            r->args_len += e->len;
        }
        break;
    case CP_EVENT_TOOL_CALL_END:
        printf("  arguments: %.*s%s\n", (int)r->args_len, r->args, e->complete ? "" : " (broken)");
        break;
    case CP_EVENT_TOOL_CALL_CUT:
        /* Not a call: its text, the last e->tail bytes of the output, is content. */
        printf("  (cut off by the end of the output: %zu bytes of content)\n", e->tail);
        break;
    case CP_EVENT_TOOL_CALL_BROKEN:
        /* Not a call either: output bytes [from, from + tail) are content. */
        printf("  (its markup broke: bytes %zu..%zu of the output are content)\n", e->from, e->from + e->tail);
        break;
    default:
        break;
    }
}

int main(void) {
    cp_template t = cp_template_by_name("json_tool_call", strlen("json_tool_call"));
    if (t == CP_NO_TEMPLATE) return 1;

    /* The request declared one tool; its arguments' types come from the schema. */
    static const char city[] = "city", days[] = "days", name[] = "get_weather";
    const cp_arg args[] = {
        {city, strlen(city), CP_ARG_STRING},
        {days, strlen(days), CP_ARG_JSON},
    };
    const cp_tool tools[] = {{name, strlen(name), args, 2}};
    cp_options options;
    cp_options_default(&options);
    options.tools = tools;
    options.n_tools = 1;

    /* No heap: the parser lives in memory we own (here, on the stack). */
    alignas(CP_PARSER_ALIGN) unsigned char memory[4096];
    if (cp_parser_size(t, &options) > sizeof memory) return 1;
    if (cp_parser_init(memory, t, &options) != CP_OK) return 1;

    printf("generation prompt: \"%.*s\"\n", (int)cp_generation_prompt(t, true).len, cp_generation_prompt(t, true).ptr);
    struct reply reply = {{0}, 0};
    /* 5-byte chunks, as tokens arrive. */
    for (size_t at = 0; at < sizeof OUTPUT - 1; at += 5) {
        size_t n = sizeof OUTPUT - 1 - at < 5 ? sizeof OUTPUT - 1 - at : 5;
        cp_feed(memory, (const uint8_t *)OUTPUT + at, n, on_event, &reply);
    }
    cp_finish(memory, on_event, &reply);
    return 0;
}
