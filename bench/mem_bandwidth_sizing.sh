#!/usr/bin/env bash
# Is the report's bandwidth the memory's, not the last-level cache's? The report's one-thread
# bandwidth (its `mem bandwidth --scale` step, buffers sized from the cache and checked at twice
# that) against single-thread runs with fixed buffers of 1 GiB and 4 GiB, interleaved in rounds so
# all see the same machine noise; each figure is the median over the rounds. Writes its section
# of docs/benchmarks.md. Not a test: timings never gate anything.
#   bench/mem_bandwidth_sizing.sh [ROUNDS [DURATION_MS]]
#     ROUNDS       rounds (default 3)
#     DURATION_MS  measuring time of one figure (default 500, the quick report's)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
dur_ms=${2:-500}
[[ $rounds =~ ^[1-9][0-9]*$ && $dur_ms =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: $0 [ROUNDS [DURATION_MS]] (positive integers)" >&2
  exit 2
}
out=target/bench/mem-bandwidth-sizing
rm -rf "$out"
mkdir -p "$out"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# PLATSCOPE=/path/to/platscope: that binary instead of building the release one.
if [ -n "${PLATSCOPE:-}" ]; then
  bin=$PLATSCOPE
else
  cargo build --release --locked -q -p platscope
  bin=target/release/platscope
fi
db=$out/results.db
cpu=$($bin topo --json | jq -r '[.nodes[].cpus[]] | min')

for r in $(seq "$rounds"); do
  # The report's step, as the quick report runs it (all CPUs; its first step is one thread).
  $bin mem bandwidth --scale --duration-ms "$dur_ms" --json --db "$db" > "$out/scale-$r.json" 2> "$out/scale-$r.err"
  jq -r '.steps[0].aggregate_gbs.median' "$out/scale-$r.json" >> "$out/report.txt"
  jq -r '.steps[0].bytes_per_thread' "$out/scale-$r.json" >> "$out/report-bytes.txt"
  jq -r '.size_checks[0] | [.tried[] | "\(.[1] * 10 | round / 10) GB/s at \(.[0] / 1048576) MiB"] | join(", ")' \
    "$out/scale-$r.json" >> "$out/report-check.txt"
  for size in 1GiB 4GiB; do
    $bin mem bandwidth --threads 1 --physcpubind "$cpu" --size "$size" --duration-ms "$dur_ms" --json --db "$db" \
      > "$out/fixed-$size-$r.json" 2> "$out/fixed-$size-$r.err"
    jq -r '.aggregate_gbs.median' "$out/fixed-$size-$r.json" >> "$out/fixed-$size.txt"
  done
  echo "round $r: report $(tail -1 "$out/report.txt") GB/s, 1 GiB $(tail -1 "$out/fixed-1GiB.txt"), 4 GiB $(tail -1 "$out/fixed-4GiB.txt")" >&2
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
report=$(median < "$out/report.txt")
g1=$(median < "$out/fixed-1GiB.txt")
g4=$(median < "$out/fixed-4GiB.txt")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", a / b}'; }
gbs() { awk -v a="$1" 'BEGIN {printf "%.1f", a}'; }
rounds_of() { awk '{printf "%s%.1f", (NR > 1 ? ", " : ""), $1}' "$1"; }
llc=$($bin topo --json | jq -r '[.caches[]? | select(.level == 3) | .size_bytes] | max // empty')
model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
text="<!-- mem-bandwidth-sizing:begin -->
## The report's one-thread bandwidth against fixed 1 GiB and 4 GiB buffers

\`bench/mem_bandwidth_sizing.sh $rounds $dur_ms\` on $(date -u +%F): $model, $(nproc) CPUs, last-level
cache ${llc:+$((llc >> 20)) MiB per CPUID}, kernel $(uname -r), load average $load_start at the start and
$load_end at the end. Read kernel, one thread pinned to CPU $cpu; medians over $rounds interleaved rounds.

| figure | GB/s (median) | each round | ratio to 1 GiB |
|---|---|---|---|
| report's step (\`mem bandwidth --scale\`, one thread, $(( $(median < "$out/report-bytes.txt") >> 20 )) MiB) | $(gbs "$report") | $(rounds_of "$out/report.txt") | $(ratio "$report" "$g1") |
| \`--threads 1 --size 1GiB\` | $(gbs "$g1") | $(rounds_of "$out/fixed-1GiB.txt") | 1.000 |
| \`--threads 1 --size 4GiB\` | $(gbs "$g4") | $(rounds_of "$out/fixed-4GiB.txt") | $(ratio "$g4" "$g1") |

The step's size checks, one per round: $(paste -sd ';' "$out/report-check.txt" | sed 's/;/; /g').
<!-- mem-bandwidth-sizing:end -->"
write_doc_section mem-bandwidth-sizing "$text"
echo "$text"
