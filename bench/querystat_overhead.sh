#!/usr/bin/env bash
# What tracing costs a PostgreSQL server: pgbench -S with nothing attached, traced by
# querystat, and traced by a bpftrace script doing the same counting, in the same run.
#
#   bench/querystat_overhead.sh [ROUNDS] [SECONDS]   (root; default 3 rounds of 10 s)
#
# Workloads, against a throwaway PostgreSQL 15 (scale 10, fsync off, 2 clients):
#   full speed   pgbench -S -c 2 -j 2 -T SECONDS          -- throughput loss, target <= 5%
#                                                           and at most half of bpftrace's
#   fixed rate   pgbench -S -c 2 -j 2 -T SECONDS -R RATE   -- RATE = a quarter of the untraced
#                full speed of the first round (well below saturation, so latency is the
#                queries' own and not queueing behind a backlog); throughput is the rate, so the cost shows as
#                latency (pgbench's average, measured from the scheduled start)
# Each round runs every (workload, tracer) pair once, in rotating order; the figure per pair is
# the median over rounds.
#
# querystat is driven through its example binary (crates/querystat/examples/querystat.rs)
# until the CLI is wired; the lead will switch this to `platscope db querystat`.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

rounds=${1:-3}
seconds=${2:-10}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (BPF)" >&2; exit 1; }
pgbin=/usr/lib/postgresql/15/bin
[ -x "$pgbin/pgbench" ] || apt-get install -y -qq postgresql-15 >/dev/null
command -v bpftrace >/dev/null || apt-get install -y -qq bpftrace >/dev/null
querystat=${QUERYSTAT:-target/release/examples/querystat}
[ -x "$querystat" ] || cargo build --release --locked -p querystat --example querystat >&2
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

# A throwaway server, stopped by its PID on exit.
dir=$(mktemp -d /tmp/psqs.XXXXXX)
chown postgres "$dir"
pgpid= tracer_pid=
cleanup() {
  [ -n "$tracer_pid" ] && kill -INT "$tracer_pid" 2>/dev/null && wait "$tracer_pid" 2>/dev/null
  if [ -n "$pgpid" ]; then
    kill -INT "$pgpid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pgpid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
runuser -u postgres -- "$pgbin/initdb" -D "$dir/data" -A trust -U platscope --no-sync > "$dir/initdb.log"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# exec: $! is the postmaster itself, not a subshell.
(cd "$dir" && exec runuser -u postgres -- "$pgbin/postgres" -D "$dir/data" -p "$port" -k "$dir" \
  -c listen_addresses=127.0.0.1 -c fsync=off > "$dir/server.log" 2>&1) &
sleep 0.5
pgpid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null || true)
for _ in $(seq 300); do
  [ "$(sed -n 8p "$dir/data/postmaster.pid" 2>/dev/null | tr -d ' ')" = ready ] && break
  sleep 0.1
done
pgpid=$(head -1 "$dir/data/postmaster.pid")
export PGHOST=$dir PGPORT=$port PGUSER=platscope PGDATABASE=postgres
"$pgbin/pgbench" -i -q -s 10 > /dev/null 2>&1

# The same counting as querystat: per-query latency histograms (all, pre-empted or not), buffer
# lookups, pre-emptors by name, throughput each second. bpftrace 0.17 (Debian 12) cannot read a
# USDT argument past arg5 ("x86_64 doesn't support arg7"), so it cannot split buffer lookups by
# buffer__read__done's found flag (arg7) or queries into hit/miss; it fires the same probes, and
# the probes' traps are most of the cost.
bin=$pgbin/postgres
bpftrace_script="
usdt:$bin:postgresql:query__execute__start { @start[tid] = nsecs; @pre[tid] = 0; }
usdt:$bin:postgresql:buffer__read__done /@start[tid]/ { @buffers = count(); }
tracepoint:sched:sched_switch /@start[args->prev_pid] && args->prev_state == 0/ {
  @pre[args->prev_pid] = 1; @preemptors[args->next_comm] = count();
}
usdt:$bin:postgresql:query__execute__done /@start[tid]/ {
  \$us = (nsecs - @start[tid]) / 1000;
  @all = hist(\$us);
  if (@pre[tid]) { @preempted = hist(\$us); } else { @not_preempted = hist(\$us); }
  @n = count();
  delete(@start[tid]); delete(@pre[tid]);
}
interval:s:1 { print(@n); clear(@n); }"

start_tracer() {
  case $1 in
    none) tracer_pid= ;;
    querystat) "$querystat" 1 --server postgres --pid "$pgpid" > /dev/null 2>&1 & tracer_pid=$! ;;
    bpftrace) bpftrace -e "$bpftrace_script" > /dev/null 2>&1 & tracer_pid=$! ;;
  esac
  [ -n "$tracer_pid" ] && sleep 3   # attached (bpftrace compiles first)
  return 0
}
# A tracer that is gone before the run ended has failed: the figure would be untraced.
stop_tracer() {
  if [ -n "$tracer_pid" ]; then
    kill -INT "$tracer_pid" 2>/dev/null || { echo "bench: the $1 tracer died during the run" >&2; exit 1; }
    wait "$tracer_pid" 2>/dev/null || true
  fi
  tracer_pid=
}

