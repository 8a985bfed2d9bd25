#!/usr/bin/env bash
# Side by side: platscope's pointer chase and SLB loop against minimal independent C versions
# (bench/c/), in one run, interleaved round by round so both see the same machine noise.
# Writes its section of docs/benchmarks.md. Not a test: timings never gate anything.
#   bench/mem_latency_slb.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
cpu=0
out=target/bench
mkdir -p "$out"
cc -O2 -o "$out/slb_ref" bench/c/slb_ref.c
cc -O2 -o "$out/chase_ref" bench/c/chase_ref.c
cargo build --release -q -p platscope
P=target/release/platscope

json_field() { grep -o "\"$1\": *[0-9.e+-]*" | head -1 | sed 's/.*: *//'; }

declare -A c_chase p_chase c_slb p_slb
sizes=(16384 33554432 1073741824)
slb_cases=("4 5000000" "65536 300")
for ((r = 1; r <= rounds; r++)); do
  for s in "${sizes[@]}"; do
    c_chase[$s]+="$("$out/chase_ref" "$s" $cpu 0.5 | awk '{print $2}') "
    p_chase[$s]+="$($P mem latency --size "$s" --tlb-group 0 --physcpubind $cpu --duration-ms 500 --json | json_field median) "
  done
  for case in "${slb_cases[@]}"; do
    set -- $case
    c_slb[$case]+="$("$out/slb_ref" "$1" "$2" $cpu | awk '{print $3}') "
    p_slb[$case]+="$($P mem slb --pages "$1" --loops "$2" --cpus $cpu | awk '/^Total ops/ {print $NF}') "
  done
  echo "round $r of $rounds done" >&2
done

fmt_bytes() { awk -v b="$1" 'BEGIN { if (b >= 1073741824) printf "%g GiB", b/1073741824; else if (b >= 1048576) printf "%g MiB", b/1048576; else printf "%g KiB", b/1024 }'; }

table=$(
  echo "| pointer chase (random over the whole buffer, 4 KiB pages) | C reference ns/load | platscope ns/load | platscope / C |"
  echo "|---|---:|---:|---:|"
  for s in "${sizes[@]}"; do
    c=$(echo "${c_chase[$s]}" | tr ' ' '\n' | grep . | median)
    p=$(echo "${p_chase[$s]}" | tr ' ' '\n' | grep . | median)
    echo "| $(fmt_bytes "$s") | $(printf %.2f "$c") | $(printf %.2f "$p") | $(awk -v a="$p" -v b="$c" 'BEGIN{printf "%.3f", a/b}') |"
  done
  echo
  echo "| SLB loop (PAGES × LOOPS, one worker) | C reference M ops/s | platscope M ops/s | platscope / C |"
  echo "|---|---:|---:|---:|"
  for case in "${slb_cases[@]}"; do
    set -- $case
    c=$(echo "${c_slb[$case]}" | tr ' ' '\n' | grep . | median)
    p=$(echo "${p_slb[$case]}" | tr ' ' '\n' | grep . | median)
    label="$1 pages ($(fmt_bytes $(($1 * 4096)))) × $2"
    echo "| $label | $(awk -v v="$c" 'BEGIN{printf "%.1f", v/1e6}') | $(awk -v v="$p" 'BEGIN{printf "%.1f", v/1e6}') | $(awk -v a="$p" -v b="$c" 'BEGIN{printf "%.3f", a/b}') |"
  done
)

# The SLB hot loop as compiled: the instructions between the loop label and its back-branch.
objdump -d --no-show-raw-insn -C "$P" > "$out/platscope.dis"
disassemble() { awk -v f="<$1>:" '$2 == f {on=1; next} on && (/^$/ || /int3/) {on=0} on' "$out/platscope.dis" | sed 's/^ *[0-9a-f]*:\t//'; }
loop=$(disassemble membench::kernels::slb::slb_writes)
chase_loop=$(disassemble membench::kernels::chase::chase)
l1_ns=$(echo "${p_slb[4 5000000]}" | tr ' ' '\n' | grep . | awk '{print 1e9/$1}' | median)

section=$(cat <<MD
<!-- mem-latency-slb:begin -->
## Memory latency and SLB loop vs independent C references

Command: \`bench/mem_latency_slb.sh $rounds\` — $rounds rounds, C and platscope alternating, CPU $cpu,
median of the rounds. Run on $(date -u +%Y-%m-%d).

Machine: $($P topo | head -1); kernel $(uname -r); $($P topo | awk '/THP|clocksource|hypervisor/ {$1=$1; printf "%s; ", $0}')
load average at the end: $(cut -d' ' -f1-3 /proc/loadavg).

$table

The SLB loop's own cost (4 pages = 16 KiB, in L1): $(printf %.2f "$l1_ns") ns per store (target ≤ 2 ns; under 5% of
the DRAM figure above). Generated code of the store loop (\`objdump\` of \`slb_writes\`):

\`\`\`text
$loop
\`\`\`

The chase loop: sixteen dependent loads and the loop counter, nothing else.

\`\`\`text
$chase_loop
\`\`\`
<!-- mem-latency-slb:end -->
MD
)

doc=docs/benchmarks.md
write_doc_section mem-latency-slb "$section"
echo "$table"
echo "wrote $doc" >&2
