#!/usr/bin/env bash
# What tracing costs a PostgreSQL server: pgbench -S with nothing attached, traced by
# querystat, and traced by a bpftrace script doing the same counting, in the same run.
#
#   bench/querystat_overhead.sh [ROUNDS] [SECONDS]   (root; default 3 rounds of 10 s)
#
# Workloads, against a throwaway PostgreSQL 15 (scale 10, fsync off, 2 clients):
#   full speed   pgbench -S -c 2 -j 2 -T SECONDS          -- throughput loss, target <= 5%
#                                                           and at most half of bpftrace's;
#                also querystat --buffer-hits (a probe per buffer lookup)
#   fixed rate   pgbench -S -c 2 -j 2 -T SECONDS -R RATE   -- RATE = a tenth of the untraced
#                full speed of the first round (well below saturation, so latency is the
#                queries' own and not queueing behind a backlog); throughput is the rate, so the cost shows as
#                latency (pgbench's average, measured from the scheduled start)
# Each round runs every (workload, tracer) pair once, in rotating order; the figure per pair is
# the median over rounds. Every run also records the server's CPU time per query (the
# postmaster and its reaped backends), which other load on a shared machine does not move.
#
# Then each tracer's BPF programs are timed by the kernel (kernel.bpf_stats_enabled, set back
# as it was afterwards) over untimed runs, three turns in rotating order: runs and ns per run
# of every program, the floor's included, and their time per query.
#
# querystat runs as `platscope --no-store db querystat` (release build; PLATSCOPE=/path/to/platscope
# runs that binary instead).
#   PLATSCOPE_BEFORE=/path/to/older/platscope bench/querystat_overhead.sh …
#     also runs an older build as one more tracer in the same rounds (column "before") and
#     times its programs in the same turns: the before and after of a change to the programs.
#     Build it from the commit before the change, e.g.
#       git worktree add /tmp/before COMMIT && (cd /tmp/before && cargo build --release -p platscope)
#       PLATSCOPE_BEFORE=/tmp/before/target/release/platscope bench/querystat_overhead.sh
#
#   bench/querystat_overhead.sh --above-floor [ROUNDS] [SECONDS]   (default 160 rounds of 2 s)
#     only what querystat adds above the floor, judged on rounds: one pgbench at full speed
#     for the whole run, untraced, floor and querystat switched under it in rotating order each
#     round, SECONDS seconds each (short: the host's speed drifts over tens of seconds, and
#     windows close together cancel more of that than long ones); per round the floor's own
#     cost and querystat's on top of it in server CPU per query, then their medians over
#     rounds, a 95% interval from the rounds resampled, and the same from the kernel's timing
#     of the programs. Written to its own section of docs/benchmarks.md.
#
#   bench/querystat_overhead.sh --costs-only [TURNS] [SECONDS]   (default 3 turns of 5 s)
#     only the kernel's timing of each tracer's programs (the last part above), printed and
#     not written to docs/benchmarks.md: per-event figures, which other load on the machine
#     moves far less than throughput, to compare two builds of the programs quickly.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

costs_only= above_floor_only=
case ${1:-} in
  --costs-only) costs_only=1; shift ;;
  --above-floor) above_floor_only=1; shift ;;
esac
rounds=${1:-3}
seconds=${2:-10}
[ -n "$costs_only" ] && seconds=${2:-5}
[ -n "$above_floor_only" ] && rounds=${1:-160} && seconds=${2:-2}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (BPF)" >&2; exit 1; }
pgbin=/usr/lib/postgresql/15/bin
[ -x "$pgbin/pgbench" ] || apt-get install -y -qq postgresql-15 >/dev/null
for tool in bpftrace bpftool; do
  command -v "$tool" >/dev/null || apt-get install -y -qq "$tool" >/dev/null
done
# PLATSCOPE=/path/to/platscope: that binary instead of building the release one.
if [ -n "${PLATSCOPE:-}" ]; then
  platscope=$PLATSCOPE
else
  platscope=target/release/platscope
  cargo build --release --locked -q -p platscope >&2
fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