# "tps latency_ms" of one pgbench -S run (extra arguments: -R RATE).
run_pgbench() {
  "$pgbin/pgbench" -n -S -c 2 -j 2 -T "$seconds" "$@" 2>/dev/null | awk '
    /^latency average/ {lat = $4}
    /^tps/ {tps = $3}
    END {print tps, lat}'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A tps lat
tracers=(none querystat bpftrace)
rate=
for ((r = 0; r < rounds; r++)); do
  for w in full fixed; do
    for ((t = 0; t < ${#tracers[@]}; t++)); do
      tracer=${tracers[$(((t + r) % ${#tracers[@]}))]}
      if [ "$w" = fixed ] && [ -z "$rate" ]; then
        # A quarter of the untraced full speed of this round.
        rate=$(printf '%s' "${tps["full/none"]}" | median | awk '{printf "%d", $1 / 4}')
      fi
      start_tracer "$tracer"
      if [ "$w" = full ]; then read -r x l < <(run_pgbench); else read -r x l < <(run_pgbench -R "$rate"); fi
      stop_tracer "$tracer"
      tps["$w/$tracer"]+="$x"$'\n'
      lat["$w/$tracer"]+="$l"$'\n'
      echo "round $r: $w $tracer tps $x latency $l ms" >&2
    done
  done
done

# What the programs themselves cost per call (kernel.bpf_stats_enabled, one extra untimed
# traced run at full speed). A USDT probe's trap into the kernel and back is not in these.
sysctl -qw kernel.bpf_stats_enabled=1
start_tracer querystat
run_pgbench > /dev/null
bpf_ns=$(bpftool -j prog show | python3 -c 'import json, sys
ps = [p for p in json.load(sys.stdin) if p.get("name") in ("pg_begin", "pg_end", "pg_buffer_done", "qs_sched_switch")]
print(", ".join("%s %.0f ns" % (p["name"], p["run_time_ns"] / max(1, p["run_cnt"])) for p in sorted(ps, key=lambda p: p["name"])))')
stop_tracer querystat
sysctl -qw kernel.bpf_stats_enabled=0

med() { printf '%s' "$1" | median; }
full_base=$(med "${tps[full/none]}"); full_qs=$(med "${tps[full/querystat]}"); full_bt=$(med "${tps[full/bpftrace]}")
fix_base=$(med "${lat[fixed/none]}"); fix_qs=$(med "${lat[fixed/querystat]}"); fix_bt=$(med "${lat[fixed/bpftrace]}")
fixtps_base=$(med "${tps[fixed/none]}"); fixtps_qs=$(med "${tps[fixed/querystat]}"); fixtps_bt=$(med "${tps[fixed/bpftrace]}")
table=$(awk -v b="$full_base" -v q="$full_qs" -v t="$full_bt" -v lb="$fix_base" -v lq="$fix_qs" -v lt="$fix_bt" \
  -v fb="$fixtps_base" -v fq="$fixtps_qs" -v ft="$fixtps_bt" -v rate="$rate" 'BEGIN {
  lq_loss = (1 - q / b) * 100; lt_loss = (1 - t / b) * 100
  print "| workload | untraced | querystat | bpftrace | querystat loss / bpftrace loss |"
  print "|---|---|---|---|---|"
  printf "| pgbench -S full speed, tps | %.0f | %.0f (%.1f%% loss) | %.0f (%.1f%% loss) | %.2f |\n", b, q, lq_loss, t, lt_loss, (lt_loss > 0 ? lq_loss / lt_loss : 0)
  printf "| pgbench -S -R %d, average latency ms | %.3f | %.3f (%+.1f%%) | %.3f (%+.1f%%) | %.2f |\n", rate, lb, lq, (lq / lb - 1) * 100, lt, (lt / lb - 1) * 100, ((lt - lb) != 0 ? (lq - lb) / (lt - lb) : 0)
  printf "| pgbench -S -R %d, tps achieved | %.0f | %.0f | %.0f | |\n", rate, fb, fq, ft
}')
echo "$table"

cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
write_doc_section querystat-overhead "<!-- querystat-overhead:begin -->
## db querystat: overhead on the traced server

\`bench/querystat_overhead.sh $rounds $seconds\` on $(date -u +%Y-%m-%d): $cpu, $(nproc) CPUs,
kernel $(uname -r), load average $load_before before the run (the machine is shared: other
jobs' load is noise common to all three columns). $("$pgbin/postgres" --version), $(bpftrace --version | head -1). A throwaway
cluster (scale 10, fsync off, shared_buffers 128 MB), \`pgbench -n -S -c 2 -j 2 -T $seconds\` over the
Unix socket on the same 2 CPUs as the server, median of $rounds rounds in rotating order. querystat
ran as its example binary (\`crates/querystat/examples/querystat.rs\`; \`platscope db querystat\`
once the CLI is wired) with a 1 s interval. The bpftrace script keeps the same figures: USDT on
query__execute__start/done and buffer__read__done, latency histograms for all / pre-empted / not,
a count of buffer lookups, and pre-emptors from the classic sched_switch tracepoint; it filters by
thread ID in flight, where querystat also filters by the server's process tree. bpftrace 0.17
cannot read USDT arguments past arg5, so it counts buffer lookups without querystat's hit/read
split and per-query hit/miss histograms (the probes fired are the same).

$table

The programs themselves ran $bpf_ns per call (kernel.bpf_stats_enabled, one extra traced run);
each USDT probe also costs a breakpoint trap into the kernel and back, which is most of the
price: a pgbench -S query fires 2 probes for the query and one per buffer it looks up.
<!-- querystat-overhead:end -->"
