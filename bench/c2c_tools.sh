#!/usr/bin/env bash
# Side by side (one line against one line: --lines 1): `mem c2c` against multichase's `pingpong` (modified-line hand-off, -u plain
# loads and stores, -l compare-and-swap), and the shared-memory SLB's lock figures against
# multichase's `fairness` (contended atomic increments per thread), in one run, interleaved
# round by round so both see the same machine noise. Writes its section of docs/benchmarks.md.
# Not a test: timings never gate anything.
#
#   MULTICHASE=/path/to/multichase/build bench/c2c_tools.sh [ROUNDS]
#
# MULTICHASE is a directory holding multichase's `pingpong` and `fairness` binaries. Debian
# does not package them: clone https://github.com/google/multichase and run
# `make pingpong fairness` in it (needs a C compiler), then point MULTICHASE at that directory.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
mc=${MULTICHASE:?set MULTICHASE to a directory holding the multichase pingpong and fairness binaries, see the header of this script}
for tool in pingpong fairness; do
  [ -x "$mc/$tool" ] || { echo "no $mc/$tool: build it with 'make pingpong fairness' in a multichase checkout" >&2; exit 2; }
done
out=target/bench
mkdir -p "$out"
cargo build --release -q -p platscope
P=target/release/platscope
cpus=0,1