# A throwaway server, stopped by its PID on exit.
dir=$(mktemp -d /tmp/psqs.XXXXXX)
pgpid= tracer_pid= sampler_pid= pgbench_pid=
cleanup() {
  [ -n "$tracer_pid" ] && kill -INT "$tracer_pid" 2>/dev/null && wait "$tracer_pid" 2>/dev/null
  [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null
  [ -n "$pgbench_pid" ] && kill -INT "$pgbench_pid" 2>/dev/null
  bpf_stats_restore
  pg_stop
  rm -rf "$dir"
}
trap cleanup EXIT
# Before the cluster is built: its initdb and pgbench -i raise the load this would record.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
pg_start "$dir"
"$pgbin/pgbench" -i -q -s 10 > /dev/null 2>&1

# The same counting as querystat: per-query latency histograms (all, pre-empted or not, hit or
# miss: a miss read at least one block in), blocks read, pre-emptors by name, throughput each
# second.
bin=$pgbin/postgres
bpftrace_script="
usdt:$bin:postgresql:query__execute__start { @start[tid] = nsecs; @pre[tid] = 0; @reads[tid] = 0; }
usdt:$bin:postgresql:smgr__md__read__done /@start[tid]/ { @reads[tid] = 1; @blocks_read = count(); }
tracepoint:sched:sched_switch /@start[args->prev_pid] && args->prev_state == 0/ {
  @pre[args->prev_pid] = 1; @preemptors[args->next_comm] = count();
}
usdt:$bin:postgresql:query__execute__done /@start[tid]/ {
  \$us = (nsecs - @start[tid]) / 1000;
  @all = hist(\$us);
  if (@pre[tid]) { @preempted = hist(\$us); } else { @not_preempted = hist(\$us); }
  if (@reads[tid]) { @miss = hist(\$us); } else { @hit = hist(\$us); }
  @n = count();
  delete(@start[tid]); delete(@pre[tid]); delete(@reads[tid]);
}
interval:s:1 { print(@n); clear(@n); }"

start_tracer() {
  : > "$dir/tracer.out"
  case $1 in
    none) tracer_pid= ;;
    querystat) "$platscope" --no-store db querystat 1 --server postgres --pid "$pgpid" > "$dir/tracer.out" 2>&1 & tracer_pid=$! ;;
    querystat-hits) "$platscope" --no-store db querystat 1 --server postgres --pid "$pgpid" --buffer-hits > "$dir/tracer.out" 2>&1 & tracer_pid=$! ;;
    before) "$PLATSCOPE_BEFORE" --no-store db querystat 1 --server postgres --pid "$pgpid" > "$dir/tracer.out" 2>&1 & tracer_pid=$! ;;
    floor) "$platscope" --no-store db querystat 1 --server postgres --pid "$pgpid" --empty-programs > "$dir/tracer.out" 2>&1 & tracer_pid=$! ;;
    bpftrace) bpftrace -e "$bpftrace_script" > /dev/null 2>&1 & tracer_pid=$! ;;
  esac
  case $1 in
    none) ;;
    bpftrace) sleep 3 ;;  # compiles, then attaches
    *)  # querystat says when its programs are attached; 10 s at most
      for _ in $(seq 100); do grep -q "^Tracing started" "$dir/tracer.out" && break; sleep 0.1; done
      grep -q "^Tracing started" "$dir/tracer.out" || { echo "bench: the $1 tracer did not start: $(cat "$dir/tracer.out")" >&2; exit 1; }
      sleep 0.5 ;;
  esac
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

# The server's CPU time in clock ticks: the postmaster's own and that of its children reaped
# so far (each run's backends exit and are reaped after it). Tracing cost is charged to the
# traced threads (probe traps, programs), so this counts it whatever else loads the machine.
server_ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$pgpid/stat"; }
hz=$(getconf CLK_TCK)

