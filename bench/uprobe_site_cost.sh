#!/usr/bin/env bash
# What one uprobe hit costs the traced thread, by the instruction it sits on: the floor under
# every USDT-based figure (db querystat on PostgreSQL and MariaDB). A C loop calls a function
# whose first instruction is the probe site, with nothing attached and with an empty bpftrace
# program at that site; the difference per call is the hit's cost: the breakpoint trap, the
# kernel's uprobe lookup, the call into the program and the way back.
#
#   bench/uprobe_site_cost.sh [ROUNDS] [CALLS]   (root; default 5 rounds of 1,000,000 calls)
#
# Sites (bench/c/probe_sites.c): a 1-byte nop (what <sys/sdt.h> emits for a USDT probe; x86
# emulates it, one trap), a 5-byte nop (which kernels with uprobe optimisation turn into a call
# and a system call) and an imul (not emulated: the hit also single-steps a copy of it).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

rounds=${1:-5}
calls=${2:-1000000}
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (BPF)" >&2; exit 1; }
command -v bpftrace >/dev/null || apt-get install -y -qq bpftrace >/dev/null
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

dir=$(mktemp -d /var/tmp/psup.XXXXXX)
tracer_pid=
cleanup() { [ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
bin=$dir/probe_sites
cc -O2 -o "$bin" bench/c/probe_sites.c

# The sites are what they claim: each function's first instruction, as the disassembler reads it.
first_insn() { objdump -d --no-show-raw-insn "$bin" | awk -v f="<at_$1>:" '$2 == f {getline; print $2; exit}'; }
for pair in nop:nop nop5:nopl imul:imul; do
  got=$(first_insn "${pair%%:*}")
  [ "$got" = "${pair#*:}" ] || { echo "bench: at_${pair%%:*} starts with '$got', not ${pair#*:}; the compiler moved the site" >&2; exit 1; }
done

attach() {  # site: an empty program at at_SITE; waits until bpftrace says it attached
  bpftrace -e "uprobe:$bin:at_$1 { }" > "$dir/bpftrace.log" 2>&1 &
  tracer_pid=$!
  for _ in $(seq 100); do grep -q "^Attaching" "$dir/bpftrace.log" && break; sleep 0.1; done
  grep -q "^Attaching" "$dir/bpftrace.log" || { cat "$dir/bpftrace.log" >&2; echo "bench: bpftrace did not attach in 10 s" >&2; exit 1; }
  sleep 1
}
detach() { kill "$tracer_pid"; wait "$tracer_pid" 2>/dev/null || true; tracer_pid=; }

declare -A results
sites=(nop nop5 imul)
for ((r = 0; r < rounds; r++)); do
  for ((i = 0; i < ${#sites[@]}; i++)); do
    site=${sites[$(((i + r) % ${#sites[@]}))]}
    untraced_ns=$("$bin" "$site" "$calls")
    attach "$site"
    traced_ns=$("$bin" "$site" "$calls")
    detach
    results["$site/bare"]+="$untraced_ns"$'\n'
    results["$site/traced"]+="$traced_ns"$'\n'
    echo "round $r: $site untraced $untraced_ns ns/call, traced $traced_ns ns/call" >&2
  done
done

# Each hit must cost something measurable; a traced loop as fast as the bare one means the probe
# never fired, and the table would be a lie.
declare -A bare traced
for site in "${sites[@]}"; do
  bare[$site]=$(printf '%s' "${results["$site/bare"]}" | median)
  traced[$site]=$(printf '%s' "${results["$site/traced"]}" | median)
  awk -v t="${traced[$site]}" -v b="${bare[$site]}" 'BEGIN {exit !(t - b > 50)}' ||
    { echo "bench: a hit at $site cost under 50 ns: the probe did not fire" >&2; exit 1; }
done

spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f–%.0f", lo, hi}'; }
row() {
  awk -v l="$2" -v b="${bare[$1]}" -v t="${traced[$1]}" -v s="$(printf '%s' "${results["$1/traced"]}" | spread)" \
    'BEGIN {printf "| %s | %.1f | %.0f (%s) | %.0f |\n", l, b, t, s, t - b}'
}
table="| probe site (first instruction) | untraced ns/call | empty program attached ns/call (spread over rounds) | one hit ns |
|---|---:|---:|---:|
$(row nop "\`nop\` (1 byte; a USDT probe)")
$(row nop5 "\`nopl 0x0(%rax,%rax,1)\` (5 bytes)")
$(row imul "\`imul\` (single-stepped)")"
echo "$table"

optimisation="This kernel has no uprobe optimisation (no \`arch_uprobe_optimize\` in /proc/kallsyms): a 5-byte nop is trapped like any other site."
grep -q " arch_uprobe_optimize$" /proc/kallsyms &&
  optimisation="This kernel has uprobe optimisation (\`arch_uprobe_optimize\` in /proc/kallsyms): after its first hit, a 5-byte nop becomes a call into a trampoline that enters the kernel by a system call instead of a breakpoint trap."

# What PostgreSQL's probe sites are, read from its binary: the instruction at each querystat probe.
pg=/usr/lib/postgresql/15/bin/postgres
pg_sites="PostgreSQL 15 is not installed here, so its probe sites were not read."
if [ -x "$pg" ]; then
  pg_sites=$(readelf -n "$pg" | awk '/Name: / {name = $2} /Location: / {sub(",", "", $2); print name, $2}' |
    grep -E "^(query__execute__start|query__execute__done|smgr__md__read__done) " |
    while read -r name loc; do
      printf '%s %s\n' "$name" "$(objdump -d --no-show-raw-insn --start-address="$loc" --stop-address=$((loc + 1)) "$pg" | awk -v a="$(printf '%x' "$((loc))"):" '$1 == a {print $2; exit}')"
    done | sort | uniq -c | awk '{printf "%s%s at %d site(s) on `%s`", (NR > 1 ? "; " : ""), $2, $1, $3}')
  pg_sites="In $("$pg" --version), the probes querystat attaches to sit on these instructions (read from its binary): $pg_sites."
fi

write_doc_section uprobe-site-cost "<!-- uprobe-site-cost:begin -->
## uprobe hit cost by probe site: the floor under USDT tracing

\`bench/uprobe_site_cost.sh $rounds $calls\` on $(date -u +%Y-%m-%d): $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs,
kernel $(uname -r), load average $load_start before the run. $(bpftrace --version | head -1) attaches an empty program
(\`uprobe:…:at_SITE { }\`) at the first instruction of a function a C loop calls $calls times
(bench/c/probe_sites.c, \`cc -O2\`; the script checks each site's instruction in the disassembly);
the loop runs once untraced and once traced per round, the sites in rotating order; medians of $rounds rounds.

$table

$optimisation $pg_sites

The 1-byte nop row is what a probe built by <sys/sdt.h> costs per hit before any program work:
every USDT tracer pays it, bpftrace and querystat alike, and querystat's \`--empty-programs\`
floor pays it at the two probes a query fires. Nothing on the tracer's side lowers it (by hand
on this host: libbpf's uprobe_multi link and a perf-event uprobe cost the same per hit); a
server whose probe sites were 5-byte nops would pay the second row instead, on a kernel with
uprobe optimisation.
<!-- uprobe-site-cost:end -->"
