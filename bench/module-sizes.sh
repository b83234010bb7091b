#!/usr/bin/env bash
# Code and read-only data of each generated parser module in a release
# binary: `nm -S` sizes of the symbols under `parsers::<module>::`, summed
# per module, largest first, then the count, min and max.
#
#   cargo build --release -p chat-parser-bench --bins
#   bench/module-sizes.sh target/release/chat-parser-bench
#
# Runtime code the modules share (monomorphized under the runtime's own
# names) and anonymous constants are not counted.
set -euo pipefail
bin="${1:-target/release/chat-parser-bench}"
nm -S -C "$bin" | awk '
  # nm prints sizes in hex; not every awk reads "0x..." as a number.
  function hex(s,   i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
  NF >= 4 && match($0, /parsers::[a-z0-9_]+::/) {
    name = substr($0, RSTART + 9, RLENGTH - 11)
    size[name] += hex($2)
  }
  END { for (m in size) printf "%s %d\n", m, size[m] }' \
  | sort -k2,2nr \
  | awk '{ printf "%-55s %7.1f KB\n", $1, $2 / 1024; n++; if (n == 1 || $2 > max) max = $2; if (n == 1 || $2 < min) min = $2 }
         END { printf "%d modules; min %.1f KB, max %.1f KB\n", n, min / 1024, max / 1024 }'
