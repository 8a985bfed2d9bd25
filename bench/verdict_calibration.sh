#!/usr/bin/env bash
# How noisy are this machine's report figures between runs, and how often would two runs of the
# same quiet machine be called `faster` or `slower`? Runs N memory-only quick reports back to
# back into one store, then compares every ordered pair of them with `report --baseline`.
# Prints, per headline figure, each run's median, the largest ratio between two runs and how
# many of the N×(N-1) comparisons were not `same`; writes the table to docs/benchmarks.md's
# calibration section (the machine's facts and the load average with it).
#   bench/verdict_calibration.sh [N]     (default 5; release build; run on an idle machine)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
bin=target/release/platscope
[ -x "$bin" ] || { echo "build first: cargo build --release -p platscope" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for i in $(seq "$n"); do
  "$bin" report --quick --sections memory --out "$work/o$i" --db "$work/r.db" > /dev/null
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

table=$(python3 - "$bin" "$work" <<'EOF'
import itertools, json, subprocess, sys
bin, work = sys.argv[1], sys.argv[2]
def run(*args):
    out = subprocess.run([bin, *args, "--db", f"{work}/r.db"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)
ids = sorted(str(r["id"]) for r in run("results", "list", "--limit", "1000", "--json") if r["command"] == "report")
medians, verdicts = {}, {}
for a in ids:
    for c in run("report", "--from-db", a, "--baseline", ids[0], "--out", f"{work}/page", "--json")["comparison"]:
        medians.setdefault(c["figure"], []).append(c["this"])
for a, b in itertools.permutations(ids, 2):
    for c in run("report", "--from-db", a, "--baseline", b, "--out", f"{work}/page", "--json")["comparison"]:
        verdicts.setdefault(c["figure"], []).append(c["verdict"])
print("| figure | medians of the runs | largest ratio between two runs | `faster` or `slower` | `untested` |")
print("|---|---|---|---|---|")
for f, v in medians.items():
    worst = max(x / y for x in v for y in v)
    called = verdicts.get(f, [])
    bad = sum(1 for x in called if x in ("faster", "slower"))
    untested = sum(1 for x in called if x == "untested")
    print(f"| {f} | {' '.join(f'{x:.3g}' for x in v)} | {worst:.3f} | {bad} of {len(called)} | {untested} |")
EOF
)
echo "$table"

. bench/lib.sh
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
write_doc_section calibration "<!-- calibration:begin -->
## Calibration: $n quiet quick reports back to back

\`bench/verdict_calibration.sh $n\` on $(hostname) ($cpu, $(nproc) CPUs), $(date -u +%Y-%m-%dT%H:%MZ);
load average before $load_before, after $load_after.

$table
<!-- calibration:end -->"
