#!/usr/bin/env bash
# The load driver against pgbench and sysbench, same server, same statement, same run:
#
#   bench/load_driver.sh [SECONDS] [RATE] [ROUNDS]   (root; default 10 s per run, 1000 tx/s, 1 round)
#
# One throwaway PostgreSQL 15 (fsync off). pgbench's tables (scale 1: 100,000 accounts) and
# platscope's sbtest1 (100,000 rows) are both made. The statements are the same one-row point
# selects: pgbench -S (SELECT abalance FROM pgbench_accounts WHERE aid = :aid), platscope with a
# SQL file holding that statement with :rand(1,100000), sysbench oltp_point_select
# (SELECT c FROM sbtest1 WHERE id=?) on platscope's sbtest1. All prepared, connections = CPUs.
#
#   fixed rate   each tool at RATE tx/s for SECONDS: driver CPU per transaction (the whole
#                process, user + system, from /usr/bin/time: setup included alike), and latency
#                percentiles (pgbench from its per-transaction log, measured from the schedule
#                like platscope; sysbench's from enqueue, shown for what it is)
#   full speed   pgbench and sysbench without a rate; platscope at an offered rate far above
#                what the server can do (open loop: every connection always behind), so its
#                achieved rate is the highest it sustains
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

seconds=${1:-10}
rate=${2:-1000}
rounds=${3:-1}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (throwaway server)" >&2; exit 1; }
pgbin=/usr/lib/postgresql/15/bin
command -v sysbench >/dev/null || apt-get install -y -qq sysbench >/dev/null
platscope=target/release/platscope
cargo build --release --locked -q -p platscope >&2
conns=$(nproc)

dir=$(mktemp -d /tmp/psload.XXXXXX)
pgpid=
cleanup() {
  pg_stop
  rm -rf "$dir"
}
trap cleanup EXIT
pg_start "$dir" -c max_connections=50
url="host=$dir port=$port user=platscope dbname=postgres"

"$pgbin/pgbench" -i -q -s 1 > "$dir/pgbench-init.log" 2>&1
"$platscope" --no-store load prepare --server postgres --url "$url" --tables 1 --rows 100000 >/dev/null 2>&1
echo 'SELECT abalance FROM pgbench_accounts WHERE aid = :rand(1,100000);' > "$dir/select.sql"
sb=(sysbench --db-driver=pgsql --pgsql-host="$dir" --pgsql-port="$port" --pgsql-user=platscope
    --pgsql-db=postgres --tables=1 --table-size=100000 --threads="$conns" --time="$seconds"
    --percentile=99 oltp_point_select)

# cpu_us_per_tx TIMEFILE TX: user+system µs of the process per transaction.
cpu_us_per_tx() { awk -v tx="$2" '{printf "%.1f", ($1 + $2) * 1e6 / tx}' "$1"; }
# Percentiles (ms) of column 3 (µs) of pgbench's per-transaction logs.
pg_pctl() {
  cat "$dir"/pgbench_log.* | awk '{print $3}' | sort -n | awk '
    {a[NR]=$1} END {n=NR; split("0.5 0.9 0.99 0.999", q, " ");
      for (i=1;i<=4;i++) {k=int(q[i]*n+0.5); if (k<1) k=1; printf "%.3f ", a[k]/1000}
      printf "%.3f", a[n]/1000}'
}

# One round: every tool at the fixed rate, then at full speed.
one_round() {
  rm -f "$dir"/pgbench_log.*
  echo "bench: fixed rate $rate tx/s, $conns connections, $seconds s each" >&2
  # pgbench -R
  (cd "$dir" && /usr/bin/time -f "%U %S" -o "$dir/t.pgbench" "$pgbin/pgbench" -n -S -M prepared -c "$conns" -j "$conns" \
    -T "$seconds" -R "$rate" -l > "$dir/pgbench-rate.out" 2>&1)
  pg_tx=$(awk '/number of transactions actually processed/ {split($0,a,": "); split(a[2],b,"/"); print b[1]}' "$dir/pgbench-rate.out")
  pg_cpu=$(cpu_us_per_tx "$dir/t.pgbench" "$pg_tx")
  read -r pg50 pg90 pg99 pg999 pgmax <<<"$(pg_pctl)"
  pg_lat_avg=$(awk -F'= ' '/latency average/ {print $2}' "$dir/pgbench-rate.out")
  # sysbench --rate
  /usr/bin/time -f "%U %S" -o "$dir/t.sysbench" "${sb[@]}" --rate="$rate" run > "$dir/sysbench-rate.out" 2>&1 || true
  sb_tx=$(awk '/transactions:/ {print $2; exit}' "$dir/sysbench-rate.out")
  sb_cpu=$(cpu_us_per_tx "$dir/t.sysbench" "${sb_tx:-1}")
  sb99=$(awk '/99th percentile:/ {print $3}' "$dir/sysbench-rate.out")
  sb50=$(awk '/avg:/ {print $2; exit}' "$dir/sysbench-rate.out")
  # platscope load
  /usr/bin/time -f "%U %S" -o "$dir/t.platscope" "$platscope" --no-store --json load --server postgres --url "$url" \
    --rate "$rate" --connections "$conns" --duration "$seconds" --workload "$dir/select.sql" > "$dir/platscope-rate.json"
  ps_tx=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["completed"])' "$dir/platscope-rate.json")
  ps_cpu=$(cpu_us_per_tx "$dir/t.platscope" "$ps_tx")
  read -r ps50 ps90 ps99 ps999 psmax ps_in ps_srv dl50 dl999 dlmax dln <<<"$(python3 -c '
