#!/usr/bin/env bash
# Side by side: `platscope mem latency` against google/multichase (`multichase -a`) at every
# working-set size from L1 to DRAM, in one run, tool and tool alternating size by size so both
# see the same machine noise. Writes its section of docs/benchmarks.md. Not a test.
#   MULTICHASE=/path/to/multichase bench/mem_latency_multichase.sh [ROUNDS]
# MULTICHASE is multichase's build directory (or its binary). Debian does not package it:
# fetch google/multichase outside the project tree, `make multichase` in it, and point
# MULTICHASE at it. Nothing of it is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
mc=${MULTICHASE:?set MULTICHASE to the multichase build directory, see the header of this script}
[ -d "$mc" ] && mc=$mc/multichase
[ -x "$mc" ] || { echo "no multichase binary at $mc" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq is missing: scripts/setup.sh --deps" >&2; exit 1; }
cpu=${CPU:-1}
cargo build --release -q -p platscope
P=target/release/platscope

# Power-of-two sizes only: multichase rounds a size down to whole 256 KiB TLB groups (384 KiB
# becomes 256 KiB), platscope does not.
sizes=(16k 32k 64k 128k 256k 512k 1m 2m 8m 32m 256m 1g)
strides=(64 256)
declare -A mcs pls
for ((r = 1; r <= rounds; r++)); do
  for stride in "${strides[@]}"; do
    for s in "${sizes[@]}"; do
      bytes=$(numfmt --from=iec "${s^^}")
      # multichase -a: the mean of its 0.5 s samples (first dropped); default 64-page TLB groups.
      mcs[$stride,$s]+="$(taskset -c "$cpu" "$mc" -a -m "$s" -s "$stride" -n 4 | tail -1) "
      # platscope: the median of its ~2 ms batches over 2 s, the same 64-page groups.
      pls[$stride,$s]+="$($P mem latency --size "$bytes" --stride "$stride" --tlb-group 64 \
        --physcpubind "$cpu" --duration-ms 2000 --json --no-store | jq '.point.ns.median') "
    done
  done
  echo "round $r of $rounds done" >&2
done

table=$(
  echo "| working set | stride | multichase -a ns | platscope median ns | platscope / multichase |"
  echo "|---|---:|---:|---:|---:|"
  for stride in "${strides[@]}"; do
    for s in "${sizes[@]}"; do
      m=$(echo "${mcs[$stride,$s]}" | tr ' ' '\n' | grep . | median)
      p=$(echo "${pls[$stride,$s]}" | tr ' ' '\n' | grep . | median)
      echo "| ${s^^}iB | $stride B | $(printf %.2f "$m") | $(printf %.2f "$p") | $(awk -v a="$p" -v b="$m" 'BEGIN{printf "%.3f", a/b}') |"
    done
  done
)

caches=$(lscpu | awk -F: '/L1d|L2|L3/ {gsub(/^ +/, "", $2); printf "%s %s; ", $1, $2}')
machine=$($P topo | head -1)
section=$(cat <<MD
<!-- mem-latency-multichase:begin -->
## Idle latency by working-set size vs multichase

Command: \`MULTICHASE=… bench/mem_latency_multichase.sh $rounds\` — $rounds rounds, the two tools
alternating size by size, pinned to CPU $cpu, 4 KiB pages, 64-page TLB groups for both, median
of the rounds. Run on $(date -u +%Y-%m-%d); multichase built from google/multichase at the time
of the run (\`make multichase\`).

Machine: $machine; kernel $(uname -r); caches: $caches
load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other builds share this machine).

$table

What each figure is: multichase \`-a\` prints the mean of its 0.5 s samples; platscope the
median of its ~2 ms batches. At a 256-byte stride each slot holds its pointer in one of the
slot's four cache lines at random, in both tools: the chase touches a quarter of the working
set lines, spread over every cache set. Before platscope did this, all its pointers sat at
offset 0 of their slots, in a quarter of the sets of every cache, and its L2-sized chases read
1.3 to 2.5 times the multichase figures.
<!-- mem-latency-multichase:end -->
MD
)
write_doc_section mem-latency-multichase "$section"
echo "$table"
