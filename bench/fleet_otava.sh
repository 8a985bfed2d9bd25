#!/usr/bin/env bash
# platscope fleet's change points against Apache Otava's on the same series:
#
#   bench/fleet_otava.sh [HOSTS] [DAYS] [FLEETS]   (default 40 hosts × 30 days, 5 fleets)
#
# Each fleet is made by the fleet crate's synthetic generator (examples/synthetic_fleet) from
# the four real quick reports in crates/fleet/tests/fixtures (an Intel Xeon KVM guest, 2 vCPUs):
# HOSTS hosts × DAYS daily reports in two hardware classes, every run's noise drawn from the
# spread those reports really show, shifts injected on known days (one host in eight). platscope
# fleet's analysis (the library `platscope fleet` runs) and Apache Otava 0.8.0 (from PyPI, in a venv
# under /tmp; its `compute_change_points` with its defaults: windows of 50, p ≤ 0.001, no
# minimum magnitude) each look at every host's series of every figure. Counted: the injected
# shifts each finds (a change of that host and figure within one day of the injected one),
# every change each raises, and the changes each raises on the same fleets with nothing
# injected. Writes the table to docs/benchmarks.md (a section per fleet size).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

hosts=${1:-40}
days=${2:-30}
fleets=${3:-5}
real=crates/fleet/tests/fixtures/reports_xeon_kvm_2cpu_40aede5.json
cargo build --release --locked -q -p fleet --example synthetic_fleet >&2
make_fleet=target/release/examples/synthetic_fleet

dir=$(mktemp -d /tmp/fleet-otava.XXXXXX)
trap 'rm -rf "$dir"' EXIT
venv=/tmp/platscope-otava-venv
if ! "$venv/bin/python" -c 'import otava' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q apache-otava==0.8.0 >&2
fi
otava_version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("apache-otava"))')

cat > "$dir/compare.py" <<'PY'
"""Otava's change points on the series of one fleet, and both tools' against the truth."""
import json, sys, time
from datetime import datetime, timezone
from otava.analysis import compute_change_points

series_file, truth_file, report_file, start = sys.argv[1:5]
series = json.load(open(series_file))
truth = json.load(open(truth_file))
report = json.load(open(report_file))
start = datetime.fromisoformat(start + "T00:00:00+00:00")

def day(at):
    t = datetime.fromisoformat(at.replace("Z", "+00:00"))
    return int((t - start).total_seconds() // 86400)

began = time.monotonic()
otava = []  # (host, figure, unit, day)
for s in series:
    cps, _ = compute_change_points(s["values"], window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    for cp in cps:
        otava.append((s["host"], s["figure"], s["unit"], day(s["at"][int(cp.index)])))
took = time.monotonic() - began
ours = [(c["host"], c["figure"], c["unit"], day(c["at"])) for c in report["changes"]]

def found(changes, shift):
    return any(h == shift["host"] and f == shift["figure"] and u == shift["unit"]
               and abs(d - shift["day"]) <= 1 for h, f, u, d in changes)

shifts = truth["shifts"]
both = sum(found(ours, s) and found(otava, s) for s in shifts)
only_otava = [s for s in shifts if found(otava, s) and not found(ours, s)]
only_ours = [s for s in shifts if found(ours, s) and not found(otava, s)]
print(json.dumps({
    "shifts": len(shifts), "series": len(series),
    "fleet_found": sum(found(ours, s) for s in shifts), "otava_found": sum(found(otava, s) for s in shifts),
    "both": both, "only_otava": [f'{s["host"]} {s["figure"]} day {s["day"]}' for s in only_otava],
    "only_fleet": [f'{s["host"]} {s["figure"]} day {s["day"]}' for s in only_ours],
    "fleet_changes": len(ours), "otava_changes": len(otava), "otava_seconds": took,
}))
PY

total() { python3 -c "import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; print(sum(r[sys.argv[2]] for r in rows))" "$1" "$2"; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$dir/perturbed.jsonl"
: > "$dir/quiet.jsonl"
for seed in $(seq 1 "$fleets"); do
  for kind in perturbed quiet; do
    flag=; [ "$kind" = quiet ] && flag=--quiet
    "$make_fleet" --real "$real" --hosts "$hosts" --days "$days" --classes 2 --seed "$seed" $flag \
      --truth "$dir/truth.json" --series-out "$dir/series.json" --analyse --report-out "$dir/report.json" 2>> "$dir/make.log"
    "$venv/bin/python" "$dir/compare.py" "$dir/series.json" "$dir/truth.json" "$dir/report.json" 2026-01-01 >> "$dir/$kind.jsonl"
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
cat "$dir/perturbed.jsonl" "$dir/quiet.jsonl" >&2

shifts=$(total "$dir/perturbed.jsonl" shifts)
series=$(total "$dir/perturbed.jsonl" series)
only_otava=$(python3 -c "import json,sys; print('; '.join(x for l in open(sys.argv[1]) for x in json.loads(l)['only_otava']) or 'none')" "$dir/perturbed.jsonl")
only_fleet=$(python3 -c "import json,sys; print('; '.join(x for l in open(sys.argv[1]) for x in json.loads(l)['only_fleet']) or 'none')" "$dir/perturbed.jsonl")
otava_seconds=$(python3 -c "import json,sys; print(round(sum(json.loads(l)['otava_seconds'] for f in sys.argv[1:] for l in open(f)), 1))" "$dir/perturbed.jsonl" "$dir/quiet.jsonl")
fleet_seconds=$(grep -o 'analysed in [0-9.]* s' "$dir/make.log" | awk '{s += $3} END {printf "%.1f", s}')

name=fleet-otava-${hosts}x${days}
section="<!-- $name:begin -->
## Change points: platscope fleet and Apache Otava on the same series, $hosts hosts × $days days

\`bench/fleet_otava.sh $hosts $days $fleets\`: $fleets fleet(s) of $hosts hosts × $days daily reports (two hardware
classes; each run's noise drawn from the spread of four real quick reports of an Intel Xeon KVM guest with 2 vCPUs,
\`crates/fleet/tests/fixtures\`), $shifts injected shifts in all, each fleet also made again with
nothing injected; $series series per set of fleets. Otava $otava_version (PyPI) with its defaults
(\`compute_change_points\`: windows of 50, Student's t-test at p ≤ 0.001, no minimum magnitude);
platscope fleet as it runs (E-divisive over every split and end, permutation test at p ≤ 0.002,
and a change's medians must differ by more than the class's noise). A shift counts as found
when a change of its host and figure is within one day of it. $(nproc) CPUs, $(host_label),
load average $load_before before and $load_after after.

| | platscope fleet | Apache Otava |
|---|---|---|
| injected shifts found | $(total "$dir/perturbed.jsonl" fleet_found) of $shifts | $(total "$dir/perturbed.jsonl" otava_found) of $shifts |
| changes raised, with shifts injected | $(total "$dir/perturbed.jsonl" fleet_changes) | $(total "$dir/perturbed.jsonl" otava_changes) |
| changes raised, nothing injected | $(total "$dir/quiet.jsonl" fleet_changes) | $(total "$dir/quiet.jsonl" otava_changes) |
| time for all $((2 * fleets)) fleets | $fleet_seconds s (Rust, $(nproc) threads) | $otava_seconds s (Python, one thread) |

Shifts only Otava found: $only_otava. Shifts only platscope fleet found: $only_fleet.
<!-- $name:end -->"
write_doc_section "$name" "$section"
echo "$section"