# "tps latency_ms server_cpu_us_per_query p50_ms p99_ms" of one pgbench -S run (extra
# arguments: -R RATE). p50 and p99 come from pgbench's per-transaction log (-l: latency in µs,
# from the scheduled start under -R), only at a fixed rate (logging costs the client at full
# speed).
run_pgbench() {
  local t0 t1 out pct="- -" log=()
  [ "$#" -gt 0 ] && log=(-l --log-prefix="$dir/tx")
  rm -f "$dir"/tx.*
  sleep 0.5; t0=$(server_ticks)
  out=$(cd "$dir" && "$pgbin/pgbench" -n -S -c 2 -j 2 -T "$seconds" "${log[@]}" "$@" 2>/dev/null)
  sleep 0.5; t1=$(server_ticks)
  if [ "$#" -gt 0 ]; then
    pct=$(cat "$dir"/tx.* | awk '{print $3}' | sort -g | awk '{a[NR] = $1} END {
      printf "%.3f %.3f", a[int((NR + 1) / 2)] / 1000, a[int(NR * 0.99 + 0.5)] / 1000}')
  fi
  awk -v t0="$t0" -v t1="$t1" -v hz="$hz" -v pct="$pct" '
    /^number of transactions actually processed/ {split($NF, a, "/"); n = a[1]}
    /^latency average/ {lat = $4}
    /^tps/ {tps = $3}
    END {printf "%s %s %.2f %s\n", tps, lat, (t1 - t0) / hz * 1e6 / n, pct}' <<< "$out"
}

