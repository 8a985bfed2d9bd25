#!/usr/bin/env bash
# The allocator bake-off's built-in workload at 1 and 2 threads under every allocator Debian
# ships, measured two ways in one run on one machine:
#   platscope: `platscope alloc --json` — ops/s over the workload loop only, CPU per operation
#              from the worker's CPU clock over the loop, VmHWM read before it exits, each
#              preload verified in /proc/PID/maps;
#   GNU time:  mimalloc-bench's method — the same worker (`platscope alloc-worker`, same
#              arguments) started with LD_PRELOAD under `/usr/bin/time -f "%e %U %S %M"`:
#              wall, user + sys and max RSS of the whole process, start-up and exit included,
#              and nothing checks that the preload took.
# The two must agree where they measure the same thing (CPU per op, peak RSS) and differ by the
# process start-up where they do not (ops/s from the loop vs from the wall). Each method's
# runs are rotated round-robin; figures are medians over the rounds. Writes its section of
# docs/benchmarks.md. Not a test: timings never gate anything.
#   bench/alloc_bakeoff.sh [OPS_PER_THREAD [ROUNDS]]   (default 20000000, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ops=${1:-20000000}
rounds=${2:-3}
[[ $ops =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: $0 [OPS_PER_THREAD [ROUNDS]] (positive integers)" >&2
  exit 2
}
for t in /usr/bin/time jq; do
  command -v "$t" > /dev/null || { echo "bench: $t is missing: run scripts/setup.sh --deps" >&2; exit 1; }
done
started=$(date +%s)
cargo build --release -q -p platscope
P=target/release/platscope
logs=target/bench/alloc-bakeoff
rm -rf "$logs"
mkdir -p "$logs"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
lib=/usr/lib/x86_64-linux-gnu
declare -A libs=([glibc]="" [jemalloc]=$lib/libjemalloc.so.2 [tcmalloc]=$lib/libtcmalloc_minimal.so.4
  [mimalloc]=$lib/libmimalloc.so.2 [tbb]=$lib/libtbbmalloc_proxy.so.2)
names=(glibc jemalloc tcmalloc mimalloc tbb)
for n in "${names[@]}"; do
  [[ -z ${libs[$n]} || -f ${libs[$n]} ]] || { echo "bench: ${libs[$n]} missing: run scripts/setup.sh --deps" >&2; exit 1; }
done

# --- platscope ------------------------------------------------------------------------------------
"$P" --no-store --json alloc --allocators "$(IFS=,; echo "${names[*]}")" --threads 1,2 \
  --repeat "$rounds" --ops "$ops" > "$logs/platscope.json" 2> "$logs/platscope.err"

# --- GNU time, mimalloc-bench's way ---------------------------------------------------------------
declare -A g_ops g_cpu g_rss
for ((r = 1; r <= rounds; r++)); do
  for t in 1 2; do
    n=${#names[@]}
    for ((j = 0; j < n; j++)); do
      a=${names[(j + r - 1) % n]}
      log=$logs/time.$a.t$t.r$r
      # The worker prints "ready", runs when it reads a line, reports, and exits at EOF.
      echo go | env LD_PRELOAD="${libs[$a]}" /usr/bin/time -f "%e %U %S %M" -o "$log.time" \
        "$P" alloc-worker --threads=$t --ops=$ops > "$log.out" 2> "$log.err"
      read -r w u s m < "$log.time"
      total=$((ops * t))
      g_ops[$a.$t]+="$(awk -v n=$total -v w="$w" 'BEGIN {print n / w}') "
      g_cpu[$a.$t]+="$(awk -v n=$total -v u="$u" -v s="$s" 'BEGIN {print (u + s) / n * 1e9}') "
      g_rss[$a.$t]+="$((m * 1024)) "
      echo "round $r: GNU time $a × $t: ${w}s" >&2
    done
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the doc --------------------------------------------------------------------------------------
med() { tr ' ' '\n' | grep . | median; }
pj() { # ALLOC THREADS JQ-EXPR: the figure from platscope's groups
  jq -r --arg a "$1" --argjson t "$2" ".groups[] | select(.allocator == \$a and .threads == \$t) | $3" "$logs/platscope.json"
}
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
k() { awk -v v="$1" 'BEGIN {printf "%.0f", v / 1000}'; }
table="| threads | allocator | platscope kops/s (min–max) | vs glibc | verdict | GNU time kops/s | platscope CPU/op ns | GNU time CPU/op ns | platscope peak RSS MiB | GNU time max RSS MiB | verified by |
|---|---|---|---|---|---|---|---|---|---|---|"
for t in 1 2; do
  for a in "${names[@]}"; do
    p_med=$(pj "$a" $t .throughput.median)
    p_min=$(pj "$a" $t .throughput.min)
    p_max=$(pj "$a" $t .throughput.max)
    rel=$(pj "$a" $t '.relative // empty')
    verdict=$(pj "$a" $t .verdict.verdict | tr _ ' ')
    p_cpu=$(pj "$a" $t '.cpu_per_op_us.median * 1000')
    p_rss=$(pj "$a" $t '.hwm_bytes.median')
    verified=$(jq -r --arg a "$a" --argjson t $t '[.runs[] | select(.allocator == $a and .threads == $t) | .verified][0]' "$logs/platscope.json" | sed 's/ mapped at.*//; s|.*/||')
    go=$(echo "${g_ops[$a.$t]}" | med)
    gc=$(echo "${g_cpu[$a.$t]}" | med)
    gr=$(echo "${g_rss[$a.$t]}" | med)
    table+="
| $t | $a | $(k "$p_med") ($(k "$p_min")–$(k "$p_max")) | $(printf '%.2f' "${rel:-0}")× | $verdict | $(k "$go") | $(printf '%.0f' "$p_cpu") | $(printf '%.0f' "$gc") | $(mib "$p_rss") | $(mib "$gr") | $verified |"
  done
done
elapsed=$(($(date +%s) - started))
section=$(cat <<MD
<!-- alloc-bakeoff:begin -->
## Allocator bake-off: platscope alloc against GNU time (mimalloc-bench's method)

\`bench/alloc_bakeoff.sh $ops $rounds\`, $(date -u +%Y-%m-%d), took ${elapsed} s. Machine: $(nproc) CPUs
($(awk -F: '/^model name/ {sub(/^ +/, "", $2); print $2; exit}' /proc/cpuinfo)),
$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -r), glibc
$(dpkg-query -W -f='${Version}' libc6); shared with other builds (load average at the start:
$load_start; at the end: $load_end). Allocators: jemalloc $(dpkg-query -W -f='${Version}' libjemalloc2),
tcmalloc $(dpkg-query -W -f='${Version}' libtcmalloc-minimal4), mimalloc
$(dpkg-query -W -f='${Version}' libmimalloc2.0), tbbmalloc $(dpkg-query -W -f='${Version}' libtbbmalloc2).
Tree at $(git describe --always --dirty 2>/dev/null || echo "an unknown commit").

Workload: platscope's built-in one — $ops allocations per thread, sizes 16 B–4 KiB log-uniform,
4096 live objects per thread, 25% of frees done by the next thread. $rounds rounds each,
allocators rotated. platscope's ops/s counts the loop only; GNU time's is the operations over
the whole process's wall time (start-up, preload initialisation and exit included). CPU/op:
platscope reads the worker's CPU clock around the loop, GNU time takes user + sys of the whole
process. Peak RSS: VmHWM read by platscope just before the worker exits, %M by GNU time.
"verdict": platscope's comparison with glibc — each allocator's runs judged by the verdict
engine (the ratio's 95% interval, Holm across the bake-off). GNU time's runs were not verified; platscope's were (the last column).
The cross-check is CPU/op and peak RSS, which do not depend on what else the machine runs; ops/s
of both methods does (see the load average above: the two methods' runs are minutes apart, so on
a busy machine their ops/s can differ by more than the allocators do).

$table
<!-- alloc-bakeoff:end -->
MD
)
write_doc_section alloc-bakeoff "$section"
echo "$table"
echo "logs in $logs; wrote docs/benchmarks.md; took ${elapsed} s" >&2
