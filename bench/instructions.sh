#!/usr/bin/env bash
# Instruction counts (callgrind) of the comparison binary on every
# benchmarked template and shape: one one-shot parse and one parse in
# 4-byte chunks (parser and sink only: `parse_one_shot`, `parse_streamed`),
# and the floor of that streamed parse: the same chunks, loop and sink with
# no parser, only a UTF-8 check (`parse_floor`, `chat_parser_bench::floor`).
#
#   cargo build --release -p chat-parser-bench --bins
#   bench/instructions.sh [target/release/chat-parser-bench]
#
# Prints `template shape one-shot streamed floor` (instructions), a line each.
# Counts do not depend on the machine's load.
set -euo pipefail
bin="${1:-target/release/chat-parser-bench}"
templates="Qwen-QwQ-32B.jinja Qwen3-Coder.jinja Mistral-Small-3.2-24B-Instruct-2506.jinja deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja openai-gpt-oss-120b.jinja google-gemma-4-31B-it.jinja"
shapes="a-text b-long-call c-3-calls d-long-call-escaped e-3-calls-escaped f-chinese-text"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # FILE FUNCTION: inclusive instructions of FUNCTION
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null | awk -v f="$2" '$0 ~ f { gsub(",", "", $1); print $1; exit }'
}
for t in $templates; do
  for s in $shapes; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" "$t" --shape "$s" --chunk-bytes 4 --once >/dev/null 2>&1
    printf '%-48s %-22s %9s %9s %9s\n' "$t" "$s" "$(count "$out/cg" parse_one_shot)" "$(count "$out/cg" parse_streamed)" "$(count "$out/cg" parse_floor)"
  done
done
