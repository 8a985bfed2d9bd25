#!/usr/bin/env bash
# What tracing costs the traced workload: fio throughput with nothing attached, with
# `platscope io pattern` running, and with an equivalent bpftrace script (per-fd
# sequential/random tally of pread64 on the syscall tracepoints), in the same run.
#
#   bench/io_pattern_overhead.sh [ROUNDS] [SECONDS]   (root; default 5 rounds of 5 s)
#   PLATSCOPE=/path/to/platscope: that binary instead of the release build.
#   PLATSCOPE_BEFORE=/path/to/older/platscope bench/io_pattern_overhead.sh …
#     also measures an older build in the same rounds, and times its programs in the same
#     turns (a before/after of a change). Build it from the commit before the change, e.g.
#       git worktree add /tmp/before COMMIT && (cd /tmp/before && cargo build --release -p platscope)
#       PLATSCOPE_BEFORE=/tmp/before/target/release/platscope bench/io_pattern_overhead.sh
#
# Workloads (fio, psync engine = pread64, one job, a 1 GiB file kept in the page cache so the
# calls are what is measured, not the disk):
#   4k-random   rw=randread bs=4k      -- targets: platscope overhead <= 15%
#   128k-seq    rw=read     bs=128k    --                             <= 3%
# Each round runs every (workload, tracer) pair once, in rotating order; the figure per
# pair is the median over rounds, and the overhead is 1 - median(traced)/median(untraced).
# Then each tracer's BPF programs are timed by the kernel (kernel.bpf_stats_enabled, set back
# as it was afterwards) over untimed 4 KiB runs, three turns in rotating order: runs and ns
# per run of every program, the floor's included, and their time per read.
# Debian's biopattern (bpfcc-tools) works at the block layer: a cached pread never reaches
# it, so it would cost nothing here and measure nothing; it is not run.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

rounds=${1:-5}
seconds=${2:-5}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (BPF)" >&2; exit 1; }
for tool in fio bpftrace bpftool; do
  command -v "$tool" >/dev/null || apt-get install -y -qq "$tool" >/dev/null
done
# Before anything of the bench's own runs: other work on the machine moves every column.
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
platscope=${PLATSCOPE:-target/release/platscope}
[ -x "$platscope" ] || cargo build --release --locked -p platscope >&2
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing

dir=$(mktemp -d /var/tmp/psio.XXXXXX)
tracer_pid=
cleanup() { [ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null; bpf_stats_restore; rm -rf "$dir"; }
trap cleanup EXIT
file=$dir/data
fio --name=fill --filename="$file" --rw=write --bs=1m --size=1g --output=/dev/null
cat "$file" > /dev/null

bpftrace_script='
tracepoint:syscalls:sys_enter_pread64 { @off[tid] = args->pos; @fd[tid] = args->fd + 1; }
tracepoint:syscalls:sys_exit_pread64 /@fd[tid]/ {
  if (args->ret > 0) {
    if (@next[pid, @fd[tid]] == @off[tid]) { @seq = count(); } else { @rnd = count(); }
    @next[pid, @fd[tid]] = @off[tid] + args->ret;
  }
  delete(@off[tid]); delete(@fd[tid]);
}
interval:s:1 { clear(@seq); clear(@rnd); }'

start_tracer() {
  case $1 in
    none) tracer_pid= ;;
    platscope) "$platscope" --no-store io pattern 1 > /dev/null 2>&1 & tracer_pid=$! ;;
    floor) "$platscope" --no-store io pattern 1 --empty-programs > /dev/null 2>&1 & tracer_pid=$! ;;
    before) "$PLATSCOPE_BEFORE" --no-store io pattern 1 > /dev/null 2>&1 & tracer_pid=$! ;;
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

# fio's read bandwidth in KiB/s (FIELD=total_ios: the reads it made).
run_fio() {
  local rw=$1 bs=$2
  fio --name=w --filename="$file" --rw="$rw" --bs="$bs" --size=1g --ioengine=psync --invalidate=0 \
      --time_based --runtime="$seconds" --output-format=json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["read"][sys.argv[1]])' "${FIELD:-bw}"
}

