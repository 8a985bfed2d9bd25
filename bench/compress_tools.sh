#!/usr/bin/env bash
# tamp (the parallel compressor behind `platscope compress`) against the compressors Debian
# ships, in one run on one machine: the same corpus file on /dev/shm (tmpfs, as the original Tamp
# tests), the same CPUs (every command under the same `taskset -c`), outputs to /dev/shm too.
#   lz4:  tamp lz4 -t 1 vs `lz4 -1` (1.9.4 has no threads); tamp lz4 -t N vs N × tamp -t 1
#   zstd: tamp zstd level 1 -t N vs `zstd -T N -1`, `pzstd -p N -1` and `pigz -p N -1`
#   decompression of each tool's own file: tamp -t N vs `lz4 -d`, `zstd -d`, `pzstd -d -p N`,
#   `pigz -d -p N` (output to /dev/null; tamp's --discard)
# Each figure is the median over the rounds; the tools' order is rotated each round so all see
# the same machine noise. Writes its section of docs/benchmarks.md. Not a test: timings never
# gate anything.
#   bench/compress_tools.sh [SIZE_MIB [ROUNDS]]   (default 512 MiB, 3 rounds)
#
# tamp runs as `platscope --no-store --json compress -f …` (release build; -f as the other tools).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
size_mib=${1:-512}
rounds=${2:-3}
[[ $size_mib =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: $0 [SIZE_MIB [ROUNDS]] (positive integers)" >&2
  exit 2
}
started=$(date +%s)
for t in lz4 zstd pzstd pigz jq /usr/bin/time; do
  command -v "$t" > /dev/null || { echo "bench: $t is missing: run scripts/setup.sh --deps" >&2; exit 1; }
done
# Taken before the build: the build (a relink after every commit) and the tools themselves load
# the CPUs, and neither is "other work".
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
cargo build --release -q -p platscope
P=target/release/platscope
T="$P --no-store --json compress -f"
work=/dev/shm/tamp-bench.$$
logs=target/bench/compress-tools
rm -rf "$logs"
mkdir -p "$work" "$logs"
trap 'rm -rf "$work"' EXIT

# CPUs this script may use; every command runs on all of them.
cpus=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
N=$(nproc)
pin=(taskset -c "$cpus")

in=$work/corpus
"$P" compress --make-corpus $((size_mib * 1048576)) "$in" --seed 4 > /dev/null
bytes=$(stat -c %s "$in")

# --- the jobs: name | command (IN and OUT are substituted) --------------------------------------
# Compression writes $work/<job>.out; decompression reads the file a compression job made.
declare -A cmd src
add() { cmd[$1]=$2; src[$1]=${3:-}; }
add "c tamp lz4 -t 1" "$T -t 1 --format lz4 IN -o OUT"
add "c tamp lz4 -t $N" "$T -t $N --format lz4 IN -o OUT"
add "c lz4 -1" "lz4 -1 -q -f IN OUT"
# The machine's own scaling, the anchor for tamp's -t N ÷ -t 1: N independent `lz4 -1`
# processes at once, each on an Nth of the corpus (split ahead, outside the timing).
split -n "$N" -d -a 3 "$in" "$work/part."
parts_cmd=""
for part in "$work"/part.*; do parts_cmd+="lz4 -1 -q -f $part OUT.${part##*.} & "; done
add "c $N × lz4 -1 at once" "${parts_cmd}wait; touch OUT"
add "c tamp zstd -1 -t $N" "$T -t $N --format zstd --level 1 IN -o OUT"
add "c zstd -T$N -1" "zstd -1 -T$N -q -f IN -o OUT"
add "c pzstd -p $N -1" "pzstd -1 -p $N -q -f IN -o OUT"
add "c pigz -p $N -1" "pigz -1 -p $N -c IN > OUT"
add "d tamp lz4 -t $N" "$T -d -t $N IN --discard" "c tamp lz4 -t $N"
add "d lz4 -d" "lz4 -d -c IN > /dev/null" "c lz4 -1"
add "d tamp lz4 -t $N (lz4's file)" "$T -d -t $N IN --discard" "c lz4 -1"
add "d tamp zstd -t $N" "$T -d -t $N IN --discard" "c tamp zstd -1 -t $N"
add "d zstd -d" "zstd -d -q -c IN > /dev/null" "c zstd -T$N -1"
add "d zstd -d (tamp's file)" "zstd -d -q -c IN > /dev/null" "c tamp zstd -1 -t $N"
add "d pzstd -d -p $N" "pzstd -d -p $N -q -c IN > /dev/null" "c pzstd -p $N -1"
add "d pigz -d -p $N" "pigz -d -p $N -c IN > /dev/null" "c pigz -p $N -1"
order=("c tamp lz4 -t 1" "c tamp lz4 -t $N" "c lz4 -1" "c $N × lz4 -1 at once" "c tamp zstd -1 -t $N" "c zstd -T$N -1"
  "c pzstd -p $N -1" "c pigz -p $N -1")
dorder=("d tamp lz4 -t $N" "d lz4 -d" "d tamp lz4 -t $N (lz4's file)" "d tamp zstd -t $N" "d zstd -d"
  "d zstd -d (tamp's file)" "d pzstd -d -p $N" "d pigz -d -p $N")
key() { echo "$1" | tr -c 'A-Za-z0-9\n' _; }

declare -A walls cpu_s outsz verdicts
run_job() { # NAME ROUND
  local name=$1 r=$2 k log c f
  k=$(key "$name")
  log=$logs/$k.r$r.log
  f=$work/$k.out
  if [[ $name == d* ]]; then f=$work/$(key "${src[$name]}").out; fi
  c=${cmd[$name]//IN/$f}
  c=${c//OUT/$work/$k.out}
  [[ $name == c* ]] && c=${cmd[$name]//IN/$in} && c=${c//OUT/$work/$k.out}
  if ! "${pin[@]}" /usr/bin/time -f "%e %U %S" -o "$log.time" bash -c "$c" > "$log" 2> "$log.err"; then
    echo "FAILED: $c: $(tail -2 "$log.err")" >&2
    return
  fi
  read -r w u s < "$log.time"
  walls[$name]+="$w "
  cpu_s[$name]+="$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}') "
  # (Summed over OUT.* too: the parts' outputs.)
  [[ $name == c* ]] && outsz[$name]=$(stat -c %s "$work/$k.out"* | awk '{n += $1} END {print n}')
  if [[ $c == "$T"* ]]; then
    verdicts[$name]=$(grep -o '"verdict": *"[^"]*"' "$log" | head -1 | sed 's/.*: *"//; s/"$//')
    if [[ $name == d* ]]; then
      if grep -q '"parallel": *true' "$log"; then verdicts[$name]+=" (parallel)"; else verdicts[$name]+=" (one thread)"; fi
    fi
  fi
  echo "round $r: $name ${w}s" >&2
}

for ((r = 1; r <= rounds; r++)); do
  n=${#order[@]}
  for ((j = 0; j < n; j++)); do run_job "${order[(j + r - 1) % n]}" "$r"; done
  if ((r == 1)); then
    # The outputs must be what the tools say they are: stock tools read tamp's files.
    lz4 -d -c "$work/$(key "c tamp lz4 -t $N").out" | cmp -s - "$in" || { echo "bench: lz4 -d of tamp's file differs" >&2; exit 1; }
    zstd -d -q -c "$work/$(key "c tamp zstd -1 -t $N").out" | cmp -s - "$in" || { echo "bench: zstd -d of tamp's file differs" >&2; exit 1; }
  fi
  n=${#dorder[@]}
  for ((j = 0; j < n; j++)); do run_job "${dorder[(j + r - 1) % n]}" "$r"; done
done

# --- the doc ------------------------------------------------------------------------------------
med() { echo "${walls[$1]:-}" | tr ' ' '\n' | grep . | median; }
medcpu() { echo "${cpu_s[$1]:-}" | tr ' ' '\n' | grep . | median; }
mbs() { local w; w=$(med "$1"); [[ -n $w ]] && awk -v b="$bytes" -v w="$w" 'BEGIN {printf "%.0f", b / 1e6 / w}' || echo failed; }
# MB per CPU-second: what the work cost, whatever else ran on the machine.
per_cpu() { local c; c=$(medcpu "$1"); [[ -n $c ]] && awk -v b="$bytes" -v c="$c" 'BEGIN {printf (c > 0 ? "%.0f" : "-"), b / 1e6 / c}' || echo "-"; }
ratio_of() { [[ -n ${outsz[$1]:-} ]] && awk -v o="${outsz[$1]}" -v b="$bytes" 'BEGIN {printf "%.3f", o / b}' || echo "-"; }
vs() { # A B: MB/s of A / MB/s of B
  local a b
  a=$(med "$1") b=$(med "$2")
  [[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN {r = b / a; printf (r < 1 ? "**%.2f**" : "%.2f"), r}' || echo "-"
}
label() { [[ $1 == c* ]] && echo "compress: ${1#? }" || echo "decompress: ${1#? }"; }
# For every comparison below 1.0: the same two jobs per CPU-second, so the doc says whether the
# gap is in the work or in the waiting.
below=()
note_below() { # A B
  local a b
  a=$(med "$1") b=$(med "$2")
  [[ -n $a && -n $b ]] || return 0
  if awk -v a="$a" -v b="$b" 'BEGIN {exit !(b / a < 1)}'; then
    below+=("- $(label "$1") is at $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b / a}')× the speed of $(label "$2") ($(mbs "$1") vs $(mbs "$2") MB/s); per CPU-second it did $(per_cpu "$1") MB against $(per_cpu "$2").")
  fi
}
row() { # NAME THREADS COMPARED-TO...
  local name=$1 th=$2 cells="" o
  shift 2
  for o in "$@"; do cells+="$(vs "$name" "$o") vs $(label "$o"); "; done
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$(label "$name")" "$th" "$(mbs "$name")" "$(medcpu "$name")" \
    "$(per_cpu "$name")" "$(ratio_of "$name")" "${verdicts[$name]:--}" "${cells%; }"
}
lz4_1="c tamp lz4 -t 1" lz4_n="c tamp lz4 -t $N"
table=$(
  echo "| job | threads | MB/s (uncompressed) | CPU s (user+sys) | MB per CPU-s | compressed / original | tamp's verdict | speed ratio (this / other; **bold** < 1) |"
  echo "|---|---:|---:|---:|---:|---:|---|---|"
  row "$lz4_1" 1 "c lz4 -1"
  row "c lz4 -1" 1
  row "c $N × lz4 -1 at once" "$N processes" "c lz4 -1"
  row "$lz4_n" "$N" "c lz4 -1" "$lz4_1"
  row "c tamp zstd -1 -t $N" "$N" "c zstd -T$N -1" "c pzstd -p $N -1" "c pigz -p $N -1"
  row "c zstd -T$N -1" "$N"
  row "c pzstd -p $N -1" "$N"
  row "c pigz -p $N -1" "$N"
  row "d tamp lz4 -t $N" "$N" "d lz4 -d"
  row "d tamp lz4 -t $N (lz4's file)" "$N" "d lz4 -d"
  row "d lz4 -d" 1
  row "d tamp zstd -t $N" "$N" "d zstd -d" "d pzstd -d -p $N" "d pigz -d -p $N"
  row "d zstd -d" "1 (one frame)"
  row "d zstd -d (tamp's file)" 1
  row "d pzstd -d -p $N" "$N"
  row "d pigz -d -p $N" "$N (inflate on 1)"
)
scaling=$(awk -v a="$(med "$lz4_1")" -v b="$(med "$lz4_n")" -v n="$N" 'BEGIN {printf "%.2f× one thread (%.0f%% of %d×)", a / b, a / b / n * 100, n}')
machine_scaling=$(awk -v a="$(med "c lz4 -1")" -v b="$(med "c $N × lz4 -1 at once")" -v n="$N" 'BEGIN {printf "%.2f×", a / b}')
# Which limit tamp -t N hit: the machine's (its scaling within 10% of what N independent jobs got,
# the same threshold as the compress scale page) or its own pipeline's.
limit_text=$(awk -v a1="$(med "$lz4_1")" -v an="$(med "$lz4_n")" -v l="$(med "c lz4 -1")" -v ln="$(med "c $N × lz4 -1 at once")" -v n="$N" 'BEGIN {
  t = a1 / an; m = l / ln; share = t / m
  printf "tamp -t %d reached %.0f%% of that limit: %s", n, share * 100, (share >= 0.9 ? "the machine'"'"'s limit, not the pipeline'"'"'s" : "the pipeline'"'"'s own, not the machine'"'"'s")
  if (m < 0.8 * n) printf "; the machine gives %d independent jobs %.0f%% of %d×: its CPUs are not whole cores to them (hyperthreads of one core, or a host that shares them)", n, m / n * 100, n
  printf "." }')
# The most -t N could gain on N CPUs: its threads' CPU (workers, reader, writer, from tamp's own
# per-thread clocks) spread over all N CPUs with nothing idle, against -t 1's wall. Per round.
ceilings=() shares=()
for ((r = 1; r <= rounds; r++)); do
  one=$logs/$(key "$lz4_1").r$r.log many=$logs/$(key "$lz4_n").r$r.log
  [[ -s $one && -s $many ]] || continue
  ceilings+=("$(jq -n --argjson a "$(jq .wall_s "$one")" --argjson t "$(jq '[.thread_busy[].cpu_s] | add' "$many")" \
    --argjson n "$N" '$a / ($t / $n) * 100 | round / 100')")
  shares+=("$(jq '.machine_cpu_share * 100 | round' "$many")")
done
ceiling_text="Its ceiling on these $N CPUs, -t 1's wall over -t $N's thread CPU spread on all $N with none idle, per round: ${ceilings[*]:-none} (machine busy during -t $N: ${shares[*]:-?} %)."
for pair in "$lz4_1|c lz4 -1" "$lz4_n|c lz4 -1" "$lz4_n|$lz4_1" "c tamp zstd -1 -t $N|c zstd -T$N -1" \
  "c tamp zstd -1 -t $N|c pzstd -p $N -1" "c tamp zstd -1 -t $N|c pigz -p $N -1" "d tamp lz4 -t $N|d lz4 -d" \
  "d tamp lz4 -t $N (lz4's file)|d lz4 -d" "d tamp zstd -t $N|d zstd -d" "d tamp zstd -t $N|d pzstd -d -p $N" \
  "d tamp zstd -t $N|d pigz -d -p $N"; do
  note_below "${pair%%|*}" "${pair#*|}"
done
if ((${#below[@]})); then
  below_text="Below 1.0 in this run:"$'\n\n'"$(printf '%s\n' "${below[@]}")"
else
  below_text="tamp is at or above every tool it is compared with in this run."
fi
commands=$(for k in "${order[@]}" "${dorder[@]}"; do echo "# ${k#? }"; echo "taskset -c $cpus ${cmd[$k]}"; done)
elapsed=$(($(date +%s) - started))
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
# A 1-minute load above a quarter of the CPUs before the script means other processes were running:
# wall-clock figures (multi-threaded ones most) then say something about them, not only the tools.
busy_note=$(awk -v s="${load_start%% *}" -v e="${load_end%% *}" -v n="$N" 'BEGIN {
  if (s > n / 4) printf "**The machine was busy with other work when this run began (1-minute load %s before it, %s at the end, on %d CPUs).** Every thread here competed with those processes for the CPUs, and each hand-off between pipeline threads waited for one: wall-clock MB/s understates every multi-threaded tool, tamp included, and the ratios between them are noisy. MB per CPU-second measures the work itself and is the steadier comparison.", s, e, n }')
model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)

section=$(cat <<MD
<!-- compress-tools:begin -->
## Parallel compression: tamp vs lz4, zstd, pzstd, pigz

Command: \`bench/compress_tools.sh $size_mib $rounds\` — $rounds round(s), each figure the median;
the tools' order rotated each round. Run on $(date -u +%Y-%m-%d); it took ${elapsed} s.

Machine: $model, $N online CPU(s) (all used: \`taskset -c $cpus\`), kernel $(uname -r), memory
$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo). Load average before the script (and its build):
$load_start; at the end: $load_end. Tools: lz4 $(dpkg-query -W -f='${Version}' lz4),
zstd/pzstd $(dpkg-query -W -f='${Version}' zstd), pigz $(dpkg-query -W -f='${Version}' pigz); tree at
$(git describe --always --dirty 2>/dev/null || echo "an unknown commit").

Input: the tamp corpus (generator seed 4, $size_mib MiB = $bytes bytes, \`tamp corpus 4 $bytes\`) on /dev/shm;
compressed outputs written to /dev/shm, decompressed output discarded (\`> /dev/null\`, tamp
\`--discard\`). MB/s is uncompressed bytes (10^6) per wall second in both directions; CPU s is
user + sys of the whole command (GNU time). tamp's blocks: its defaults (lz4 256 KiB, zstd 2 MiB).

$table

tamp lz4 with $N threads: $scaling. $N \`lz4 -1\` processes at once, each on 1/$N of the
corpus, ran $machine_scaling as fast as one on all of it: what these $N CPUs give $N independent
jobs in this run, the anchor for tamp's scaling; $limit_text $ceiling_text

$below_text

$busy_note

Commands:

\`\`\`text
$commands
\`\`\`
<!-- compress-tools:end -->
MD
)
write_doc_section compress-tools "$section"
echo "$table"
echo "tamp lz4: $scaling; $N × lz4 -1 at once: $machine_scaling one; $limit_text"
echo "logs in $logs; wrote docs/benchmarks.md; took ${elapsed} s" >&2
