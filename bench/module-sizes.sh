#!/usr/bin/env bash
# Code and read-only data of each generated parser module in a release
# binary: `nm -S` sizes of the symbols under `parsers::<module>::`, summed
# per module, largest first, then the count, min and max.
#
#   RUSTFLAGS="-C symbol-mangling-version=v0" CARGO_TARGET_DIR=target/v0 \
#     cargo build --release -p chat-parser-bench --bins
#   bench/module-sizes.sh target/v0/release/chat-parser-bench
#
# Build with v0 symbol mangling: its names show generic arguments, so code
# instantiated for a module's type (its `Parser`'s `new`, the caller's chunk
# loop with the fast path inlined: `visit::<Parser<module::Grammar, ...>>`)
# counts as the module's. A module's table is named statics (`STATES`,
# `ARMS`, `GUARDS`, `STOPS`...), counted; string literals are anonymous and
# not. The runtime code is not generic over the module: it is printed last,
# once, with its copies per set of fixed-state sizes (regions and loops),
# which modules of the same sizes share.
set -euo pipefail
bin="${1:-target/release/chat-parser-bench}"
nm -S -C "$bin" | awk '
  # nm prints sizes in hex; not every awk reads "0x..." as a number.
  function hex(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
  # A symbol listed twice (an alias at the same address) counts once.
  NF >= 4 && !seen[$1]++ && match($0, /parsers::[a-z0-9_]+::/) {
    name = substr($0, RSTART + 9, RLENGTH - 11)
    size[name] += hex($2)
  }
  END { for (m in size) printf "%s %d\n", m, size[m] }' \
  | sort -k2,2nr \
  | awk '{ printf "%-55s %7.1f KB\n", $1, $2 / 1024; n++; if (n == 1 || $2 > max) max = $2; if (n == 1 || $2 < min) min = $2 }
         END { printf "%d modules; min %.1f KB, max %.1f KB\n", n, min / 1024, max / 1024 }'
nm -S -C "$bin" | awk '
  function hex(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
  # Runtime code: the parser machinery, not a module (nor the harness).
  NF >= 4 && !seen[$1]++ && /chat_parser_runtime::(input|table|states|machine|json|escape|utf8|pack|word)/ && !/parsers::/ {
    total += hex($2)
    if (match($0, /Core<[0-9]+, [0-9]+>/)) sizes[substr($0, RSTART, RLENGTH)] = 1
  }
  END { n = 0; for (k in sizes) n++; printf "runtime machinery: %.1f KB in all, over %d sets of fixed-state sizes\n", total / 1024, n }'