declare -A results
tracers=(none floor platscope bpftrace)
[ -n "${PLATSCOPE_BEFORE:-}" ] && tracers+=(before)
for ((r = 0; r < rounds; r++)); do
  for w in "randread 4k" "read 128k"; do
    for ((t = 0; t < ${#tracers[@]}; t++)); do
      tracer=${tracers[$(((t + r) % ${#tracers[@]}))]}
      start_tracer "$tracer"
      bw=$(run_fio $w)
      stop_tracer "$tracer"
      results["$w/$tracer"]+="$bw"$'\n'
      echo "round $r: $w $tracer $bw KiB/s" >&2
    done
  done
done

# What each BPF program itself costs per run (kernel.bpf_stats_enabled: two clock reads around
# every program run, so these runs are not the timed ones): each tracer under 4 KiB random
# preads, three turns in rotating order, the programs' counters read just before and after fio.
cost_turns=3
cost_tracers=(floor platscope bpftrace)
[ -n "${PLATSCOPE_BEFORE:-}" ] && cost_tracers+=(before)
costs=$dir/bpf_costs
: > "$costs"
bpf_stats_on
for ((turn = 0; turn < cost_turns; turn++)); do
  for ((t = 0; t < ${#cost_tracers[@]}; t++)); do
    tracer=${cost_tracers[$(((t + turn) % ${#cost_tracers[@]}))]}
    start_tracer "$tracer"
    runs_before=$(bpf_prog_runs "$tracer_pid")
    reads=$(FIELD=total_ios run_fio randread 4k)
    runs_after=$(bpf_prog_runs "$tracer_pid")
    stop_tracer "$tracer"
    bpf_prog_delta "$runs_before" "$runs_after" | sed "s/^/$tracer $turn $reads /" >> "$costs"
  done
done
bpf_stats_restore
cost_table=$(bpf_cost_table "$costs" read)

row() {
  local w=$1 label=$2 target=$3 base plat bpft floor before=
  base=$(printf '%s' "${results["$w/none"]}" | median)
  floor=$(printf '%s' "${results["$w/floor"]}" | median)
  plat=$(printf '%s' "${results["$w/platscope"]}" | median)
  bpft=$(printf '%s' "${results["$w/bpftrace"]}" | median)
  [ -n "${PLATSCOPE_BEFORE:-}" ] && before=$(printf '%s' "${results["$w/before"]}" | median)
  awk -v l="$label" -v b="$base" -v p="$plat" -v t="$bpft" -v g="$target" -v o="$before" -v f="$floor" 'BEGIN {
    fl = 1 - f/b; ad = 1 - p/f
    above = (fl > 0) ? sprintf("%.2f", ad / fl) : sprintf("n/a (floor %.1f%%)", fl * 100)
    printf "| %s | %.0f | %.0f (%.1f%%) | %.0f (%.1f%%) | %s | %.0f (%.1f%%) | %s |", l, b/1024, f/1024, fl*100, p/1024, (1-p/b)*100, above, t/1024, (1-t/b)*100, g
    if (o != "") printf " %.0f (%.1f%%; above the floor %s) |", o/1024, (1-o/b)*100, (fl > 0) ? sprintf("%.2f", (1 - o/f) / fl) : "n/a"
    printf "\n" }'
}

cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
before_head= before_rule= before_text=
if [ -n "${PLATSCOPE_BEFORE:-}" ]; then
  before_head=" platscope before the change MiB/s (overhead; cost above the floor / the floor's) |" before_rule="---|"
  before_text="The last column is an older build ($("$PLATSCOPE_BEFORE" --version | head -1)) measured in the
same rounds: the before and after of a change to the BPF programs."
fi
table="| workload | untraced MiB/s | empty program at sys_exit (floor) MiB/s (overhead) | platscope io pattern MiB/s (overhead) | platscope's cost above the floor / the floor's (goal <= 0.25) | bpftrace pread64 tally MiB/s (overhead) | target |$before_head
|---|---|---|---|---|---|---|$before_rule
$(row "randread 4k" "4 KiB random pread, cached" "<= 15%")
$(row "read 128k" "128 KiB sequential pread, cached" "<= 3%")"
echo "$table"
echo
echo "$cost_table"

write_doc_section io-pattern-overhead "<!-- io-pattern-overhead:begin -->
## io pattern: overhead on the traced workload

\`bench/io_pattern_overhead.sh $rounds $seconds\` on $(date -u +%Y-%m-%d): $cpu, $(nproc) CPUs,
kernel $(uname -r), load average $load_start before the run and $(cut -d' ' -f1-3 /proc/loadavg) at its end
(the bench's own fio and tracer keep a CPU busy). fio $(fio --version), $(bpftrace --version | head -1); fio psync (pread64),
one job, a 1 GiB file in the page cache, ${seconds} s per run, median of $rounds rounds in
rotating order. The bpftrace script tallies pread64 only, per (pid, fd), on the classic syscall
tracepoints; platscope follows all ten read/write calls per (device, inode) plus metadata calls
and page faults, via tp_btf on sys_exit (arguments read from the saved registers).

$table

$before_text

What each tracer's BPF programs cost by themselves under the 4 KiB random preads, as the
kernel times them (kernel.bpf_stats_enabled, over untimed ${seconds} s runs, $cost_turns turns in
rotating order; a run's time includes the statistics' own two clock reads, which the floor's
empty program shows; sys_exit runs for every system call, and fio makes few others), against
an untraced call of $(awk -v b="$(printf '%s' "${results["randread 4k/none"]}" | median)" 'BEGIN {printf "%.2f", 4 * 1e6 / b}') µs (from the untraced median):

$cost_table

Where a target
is missed, that is the arithmetic: the programs' time, plus the kernel's slower traced entry
path that every system call takes once anything is attached to the syscall tracepoints, over
a call that short. The floor column attaches one empty program at the same tracepoint
(\`io pattern --empty-programs\`): that entry path and the call into a program, before any work;
what platscope adds is the difference between its column and the floor's.
<!-- io-pattern-overhead:end -->"
