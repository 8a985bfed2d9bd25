#!/usr/bin/env bash
# CPU cost of one nicstat sample with 1,000 interfaces: platscope and, when Debian's nicstat is
# installed, nicstat 1.95 side by side, in the same network namespace and the same run.
#
#   bench/nicstat_sample.sh [SAMPLES]       (root; default 10 samples at a 1 s interval)
#
# Method: each tool runs twice inside the namespace, printing 1 line and 1+SAMPLES lines at a
# 1 s interval (nicstat takes whole seconds only); the CPU time (user+sys, from the shell's
# rusage of the child) of the short run is subtracted from the long one, which removes start-up
# (and platscope's one-time read of every interface's facts) and leaves SAMPLES samples. Each
# pair is run 3 times; the median per-sample figure is printed. The interfaces are `dummy`
# devices, or `ifb` devices where the kernel has no dummy driver (both are idle, counter-only
# devices for this purpose). Output goes to /dev/null.
set -euo pipefail
cd "$(dirname "$0")/.."

samples=${1:-10}
count=1000
ns="psbench$$"

[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (network namespaces)" >&2; exit 1; }
command -v ip >/dev/null || { echo "bench: needs iproute2 (scripts/setup.sh installs it)" >&2; exit 1; }

platscope=${PLATSCOPE:-target/release/platscope}
if [ ! -x "$platscope" ]; then
  cargo build --release --locked -p platscope >&2
fi

cleanup() { ip netns del "$ns" 2>/dev/null || true; }
trap cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up

kind=dummy
if ! ip -n "$ns" link add probe0 type dummy 2>/dev/null; then
  kind=ifb
else
  ip -n "$ns" link del probe0
fi
{
  for i in $(seq 0 $((count - 1))); do
    echo "link add d$i type $kind"
    echo "link set d$i up"
  done
} | ip -n "$ns" -batch -
have=$(ip netns exec "$ns" sh -c 'grep -c ":" /proc/net/dev')
echo "interfaces in the namespace: $have ($count $kind devices + lo)"

# CPU seconds (user+sys) of one command, from bash's rusage of the child.
cpu_of() {
  local TIMEFORMAT='%3U %3S' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.3f\n", a[1] + a[2] }'
}

# Median over 3 runs of the per-sample CPU milliseconds of a tool ("$@" = command prefix).
per_sample_ms() {
  local runs=()
  for _ in 1 2 3; do
    local short long
    short=$(cpu_of ip netns exec "$ns" "$@")
    long=$(cpu_of ip netns exec "$ns" "$@" 1 $((samples + 1)))
    runs+=("$(awk -v s="$short" -v l="$long" -v n="$samples" 'BEGIN { printf "%.2f", (l - s) * 1000 / n }')")
  done
  printf '%s\n' "${runs[@]}" | sort -n | sed -n 2p
}

# Interface lines one sample prints (how many interfaces the tool really watches).
lines_of() { ip netns exec "$ns" "$@" | grep -c ' d[0-9]' || true; }

thirty=$(seq -s, -f 'd%g' 0 29)
measure() {
  echo "machine: $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "samples per run: $samples at a 1 s interval; CPU per sample = median of 3 (long - short) / $samples"
  printf '%-24s %-22s %14s %10s\n' "tool" "interfaces asked for" "lines/sample" "CPU ms/sample"
  row() { # label, selection label, command...
    local label=$1 sel=$2; shift 2
    printf '%-24s %-22s %14s %10s\n' "$label" "$sel" "$(lines_of "$@")" "$(per_sample_ms "$@")"
  }
  row "platscope net stat" "all ($have)" "$platscope" net stat
  row "platscope net stat" "-i d0..d29" "$platscope" net stat -i "$thirty"
  if command -v nicstat >/dev/null; then
    row "nicstat $(nicstat -v 2>/dev/null | head -1 | sed 's/nicstat version //')" "all ($have)" nicstat
    row "nicstat" "-i d0..d29" nicstat -i "$thirty"
    echo "note: nicstat 1.95 finds at most the first 30 interfaces here (-i d500: 'no matching interface')"
  else
    echo "nicstat: not installed (apt-get install nicstat) - no side-by-side figure"
  fi
  echo "platscope: $($platscope --version 2>/dev/null | head -1)"
}
table=$(measure)
echo "$table"
. "$(dirname "$0")/lib.sh"
write_doc_section nicstat-sample "<!-- nicstat-sample:begin -->
## Cost of one nicstat sample with 1,000 interfaces

Command: \`bench/nicstat_sample.sh\` — $have interfaces (ifb devices, this kernel has no dummy driver)
in a network namespace; CPU time (user + sys) per sample, run on $(date -u +%Y-%m-%d). Target: < 10 ms.

\`\`\`text
$table
\`\`\`

nicstat 1.95 watches at most 30 interfaces here, so its all-interfaces row is not like for like.
<!-- nicstat-sample:end -->"
