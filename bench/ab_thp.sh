#!/usr/bin/env bash
# Does `platscope ab` find what THP does to a random chase over 1 GiB, and does it call nothing
# when both sides are the same? One A/B (THP never against always) and N A/As (madvise against
# madvise) of the same workload, each with its default rounds and A/A phase; THP is checked after
# each to be as it was found. Not a timing comparison with another tool (no other tool answers
# this question): a check of the verdicts, with each run's figures, time and load average, written
# to docs/benchmarks.md's ab-thp section.
#   bench/ab_thp.sh [N_AA [SIZE]]   (root; default 5 A/As, 1GiB; release build; an idle machine)
set -euo pipefail
cd "$(dirname "$0")/.."
n_aa=${1:-5}
size=${2:-1GiB}
[[ $n_aa =~ ^[0-9]+$ ]] || { echo "usage: $0 [N_AA [SIZE]]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (it changes THP)" >&2; exit 1; }
thp=/sys/kernel/mm/transparent_hugepage/enabled
[ -w "$thp" ] || { echo "bench: $thp is not writable here" >&2; exit 1; }
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
cargo build --release -q -p platscope
bin=target/release/platscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
found=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp")
workload=(mem latency --size "$size" --page thp --tlb-group 0)

rows=()
# one NAME A B: one ab run; a table row with its verdict.
one() {
  local name=$1 a=$2 b=$3 start load json after
  load=$(cut -d' ' -f1 /proc/loadavg)
  start=$(date +%s)
  json=$work/$(tr -c "A-Za-z0-9\n" _ <<< "$name").json
  "$bin" --no-store --json ab --a "thp=$a" --b "thp=$b" -- "${workload[@]}" > "$json"
  after=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp")
  [ "$after" = "$found" ] || { echo "bench: THP is '$after' after $name, was '$found'" >&2; exit 1; }
  rows+=("$(python3 - "$json" "$name" "$load" "$(($(date +%s) - start))" "$after" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
name, load, secs, after = sys.argv[2:]
f3 = lambda v: "–" if v is None else f"{v:.3f}"
for v in r["verdicts"]:
    m = r["method"]
    print(f"| {name} | thp={r['settings']['a']['thp']} → thp={r['settings']['b']['thp']} | {m['seed']} | {load} | "
          f"{secs} s | {m['rounds_run']} ({v['rests_on']}) | {v['a']:.1f} ns | {v['b']:.1f} ns | {f3(v['ratio'])} | "
          f"{f3(v['ratio_low'])}–{f3(v['ratio_high'])} | **{v['verdict']}** | {after} |")
EOF
)")
  echo "${rows[-1]}" >&2
}

one "A/B" never always
for i in $(seq "$n_aa"); do one "A/A $i" madvise madvise; done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
called=$(printf '%s\n' "${rows[@]}" | grep '^| A/A' | grep -c -E '\*\*(faster|slower)\*\*' || true)

. bench/lib.sh
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
virt=$(lscpu | awk -F: '/Hypervisor vendor/ {gsub(/ /, "", $2); print $2}'); virt=${virt:-none}
write_doc_section ab-thp "<!-- ab-thp:begin -->
## platscope ab: THP never against always, and A/As

\`bench/ab_thp.sh $n_aa $size\` on $cpu ($(nproc) CPUs, hypervisor: $virt, kernel $(uname -r)),
$(date -u +%Y-%m-%dT%H:%MZ); THP found \`$found\` and put back after every run. Load average before:
$load_start; after: $load_end. Workload: \`platscope ${workload[*]}\`, a fresh process per run, each
A/B with its default rounds after its A/A phase.

| run | settings | seed | load (1 min) at start | time | rounds | A | B | B/A | interval | verdict | THP after |
|---|---|---|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${rows[@]}")

A/As with \`faster\` or \`slower\`: $called of $n_aa.
<!-- ab-thp:end -->"
printf '%s\n' "${rows[@]}"
echo "A/As called: $called of $n_aa"