declare -A tps lat scpu lat50 lat99
rate=
for ((r = 0; r < rounds && !costs_only && !above_floor_only; r++)); do
  for w in full fixed; do
    if [ "$w" = full ]; then tracers=(none floor querystat querystat-hits bpftrace); else tracers=(none floor querystat bpftrace); fi
    [ -n "${PLATSCOPE_BEFORE:-}" ] && tracers+=(before)
    for ((t = 0; t < ${#tracers[@]}; t++)); do
      tracer=${tracers[$(((t + r) % ${#tracers[@]}))]}
      if [ "$w" = fixed ] && [ -z "$rate" ]; then
        # A tenth of the untraced full speed of the first round: far enough below saturation
        # on a 2-CPU machine (server, pgbench and tracer share it) that a few µs more per
        # query do not turn into queueing.
        rate=$(printf '%s' "${tps["full/none"]}" | median | awk '{printf "%d", $1 / 10}')
      fi
      start_tracer "$tracer"
      if [ "$w" = full ]; then read -r x l c p50 p99 < <(run_pgbench); else read -r x l c p50 p99 < <(run_pgbench -R "$rate"); fi
      stop_tracer "$tracer"
      tps["$w/$tracer"]+="$x"$'\n'
      lat["$w/$tracer"]+="$l"$'\n'
      scpu["$w/$tracer"]+="$c"$'\n'
      if [ "$w" = fixed ]; then
        lat50["$w/$tracer"]+="$p50"$'\n'
        lat99["$w/$tracer"]+="$p99"$'\n'
      fi
      echo "round $r: $w $tracer tps $x latency $l ms (p50 $p50, p99 $p99) server CPU $c us/query" >&2
    done
  done
done

# --above-floor: one pgbench for all the rounds, the tracers switched under it (untraced, floor,
# querystat in rotating order each round). A pgbench run per figure forks fresh backends, and
# fresh backends' CPU per query differs by more than querystat's cost from one to the next;
# here the same two backends serve every window. A window: the tracer attached, half a second,
# then SECONDS seconds, over which pgbench's progress lines (each second: its rate since the
# last) count the queries and the server's CPU (/proc/PID/schedstat in ns: the postmaster and
# the children it had once pgbench connected) is read as each line arrives.
windows=$dir/windows
if [ -n "$above_floor_only" ]; then
  : > "$windows"
  exec 3< <(cd "$dir" && exec "$pgbin/pgbench" -n -S -c 2 -j 2 -T $((rounds * 3 * (seconds + 6) + 30)) \
    -P 1 --progress-timestamp 2>&1 > /dev/null)
  pgbench_pid=$!
  sleep 2
  kill -0 "$pgbench_pid" 2>/dev/null || { echo "bench: pgbench did not start" >&2; exit 1; }
  server_pids=()
  for p in "$pgpid" $(pgrep -P "$pgpid"); do [ -r "/proc/$p/schedstat" ] && server_pids+=("$p"); done
  # "PROGRESS_TIME TPS SERVER_NS" per progress line.
  ( while read -r line <&3; do
      total=0
      for p in "${server_pids[@]}"; do read -r ns _ < "/proc/$p/schedstat" 2>/dev/null && total=$((total + ns)) || true; done
      [[ $line =~ ^progress:\ ([0-9.]+)\ s,\ ([0-9.]+)\ tps ]] && echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} $total"
    done > "$dir/server_cpu" ) &
  sampler_pid=$!
  # Real-time, so the reading follows the line by microseconds, not a time slice.
  chrt -f -p 10 "$sampler_pid" > /dev/null
  tracers=(none floor querystat)
  for ((r = 0; r < rounds; r++)); do
    for ((t = 0; t < 3; t++)); do
      tracer=${tracers[$(((t + r) % 3))]}
      start_tracer "$tracer"
      from=$EPOCHREALTIME
      sleep "$seconds"
      to=$EPOCHREALTIME
      stop_tracer "$tracer"
      echo "$r $tracer $from $to" >> "$windows"
      echo "round $r: $tracer from $from to $to" >&2
    done
  done
  kill -INT "$pgbench_pid" 2>/dev/null || true
  wait "$sampler_pid" 2>/dev/null || true
  exec 3<&-
  sampler_pid= pgbench_pid=
fi

# What each BPF program itself costs per run (kernel.bpf_stats_enabled: two clock reads around
# every program run, so these runs are not the timed ones): each tracer at full speed for up to
# 5 s, three turns in rotating order, the programs' counters read just before and after
# pgbench. A USDT probe's trap into the kernel and back is not in these.
cost_seconds=$((seconds < 5 ? seconds : 5))
cost_turns=3
[ -n "$costs_only" ] && cost_turns=$rounds
cost_tracers=(floor querystat querystat-hits bpftrace)
[ -n "$above_floor_only" ] && cost_tracers=(floor querystat)
[ -n "${PLATSCOPE_BEFORE:-}" ] && [ -z "$above_floor_only" ] && cost_tracers+=(before)
costs=$dir/bpf_costs
: > "$costs"
bpf_stats_on
for ((turn = 0; turn < cost_turns; turn++)); do
  for ((t = 0; t < ${#cost_tracers[@]}; t++)); do
    tracer=${cost_tracers[$(((t + turn) % ${#cost_tracers[@]}))]}
    start_tracer "$tracer"
    runs_before=$(bpf_prog_runs "$tracer_pid")
    queries=$(cd "$dir" && "$pgbin/pgbench" -n -S -c 2 -j 2 -T "$cost_seconds" 2>/dev/null \
      | awk '/^number of transactions actually processed/ {split($NF, a, "/"); print a[1]}')
    runs_after=$(bpf_prog_runs "$tracer_pid")
    stop_tracer "$tracer"
    bpf_prog_delta "$runs_before" "$runs_after" | sed "s/^/$tracer $turn ${queries:-0} /" >> "$costs"
  done
done
bpf_stats_restore
cost_table=$(bpf_cost_table "$costs" query)
if [ -n "$costs_only" ]; then
  echo "BPF programs timed by the kernel: pgbench -S -c 2 -j 2 at full speed for $cost_seconds s, $cost_turns turns in rotating order, load average $load_before before the run, kernel $(uname -r)"
  echo "$cost_table"
  exit 0
fi

med() { printf '%s' "$1" | median; }

if [ -n "$above_floor_only" ]; then
  # Round by round: server CPU per query untraced, with the floor, with querystat, each over its
  # window's progress lines; the floor's own cost and querystat's on top of it. Then a last line:
  # rounds, the medians of those two costs, rounds at or under the goal, and how far the ratio
  # could be from what these rounds give (rounds resampled with replacement 2,000 times; the
  # 2.5th and 97.5th percentiles of median(added) / median(floor's cost)).
  analysis=$(python3 - "$windows" "$dir/server_cpu" <<'PY'
import random, statistics, sys
windows, cpu_log = sys.argv[1], sys.argv[2]
# Progress lines: (time, rate over the second before it, server CPU ns when it arrived).
lines = [tuple(float(x) for x in l.split()) for l in open(cpu_log)]
rounds = {}
for line in open(windows):
    r, tracer, a, b = line.split()
    a, b = float(a), float(b)
    inside = [l for l in lines if a <= l[0] <= b]
    if len(inside) < 2:
        print(f"bench: round {r}, {tracer}: fewer than two progress lines in its window", file=sys.stderr)
        continue
    queries = sum(rate * (t - prev[0]) for prev, (t, rate, _) in zip(inside, inside[1:]))
    seconds = inside[-1][0] - inside[0][0]
    cpu_ns = inside[-1][2] - inside[0][2]
    rounds.setdefault(int(r), {})[tracer] = (cpu_ns / 1e3 / queries, queries / seconds)
costs = []  # (floor's cost, querystat above it) per round
for r in sorted(rounds):
    w = rounds[r]
    if len(w) < 3:
        continue
    (u, ut), (f, ft), (q, qt) = w["none"], w["floor"], w["querystat"]
    costs.append((f - u, q - f))
    print(f"| {r + 1} | {u:.2f} | {f:.2f} | {q:.2f} | {f - u:+.2f} | {q - f:+.2f} | {ut:.0f} | {ft:.0f} | {qt:.0f} |")
if not costs:
    sys.exit("bench: no round measured all three")
floor = statistics.median(c[0] for c in costs)
added = statistics.median(c[1] for c in costs)
below = sum(1 for f, a in costs if a <= 0.25 * f)
random.seed(1)
ratios = []
for _ in range(2000):
    sample = random.choices(costs, k=len(costs))
    m = statistics.median(c[0] for c in sample)
    if m > 0:
        ratios.append(statistics.median(c[1] for c in sample) / m)
ratios.sort()
interval = f"{ratios[int(len(ratios) * 0.025)]:.2f} to {ratios[int(len(ratios) * 0.975) - 1]:.2f}" if ratios else "none"
print(f"summary\t{len(costs)}\t{floor:.4f}\t{added:.4f}\t{below}\t{interval}")
PY
)
  per_round=$(grep '^|' <<< "$analysis")
  IFS=$'\t' read -r _ counted floor_us added_us below interval < <(grep '^summary' <<< "$analysis")
  # The kernel's timing: all of querystat's programs per query over all of the floor's.
  k_floor=$(awk '$1 == "|" && $2 == "floor" && /all of them/ {print $(NF - 1)}' <<< "$cost_table")
  k_qs=$(awk '$1 == "|" && $2 == "querystat" && /all of them/ {print $(NF - 1)}' <<< "$cost_table")
  verdict=$(awk -v f="$floor_us" -v a="$added_us" -v kf="$k_floor" -v kq="$k_qs" -v n="$counted" -v below="$below" -v ci="$interval" 'BEGIN {
    if (f <= 0) {printf "the floor cost nothing measurable (median %+.2f us per query): no ratio.", f; exit}
    printf "median over %d rounds: the floor costs %.2f us of server CPU per query, querystat %+.2f us on top of it: **%.2f** of the floor'"'"'s own cost (goal: at most 0.25; %d of %d rounds at or under it; 95%% interval over the rounds resampled %s). ", n, f, a, a / f, below, n, ci
    printf "By the kernel'"'"'s timing of the programs (below), querystat'"'"'s run %d ns per query against the floor'"'"'s %d: %d ns above it, **%.2f** of the floor'"'"'s measured cost.", kq, kf, kq - kf, (kq - kf) / (f * 1000)}')
  echo "$per_round"
  echo "$verdict"
  echo "$cost_table"
  cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
  write_doc_section querystat-above-floor "<!-- querystat-above-floor:begin -->
## db querystat: its cost above the floor, judged on rounds

\`bench/querystat_overhead.sh --above-floor $rounds $seconds\` on $(date -u +%Y-%m-%d): $cpu, $(nproc) CPUs,
kernel $(uname -r), load average $load_before before the run and $(cut -d' ' -f1-3 /proc/loadavg) after
(nothing else running). $("$pgbin/postgres" --version). One \`pgbench -n -S -c 2 -j 2\` at full speed
for the whole run against a throwaway cluster (scale 10, fsync off), and under it, in rotating
order each round, nothing, the floor (\`db querystat --empty-programs\`: empty programs at the
same USDT probes and sched_switch) and querystat, each for $seconds seconds once attached. The
same two backends serve every window: a fresh pgbench per figure forks fresh backends, and their
CPU per query differs from one pair to the next by more than the cost measured. Server CPU per
query: the postmaster's and its children's run time (/proc/PID/schedstat, ns) over the window,
over the queries pgbench's progress lines count in it, judged round by round (a round's three
windows lie within 20 s).

| round | untraced us/query | floor | querystat | floor's cost | querystat above the floor | untraced tps | floor tps | querystat tps |
|---|---|---|---|---|---|---|---|---|
$per_round

$verdict

The programs as the kernel times them (kernel.bpf_stats_enabled, $cost_turns turns of
\`pgbench -S\` for $cost_seconds s in rotating order; a run's time includes the statistics' own two
clock reads; the USDT traps, most of the floor's cost, are not in these):

$cost_table
<!-- querystat-above-floor:end -->"
  exit 0
fi
row() {  # label, metric array name, workload, format, tracers...
  local label=$1 arr=$2 w=$3 fmt=$4 base v cells=""
  local -n a=$arr
  base=$(med "${a[$w/none]}")
  cells=$(printf "$fmt" "$base")
  for tr in floor querystat querystat-hits bpftrace before; do
    if [ -z "${a[$w/$tr]:-}" ]; then cells+=" | -"; continue; fi
    v=$(med "${a[$w/$tr]}")
    cells+=" | $(printf "$fmt" "$v") ($(awk -v v="$v" -v b="$base" 'BEGIN {printf "%+.1f%%", (v / b - 1) * 100}'))"
  done
  echo "| $label | $cells |"
}
ratio() {  # querystat's loss over bpftrace's, for one metric
  local arr=$1 w=$2 sign=$3
  local -n a=$arr
  awk -v b="$(med "${a[$w/none]}")" -v q="$(med "${a[$w/querystat]}")" -v t="$(med "${a[$w/bpftrace]}")" -v s="$sign" \
    'BEGIN {ql = s * (q / b - 1); tl = s * (t / b - 1); if (tl > 0) printf "%.2f", ql / tl; else printf "n/a (bpftrace cost nothing measurable)"}'
}
table="| metric (median of $rounds) | untraced | empty programs (floor) | querystat | querystat --buffer-hits | bpftrace | before (PLATSCOPE_BEFORE) |
|---|---|---|---|---|---|---|
$(row "full speed: tps" tps full "%.0f")
$(row "full speed: server CPU us per query" scpu full "%.2f")
$(row "-R $rate: server CPU us per query" scpu fixed "%.2f")
$(row "-R $rate: average latency ms" lat fixed "%.3f")
$(row "-R $rate: p50 latency ms" lat50 fixed "%.3f")
$(row "-R $rate: p99 latency ms" lat99 fixed "%.3f")
$(row "-R $rate: tps achieved" tps fixed "%.0f")"
spread=$(printf '%s' "${tps[full/none]}" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f to %.0f", lo, hi}')
# What querystat adds above the floor (empty programs at the same probes and sched_switch),
# over what the floor itself costs: goal at most 0.25.
above_floor() {  # metric array name, workload, sign[, tracer: querystat]
  local arr=$1 w=$2 sign=$3 tr=${4:-querystat}
  local -n a=$arr
  awk -v b="$(med "${a[$w/none]}")" -v f="$(med "${a[$w/floor]}")" -v q="$(med "${a[$w/$tr]}")" -v s="$sign" -v tr="$tr" \
    'BEGIN {fl = s * (f / b - 1); ad = s * (q / f - 1); if (fl > 0) printf "%.2f", ad / fl; else printf "n/a (the floor cost nothing measurable; %s %+.1f%% over it)", tr, ad * 100}'
}
floor_line="Above the floor (empty programs attached at the same USDT probes and sched_switch): querystat's added cost over the floor's own, full-speed throughput $(above_floor tps full -1), server CPU per query at full speed $(above_floor scpu full 1), at -R $rate $(above_floor scpu fixed 1), fixed-rate average latency $(above_floor lat fixed 1), p50 $(above_floor lat50 fixed 1) (goal: at most 0.25)."
if [ -n "${PLATSCOPE_BEFORE:-}" ]; then
  floor_line+=" The older build (column before, $("$PLATSCOPE_BEFORE" --version | head -1)) in the same rounds: full-speed throughput $(above_floor tps full -1 before), server CPU per query at full speed $(above_floor scpu full 1 before), at -R $rate $(above_floor scpu fixed 1 before)."
fi
summary="Untraced full-speed throughput ranged from $spread tps across rounds. querystat's cost over bpftrace's doing the same counting: full-speed throughput loss $(ratio tps full -1), server CPU per query at full speed $(ratio scpu full 1), at -R $rate $(ratio scpu fixed 1) (goal: at most 0.5)."
echo "$table"
echo "$summary"
echo "$floor_line"
echo
echo "$cost_table"
base_us=$(med "${scpu[full/none]}")
added_us=$(awk -v q="$(med "${scpu[full/querystat]}")" -v b="$base_us" 'BEGIN {printf "%.1f", q - b}')

cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
write_doc_section querystat-overhead "<!-- querystat-overhead:begin -->
## db querystat: overhead on the traced server

\`bench/querystat_overhead.sh $rounds $seconds\` on $(date -u +%Y-%m-%d): $cpu, $(nproc) CPUs,
kernel $(uname -r), load average $load_before before the run (any other
jobs' load is noise common to all columns). $("$pgbin/postgres" --version), $(bpftrace --version | head -1). A throwaway
cluster (scale 10, fsync off, shared_buffers 128 MB), \`pgbench -n -S -c 2 -j 2 -T $seconds\` over the
Unix socket on the same 2 CPUs as the server, median of $rounds rounds in rotating order. querystat
ran as \`platscope --no-store db querystat\` with a 1 s interval. The bpftrace script keeps the same figures: USDT on
query__execute__start/done and smgr__md__read__done, latency histograms for all / pre-empted / not
/ hit / miss, blocks read, and pre-emptors from the classic sched_switch tracepoint; it filters by
thread ID in flight, where querystat also filters by the server's process tree. (bpftrace 0.17
cannot read USDT arguments past arg5, so it has no equivalent of \`--buffer-hits\`, whose found
flag is arg7.)

$table

$summary

$floor_line

Server CPU per query is the postmaster's CPU time plus that of its reaped children (the
backends; clock ticks from /proc/PID/stat) over the queries pgbench completed: tracing's cost is
charged to the traced threads, so other load on this shared machine moves it less than
throughput and latency (the fixed-rate latency above is dominated by that load: pgbench measures
from the scheduled start, and a stall of another job's making delays every query behind it).
\`--buffer-hits\` adds \`buffer__read__done\`, one probe per buffer lookup (about 3 per pgbench -S
query), to count shared-buffer hits exactly; without it a query's hit or miss comes from
\`smgr__md__read__done\`, which fires only when a block is read in.

What each tracer's BPF programs cost by themselves, as the kernel times them
(kernel.bpf_stats_enabled, over untimed runs of \`pgbench -S\` at full speed for $cost_seconds s,
$cost_turns turns in rotating order; a run's time includes the statistics' own two clock reads,
which the floor's empty programs show; \`--costs-only\` runs this part alone):

$cost_table

Each USDT probe also costs a breakpoint trap into the kernel and back (its site is a 1-byte
nop, which x86 emulates, so there is no single-step; bench/uprobe_site_cost.sh times one hit),
which is most of the price: a pgbench -S query with a warm cache
fires 2 probes: querystat added $added_us us of server CPU per query to $base_us us here. On a
query this short that is why the goal of at most 5% throughput loss at full speed may
not be met on a VM; compare querystat's cost with bpftrace's doing the same counting above
(bpftrace pays the same traps, plus a classic-tracepoint sched_switch handler with more map
work).
<!-- querystat-overhead:end -->"
