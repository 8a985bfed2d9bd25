#!/usr/bin/env bash
# How noisy are this machine's report figures between runs, and how often would two runs of the
# same quiet machine be called `faster` or `slower`? Runs N quick reports back to back into one
# store (every section unless SECTIONS names some), timing each; compares each report with the
# one before it (the pairs a user makes: 2 with 1, 4 with 3, …) and then every ordered pair with
# `report --baseline` (from the store: `report --from-db B --baseline A`).
# Prints and writes to docs/benchmarks.md's calibration section (the machine's facts and the load
# average with it): the pairs with anything called, each figure's medians across the runs, the
# largest ratio between two runs and how many of the N×(N-1) comparisons were not `same`.
#   bench/verdict_calibration.sh [N [SECTIONS]]   (default 10 reports, every section; release
#                                                  build; run on an idle machine)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
sections=${2:-}
[[ $n =~ ^[1-9][0-9]*$ && $n -ge 2 ]] || { echo "usage: $0 [N (at least 2) [SECTIONS]]" >&2; exit 2; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cargo build --release -q -p platscope
bin=target/release/platscope
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

walls=()
for i in $(seq "$n"); do
  start=$(date +%s.%N)
  if [ -n "$sections" ]; then
    "$bin" report --quick --sections "$sections" --out "$work/o$i" --db "$work/r.db" > /dev/null
  else
    "$bin" report --quick --out "$work/o$i" --db "$work/r.db" > /dev/null
  fi
  walls+=("$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", e - s}')")
  echo "report $i of $n: ${walls[-1]} s" >&2
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

table=$(python3 - "$bin" "$work" <<'EOF'
import itertools, json, math, subprocess, sys
bin, work = sys.argv[1], sys.argv[2]
def run(*args):
    out = subprocess.run([bin, *args, "--db", f"{work}/r.db"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)
ids = sorted((r["id"] for r in run("results", "list", "--limit", "100000", "--json") if r["command"] == "report"))
ids = [str(i) for i in ids]
def compare(a, b):
    return run("report", "--from-db", a, "--baseline", b, "--out", f"{work}/page", "--json")["comparison"]
f3 = lambda v: f"{v:.3f}" if isinstance(v, (int, float)) else "–"
called = lambda cs: [c for c in cs if c["verdict"] in ("faster", "slower")]
# The pairs a user makes: each report with the one before it, the second of each pair as "this".
lines = []
pairs = [(ids[k + 1], ids[k]) for k in range(0, len(ids) - 1, 2)]
bad_pairs = 0
for a, b in pairs:
    cs = compare(a, b)
    c = called(cs)
    bad_pairs += bool(c)
    worst = max(cs, key=lambda x: abs(math.log(x["ratio"])) if (x["ratio"] or 0) > 0 else 0)
    lines.append(f"- run {a} against run {b}: {len(cs)} figures, {len(c)} called"
                 + (" (" + "; ".join(f"{x['figure']} {x['verdict']} {f3(x['ratio'])} [{f3(x['ratio_low'])}–{f3(x['ratio_high'])}]" for x in c) + ")" if c else "")
                 + f"; widest move {worst['figure']} ×{f3(worst['ratio'])} [{f3(worst['ratio_low'])}–{f3(worst['ratio_high'])}], {worst['verdict']}, {worst['rests_on']}")
print(f"Pairs (each report against the one before it): {bad_pairs} of {len(pairs)} with any figure called `faster` or `slower`.\n")
print("\n".join(lines))
print()
medians, verdicts = {}, {}
for c in compare(ids[0], ids[0]):
    medians[c["figure"]] = []
for a in ids:
    for c in compare(a, ids[0]):
        medians.setdefault(c["figure"], []).append(c["this"])
for a, b in itertools.permutations(ids, 2):
    for c in compare(a, b):
        verdicts.setdefault(c["figure"], []).append(c["verdict"])
print("| figure | medians of the runs | largest ratio between two runs | `faster` or `slower` | `untested` |")
print("|---|---|---|---|---|")
for f, v in medians.items():
    if not v:
        continue
    v = [x for x in v if isinstance(x, (int, float))]
    if not v:
        continue
    worst = max(x / y for x in v for y in v if y)
    vs = verdicts.get(f, [])
    bad = sum(1 for x in vs if x in ("faster", "slower"))
    untested = sum(1 for x in vs if x == "untested")
    print(f"| {f} | {' '.join(f'{x:.3g}' for x in v)} | {worst:.3f} | {bad} of {len(vs)} | {untested} |")
EOF
)
echo "$table"

. bench/lib.sh
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
virt=$(lscpu | awk -F: '/Hypervisor vendor/ {gsub(/ /, "", $2); print $2}'); virt=${virt:-none}
write_doc_section calibration "<!-- calibration:begin -->
## Calibration: $n quiet quick reports back to back

\`bench/verdict_calibration.sh $n${sections:+ $sections}\` on $cpu ($(nproc) CPUs, hypervisor: $virt,
kernel $(uname -r)), $(date -u +%Y-%m-%dT%H:%MZ); sections: ${sections:-every one}; load average before
$load_before, after $load_after. Each report took (s): ${walls[*]}.

$table
<!-- calibration:end -->"
