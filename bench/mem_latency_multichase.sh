#!/usr/bin/env bash
# Side by side: `platscope mem latency` against google/multichase at every
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
# Before anything of the bench's own runs: other work on the machine moves multichase's figures.
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
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
      # multichase: the best of its 0.5 s samples (its default; -a, their mean, takes in every
      # time the thread was descheduled on a shared machine); default 64-page TLB groups.
      mcs[$stride,$s]+="$(taskset -c "$cpu" "$mc" -m "$s" -s "$stride" -n 4 | tail -1) "
      # platscope: the median of its ~2 ms batches over 2 s, the same 64-page groups.
      pls[$stride,$s]+="$($P mem latency --size "$bytes" --stride "$stride" --tlb-group 64 \
        --physcpubind "$cpu" --duration-ms 2000 --json --no-store | jq '.point.ns.median') "
    done
  done
  echo "round $r of $rounds done" >&2
done

table=$(
  echo "| working set | stride | multichase ns (best 0.5 s sample) | platscope median ns | platscope / multichase |"
  echo "|---|---:|---:|---:|---:|"
  for stride in "${strides[@]}"; do
    for s in "${sizes[@]}"; do
      m=$(echo "${mcs[$stride,$s]}" | tr ' ' '\n' | grep . | median)
      p=$(echo "${pls[$stride,$s]}" | tr ' ' '\n' | grep . | median)
      echo "| ${s^^}iB | $stride B | $(printf %.2f "$m") | $(printf %.2f "$p") | $(awk -v a="$p" -v b="$m" 'BEGIN{printf "%.3f", a/b}') |"
    done
  done
)

# Where the ratios leave 1.00 ± 0.05 it is at a cache's capacity, and the layouts explain it: a
# model of where each tool puts a 256-byte stride's pointers (platscope: a line per slot from a
# hash, as crates/membench/src/layout.rs; multichase: its 64-entry mixer, so the line repeats
# every 64 slots) counts the cache sets used and the lines beyond a set's ways.
cache_dir=/sys/devices/system/cpu/cpu$cpu/cache
geometry() { echo "$(cat "$cache_dir/index$1/size") $(cat "$cache_dir/index$1/ways_of_associativity") $(cat "$cache_dir/index$1/number_of_sets")"; }
model=$(L1D="$(geometry 0)" L2="$(geometry 2)" python3 - <<'PY'
import os
import random
M = (1 << 64) - 1
def splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)
def platscope_line(slot):
    return (splitmix(0x5EED ^ ((slot * 0xD6E8FEB86659FD93) & M)) * 4) >> 64
def layout(size, sets, ways, physical, tool, seed):
    rnd = random.Random(seed)
    mixer = [rnd.randrange(32) * 8 // 64 for _ in range(64)]
    frames, per_set = {}, {}
    for slot in range(size // 256):
        line = platscope_line(slot) if tool == "platscope" else mixer[slot & 63]
        page, offset = divmod(slot * 256 + line * 64, 4096)
        if physical:  # a physically indexed cache sees random 4 KiB frames
            page = frames.setdefault(page, rnd.randrange(1 << 20))
        s = ((page * 4096 + offset) >> 6) % sets
        per_set[s] = per_set.get(s, 0) + 1
    return len(per_set), sum(max(0, n - ways) for n in per_set.values())
print("| chase (256 B stride) | cache modelled | tool | sets used | lines beyond the ways |")
print("|---|---|---|---:|---:|")
for label, size, name, level, physical in [
        ("64 KiB", 64 << 10, "L1d", "L1D", False), ("2 MiB", 2 << 20, "L2", "L2", True)]:
    total, ways, sets = os.environ[level].split()
    ways, sets = int(ways), int(sets)
    index = "physically" if physical else "virtually"
    cache = f"{name} {total}, {ways}-way, {sets} sets ({index} indexed)"
    for tool in ("platscope", "multichase"):
        runs = [layout(size, sets, ways, physical, tool, seed) for seed in range(5)]
        used = sum(r[0] for r in runs) / 5
        beyond = sum(r[1] for r in runs) / 5
        print(f"| {label} | {cache} | {tool} | {used:.0f} of {sets} | {beyond:.0f} of {size // 256} |")
PY
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
load average before the run: $load_start; at its end: $(cut -d' ' -f1-3 /proc/loadavg) (the bench itself keeps one CPU busy).

$table

What each figure is: multichase prints the best of its 0.5 s samples (its default); platscope
the median of its ~2 ms batches. On a machine doing other work a 0.5 s sample seldom runs
undisturbed while most 2 ms batches do, so multichase's figures grow with the load (the load
average above) faster than platscope's: compare the ratios of quiet runs only. At a 256-byte stride each slot holds its pointer in one of the
slot's four cache lines at random, in both tools: the chase touches a quarter of the working
set lines, spread over every cache set. Before platscope did this, all its pointers sat at
offset 0 of their slots, in a quarter of the sets of every cache, and its L2-sized chases read
1.3 to 2.5 times the multichase figures.

On a quiet machine, where a ratio is outside 1.00 ± 0.05 it is at a cache's capacity (the L1 at
32 KiB of lines, the L2 at 1 MiB), and platscope is the lower: how the two layouts spread the pointers over the cache
sets decides how many lines a set must hold beyond its ways. multichase picks a slot's line from
a 64-entry table indexed by the slot number, so slots 64 apart always share a set; platscope
picks it per slot. A model of both layouts (computed by this script, averaged over 5 seeds; the
cache geometry is what sysfs reports for CPU $cpu; 4 KiB frames at random for the physically
indexed L2):

$model

Fewer lines beyond the ways means fewer conflict misses: at these sizes multichase measures
partly the next level, platscope the level the working set fits in.

At a 64-byte stride every line of the buffer holds a slot in both tools, so their layouts agree;
rows off 1.00 there sit at a cache's exact size (32 KiB, 1 MiB), where the chain fills the cache
and any other line the tool touches (its stack, its sample buffer, its counters) evicts part of
it. Which tool touches fewer lines there was not measured.
<!-- mem-latency-multichase:end -->
MD
)
write_doc_section mem-latency-multichase "$section"
echo "$table"