import json,sys; r=json.load(open(sys.argv[1])); l=r["latency"]; c=r.get("cost") or {}; d=r.get("driver_late") or {}
print(" ".join("%.3f" % (l[k]/1e6) for k in ("p50_ns","p90_ns","p99_ns","p999_ns","max_ns")),
      "%.1f" % c.get("driver_us_per_tx", float("nan")), "%.1f" % c.get("server_us_per_tx", float("nan")),
      " ".join("%.3f" % (d.get(k, 0)/1e6) for k in ("p50_ns","p999_ns","max_ns")), d.get("count", 0))' "$dir/platscope-rate.json")"

  echo "bench: full speed, $conns connections, $seconds s each" >&2
  "$pgbin/pgbench" -n -S -M prepared -c "$conns" -j "$conns" -T "$seconds" > "$dir/pgbench-full.out" 2>&1
  pg_full=$(awk '/^tps/ {printf "%.0f", $3; exit}' "$dir/pgbench-full.out")
  "${sb[@]}" run > "$dir/sysbench-full.out" 2>&1 || true
  sb_full=$(awk '/transactions:/ {gsub(/\(/,"",$3); printf "%.0f", $3; exit}' "$dir/sysbench-full.out")
  "$platscope" --no-store --json load --server postgres --url "$url" --rate 1000000 --connections "$conns" \
    --duration "$seconds" --workload "$dir/select.sql" > "$dir/platscope-full.json"
  ps_full=$(python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["achieved_rate"])' "$dir/platscope-full.json")
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "n/a"}'; }
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cpu_ratios=() full_ratios=() tail_ratios=() own_late=()
for ((round = 1; round <= rounds; round++)); do
  echo "bench: round $round of $rounds" >&2
  one_round
  cpu_ratios+=("$(ratio "$ps_cpu" "$pg_cpu")")
  full_ratios+=("$(ratio "$ps_full" "$pg_full")")
  tail_ratios+=("$(ratio "$ps999" "$pg999")")
  own_late+=("$dl999")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
section="<!-- load_driver:begin -->
## Load driver: platscope load vs pgbench -R and sysbench --rate

\`bench/load_driver.sh $seconds $rate\` on $(date -u +%Y-%m-%d): $cpu, $conns CPUs, $(uname -r),
PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}'), pgbench of the same, sysbench $(sysbench --version | awk '{print $2}').
$rounds round(s), each one run of every tool one after another, against one throwaway server (fsync off) over its Unix socket;
$conns connections (one per CPU), prepared statements, one-row point selects. Load average before: $load_before; after: $load_after.
Server, driver and any other load share the same $conns CPUs, so full-speed figures are a property of this small machine, not of the drivers alone.
The table is the last round.

| at $rate tx/s, $seconds s | transactions | driver CPU µs/tx (whole process) | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |
|---|---|---|---|---|---|---|---|
| platscope load | $ps_tx | $ps_cpu (in-run: $ps_in) | $ps50 | $ps90 | $ps99 | $ps999 | $psmax |
| pgbench -R (from its log) | $pg_tx | $pg_cpu | $pg50 | $pg90 | $pg99 | $pg999 | $pgmax |
| sysbench --rate (from enqueue) | ${sb_tx:-n/a} | $sb_cpu | avg ${sb50:-n/a} | | ${sb99:-n/a} | | |

- Driver CPU per transaction, platscope ÷ pgbench: **$(ratio "$ps_cpu" "$pg_cpu")** (goal ≤ 1); platscope ÷ sysbench: $(ratio "$ps_cpu" "$sb_cpu").
- Server CPU per transaction seen by platscope at this rate: $ps_srv µs (postmaster tree). pgbench's average latency: $pg_lat_avg.
- Full speed ($conns connections, tx/s): platscope $ps_full (offered 1,000,000 tx/s, open loop), pgbench $pg_full, sysbench ${sb_full:-n/a};
  platscope ÷ pgbench **$(ratio "$ps_full" "$pg_full")**, ÷ sysbench $(ratio "$ps_full" "${sb_full:-0}") (goal ≥ 1).
- Per round (platscope ÷ pgbench): driver CPU per transaction ${cpu_ratios[*]} (median $(median "${cpu_ratios[@]}"));
  full-speed throughput ${full_ratios[*]} (median $(median "${full_ratios[@]}")); p99.9 at the fixed rate ${tail_ratios[*]} (median $(median "${tail_ratios[@]}"); goal ≤ 1.25).
- How late platscope itself was (it woke to send the $dln transactions whose connection was waiting, of $ps_tx): p50 $dl50 ms,
  p99.9 $dl999 ms, max $dlmax ms in the last round; p99.9 by round ${own_late[*]} ms. What its p99.9 latency has beyond this
  is the server's (and the kernel's) time, not the driver's.
- Both platscope and pgbench measure latency from the scheduled start, so their percentiles should agree within noise;
  sysbench 1.0 measures from when the event was queued and is shown only for contrast.
- platscope talks to PostgreSQL through its own synchronous client on a blocking socket (\`loadgen/src/pgwire.rs\`:
  a prepared statement's Bind/Execute/Sync in one write from a kept buffer, the answer read into a kept buffer);
  pgbench and sysbench call libpq. Neither has been profiled here.
<!-- load_driver:end -->"
write_doc_section load_driver "$section"
printf '%s\n' "$section"