# A JSON value by path (a.b.0.c) from stdin.
jpath() { python3 -c 'import json,sys
v=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v=v[int(k)] if isinstance(v,list) else v[k]
print(v)' "$1"; }
# multichase pingpong's figure for the first pair (row " 0:").
mc_pair() { awk '$1 == "0:" {print $NF}'; }

# platscope mode, then multichase pingpong's flags.
modes=(read read cas cas)
flags=("-u" "-u -r 0" "-l" "-l -r 0")
mc_c2c=() ps_c2c=() ps_best=() ps_mean=()
for ((r = 1; r <= rounds; r++)); do
  for i in "${!modes[@]}"; do
    mc_c2c[i]+="$(taskset -c "$cpus" "$mc/pingpong" ${flags[i]} | mc_pair) "
    j=$($P --no-store mem c2c --cpus "$cpus" --mode "${modes[i]}" --duration-ms 1250 --lines 1 --json)
    ps_c2c[i]+="$(echo "$j" | jpath pairs.0.round_trip_ns.median | awk '{print $1/2}') "
    ps_best[i]+="$(echo "$j" | jpath pairs.0.round_trip_ns.min | awk '{print $1/2}') "
    ps_mean[i]+="$(echo "$j" | jpath pairs.0.round_trip_ns.mean | awk '{print $1/2}') "
  done
  echo "round $r of $rounds done" >&2
done

# Fairness: multichase's per-thread ns per contended atomic increment (unrelaxed block), as
# shares of increments; platscope's shared SLB with each lock on the same two CPUs.
fair_mc=$(taskset -c $cpus "$mc/fairness" -n 5 -t 0.5 | awk '/^unrelaxed/ {on=1; next} /^relaxed/ {on=0} on {print $1, $2}')
mc_ns=$(echo "$fair_mc" | awk '{print ($1+$2)/2}' | median)
mc_minmax=$(echo "$fair_mc" | awk '{a=$1; b=$2; print (a<b ? a/b : b/a)}' | median)
mc_jain=$(echo "$fair_mc" | awk '{x=1/$1; y=1/$2; print (x+y)^2/(2*(x*x+y*y))}' | median)
fair_rows=""
for lock in none spin ticket mutex; do
  j=$($P --no-store mem slb --shared --lock $lock --cpus $cpus --pages 1 --loops 10000000 --json)
  ns=$(echo "$j" | python3 -c 'import json,sys; r=json.load(sys.stdin); w=[x["elapsed_ns"]/x["ops"] for x in r["workers"]]; print(sum(w)/len(w))')
  mm=$(echo "$j" | jpath fairness.min_max_ratio)
  jain=$(echo "$j" | jpath fairness.jain)
  ho=$(echo "$j" | python3 -c 'import json,sys; r=json.load(sys.stdin); h=sum(x["handoffs"] for x in r["workers"]); print(h/(r["wall_ns"]/1e9) if r["plan"]["lock"]!="none" else 0)')
  lost=$(echo "$j" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["ops_total"]-r["counters_total"])')
  fair_rows+="| platscope \`mem slb --shared --lock $lock\` (counter += 1 and one store, under the lock if any) | $(printf %.1f "$ns") | $(printf %.3f "$mm") | $(printf %.3f "$jain") | $(awk -v h="$ho" 'BEGIN{printf "%.2f M", h/1e6}') | $lost |
"
done

table=$(
  echo "| hand-off, CPUs $cpus | multichase ns (best of 5 × 250 ms) | platscope ns (median of batches) | platscope / multichase | platscope mean ns (all batches) | mean / multichase | platscope best batch ns |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for i in "${!modes[@]}"; do
    m=$(echo "${mc_c2c[i]}" | tr ' ' '\n' | grep . | median)
    p=$(echo "${ps_c2c[i]}" | tr ' ' '\n' | grep . | median)
    b=$(echo "${ps_best[i]}" | tr ' ' '\n' | grep . | median)
    a=$(echo "${ps_mean[i]}" | tr ' ' '\n' | grep . | median)
    echo "| \`pingpong ${flags[i]}\` vs \`mem c2c --mode ${modes[i]}\` (one-way = round trip / 2) | $(printf %.1f "$m") | $(printf %.1f "$p") | $(awk -v a="$p" -v b="$m" 'BEGIN{printf "%.3f", a/b}') | $(printf %.1f "$a") | $(awk -v a="$a" -v b="$m" 'BEGIN{printf "%.3f", a/b}') | $(printf %.1f "$b") |"
  done
)
fair_table=$(
  echo "| contention on CPUs $cpus | ns per operation (mean of workers) | min/max share | Jain's index | hand-offs/s | lost counter updates |"
  echo "|---|---:|---:|---:|---:|---:|"
  echo "| multichase \`fairness -n 5 -t 0.5\` (atomic increment, unrelaxed; median of samples) | $(printf %.1f "$mc_ns") | $(printf %.3f "$mc_minmax") | $(printf %.3f "$mc_jain") | — | — |"
  printf '%s' "$fair_rows"
)

# The hot loops as compiled.
objdump -d --no-show-raw-insn -C "$P" > "$out/platscope.dis"
disassemble() { awk -v f="<$1>:" '$2 == f {on=1; next} on && (/^$/ || /int3/) {on=0} on' "$out/platscope.dis" | sed 's/^ *[0-9a-f]*:\t//'; }
ping_loop=$(disassemble membench::kernels::c2c::ping_read)
spin_loop=$(disassemble membench::kernels::lock::locked_writes_spin)

section=$(cat <<MD
<!-- c2c-tools:begin -->
## Core to core and lock contention vs multichase

Command: \`MULTICHASE=… bench/c2c_tools.sh $rounds\` — $rounds rounds, multichase and platscope alternating,
CPUs $cpus, median of the rounds. Run on $(date -u +%Y-%m-%d). multichase built from
google/multichase at the time of the run (\`make pingpong fairness\`, its default flags).

Machine: $($P topo | head -1); kernel $(uname -r); $(nproc) vCPUs ($(lscpu | awk -F: '/Thread\(s\) per core/ {gsub(/ /,"",$2); print $2}') thread(s) per core as the guest sees it — the
host may still run the two vCPUs on SMT siblings); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)
(other builds share this machine).

$table

How they differ: multichase counts hand-offs over 250 ms windows and prints the best window, so
any time a thread is descheduled is inside its figure; platscope times batches of about 0.5 ms
and reports their median, so a batch that was preempted is an outlier in p99, not in the median;
its mean over all batches is the closer analogue of multichase's window average. When the
machine is loaded (the load average above; two vCPUs shared with other builds), a thread of
either tool is often descheduled and the window figures grow with the load, not with the
hardware: read the ratios only from a quiet run.
multichase's default pauses 10 \`pause\` instructions after every attempt (\`-r 10\`); platscope
spins without pausing, like \`-r 0\`.

$fair_table

multichase's \`fairness\` measures bare atomic increments on one counter; platscope's operation is
larger (lock, plain counter increment, one SLB store, unlock), so compare the fairness columns,
not the ns. Without a lock, platscope's plain increments race and lose updates (last column).
Fairness is read when the first worker finishes: on a loaded machine one worker can finish
before the other is scheduled at all (min/max 0, Jain 0.5): that is the scheduler, not the lock.

Generated code: the pinger's batch loop (\`ping_read\`) — the poll is a load and a compare, the
hand-off a plain store; no clock read or call inside:

\`\`\`text
$ping_loop
\`\`\`

The spinlock variant of the shared SLB loop (\`locked_writes_spin\`):

\`\`\`text
$spin_loop
\`\`\`
<!-- c2c-tools:end -->
MD
)
write_doc_section c2c-tools "$section"
echo "$table"
echo
echo "$fair_table"
