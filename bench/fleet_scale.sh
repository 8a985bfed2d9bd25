#!/usr/bin/env bash
# How long `platscope fleet` takes on a fleet the size it is built for, in the store a fleet
# already runs:
#
#   bench/fleet_scale.sh [HOSTS] [DAYS] [CLASSES] [RUNS]   (root; default 1000 × 90, 4 classes, 3 runs)
#
# A throwaway PostgreSQL 15 (fsync off) is filled by the fleet crate's synthetic generator
# (examples/synthetic_fleet --into) from the four real quick reports (an Intel Xeon KVM guest) in
# crates/fleet/tests/fixtures: HOSTS hosts × DAYS daily reports, each with the reports' 21
# headline figures and machine facts, noise drawn from their real spread, shifts injected on
# known days. Then `platscope fleet --from postgresql://… --json` runs RUNS times (wall clock
# and peak memory from /usr/bin/time; the median is kept), once more with `--out` (the page),
# and once from a SQLite file holding the same fleet; the JSON is judged against what was
# injected. Writes the figures to docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

hosts=${1:-1000}
days=${2:-90}
classes=${3:-4}
runs=${4:-3}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (throwaway server)" >&2; exit 1; }
real=crates/fleet/tests/fixtures/reports_xeon_kvm_2cpu_40aede5.json
cargo build --release --locked -q -p platscope >&2
cargo build --release --locked -q -p fleet --example synthetic_fleet >&2
platscope=target/release/platscope
make_fleet=target/release/examples/synthetic_fleet
fleet_args=(--real "$real" --hosts "$hosts" --days "$days" --classes "$classes" --seed 1)

dir=$(mktemp -d /tmp/fleet-scale.XXXXXX)
pgpid=
cleanup() {
  pg_stop
  rm -rf "$dir"
}
trap cleanup EXIT
pg_start "$dir"
url="postgresql://platscope@127.0.0.1:$port/postgres"

started=$(date +%s.%N)
"$make_fleet" "${fleet_args[@]}" --into "$url" --truth "$dir/truth.json" 2> "$dir/fill.log"
fill_s=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.0f", e - s}')
cat "$dir/fill.log" >&2
reports=$(psql -X -A -t -c 'SELECT count(*) FROM fleet_reports')
figures=$(psql -X -A -t -c 'SELECT count(*) FROM fleet_figures')
bytes=$(psql -X -A -t -c "SELECT pg_total_relation_size('fleet_reports') + pg_total_relation_size('fleet_figures') + pg_total_relation_size('fleet_facts') + pg_total_relation_size('fleet_headlines')")

# timed OUT ARGS…: runs platscope with ARGS, its JSON to OUT; prints "seconds max_rss_kib".
timed() {
  local out=$1
  shift
  /usr/bin/time -f '%e %M' -o "$dir/time" "$platscope" "$@" > "$out"
  cat "$dir/time"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$dir/times"
for _ in $(seq "$runs"); do
  timed "$dir/report.json" --json fleet --from "$url" >> "$dir/times"
done
seconds=$(awk '{print $1}' "$dir/times" | median)
rss_mib=$(awk '{print $2}' "$dir/times" | median | awk '{printf "%.0f", $1 / 1024}')
read -r page_s page_rss < <(timed "$dir/page.txt" fleet --from "$url" --out "$dir/page")
page_kib=$(( $(stat -c %s "$dir/page/fleet.html") / 1024 ))
"$make_fleet" "${fleet_args[@]}" --judge "$dir/report.json" 2> "$dir/judge.log"
cat "$dir/judge.log" >&2
misses=$(grep -o '[0-9]* miss(es)' "$dir/judge.log")
summary=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['hosts']} hosts, {len(r['classes'])} classes, {len(r['outliers'])} outliers, {len(r['changes'])} changes, {len(r['config_changes_without_shift'])} configuration changes without a shift\")" "$dir/report.json")
shifts=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['shifts']))" "$dir/truth.json")

# The same fleet in a SQLite file.
"$make_fleet" "${fleet_args[@]}" --into "$dir/fleet.db" 2>/dev/null
read -r sqlite_s sqlite_rss < <(timed "$dir/sqlite.json" --db "$dir/fleet.db" --json fleet)
cmp -s "$dir/sqlite.json" "$dir/report.json" && same="the same JSON as from PostgreSQL" || same="JSON that differs from PostgreSQL's"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

section="<!-- fleet-scale:begin -->
## platscope fleet on $hosts hosts × $days days

\`bench/fleet_scale.sh $hosts $days $classes $runs\`: a throwaway PostgreSQL 15 (fsync off) filled by
\`examples/synthetic_fleet --into\` from the four real quick reports of an Intel Xeon KVM guest with 2 vCPUs
(\`crates/fleet/tests/fixtures\`): $reports reports, $figures headline figures, $((bytes / 1048576)) MiB
in the fleet tables (filled in $fill_s s), $shifts shifts injected. Release build, $(nproc) CPUs,
$(host_label), load average $load_before before and $load_after after.

| \`platscope fleet …\` | wall clock | peak memory |
|---|---|---|
| \`--from postgresql://… --json\` (median of $runs) | $seconds s | $rss_mib MiB |
| \`--from postgresql://… --out DIR\` (the page, $page_kib KiB) | $page_s s | $((page_rss / 1024)) MiB |
| \`--db FILE --json\` (the same fleet in SQLite) | $sqlite_s s | $((sqlite_rss / 1024)) MiB |

It found $summary; judged against what was injected: $misses. From SQLite: $same.
<!-- fleet-scale:end -->"
write_doc_section fleet-scale "$section"
echo "$section"
