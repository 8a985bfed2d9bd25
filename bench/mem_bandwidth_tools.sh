#!/usr/bin/env bash
# platscope mem bandwidth (read, copy, copy-nt, write-nt; one thread and all threads) against the
# established tools Debian packages: likwid-bench, mbw, sysbench memory and stress-ng (memrate,
# stream). One run on one machine; every tool runs once per round, the rounds interleave the
# tools (their order rotated each round) so all see the same machine noise, and each figure is
# the median over the rounds. Writes its section of docs/benchmarks.md. Not a test: timings never
# gate anything.
#   bench/mem_bandwidth_tools.sh [ROUNDS [DURATION_MS]]
#     ROUNDS       rounds of every tool (default 3; at least 3 for a median worth the name)
#     DURATION_MS  measuring time of one figure (default 1000). stress-ng's stream stressor
#                  always runs 6 s: it reports no rate for less than 4.5 s of kernel time.
# Installs likwid, mbw, sysbench and stress-ng with apt-get when they are missing (needs root).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
dur_ms=${2:-1000}
[[ $rounds =~ ^[1-9][0-9]*$ && $dur_ms =~ ^[1-9][0-9]*$ ]] || {
  echo "usage: $0 [ROUNDS [DURATION_MS]] (positive integers)" >&2
  exit 2
}
started=$(date +%s)
out=target/bench/mem-bandwidth-tools
rm -rf "$out"
mkdir -p "$out"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the tools ---------------------------------------------------------------------------------
pkgs=(likwid mbw sysbench stress-ng)
is_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in "${pkgs[@]}"; do is_installed "$p" || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "installing with apt-get: ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" > "$out/apt.log" 2>&1 ||
    { apt-get update -qq >> "$out/apt.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >> "$out/apt.log" 2>&1; } ||
    echo "apt-get install failed: $(tail -1 "$out/apt.log")" >&2
fi
installed_now=() versions=()
for p in "${pkgs[@]}"; do
  if is_installed "$p"; then
    versions+=("$p $(dpkg-query -W -f='${Version}' "$p")")
    [[ " ${missing[*]} " == *" $p "* ]] && installed_now+=("$p")
  else
    versions+=("$p (not installed: $(tail -1 "$out/apt.log" 2>/dev/null))")
  fi
done
if ((${#missing[@]} == 0)); then install_note="all already installed"
elif ((${#installed_now[@]})); then install_note="installed by this run: ${installed_now[*]}"
else install_note="apt-get could not install: ${missing[*]}"
fi
echo "packages: $install_note; versions: $(IFS=';'; echo "${versions[*]}")" >&2

P=target/release/platscope
[ -x "$P" ] || cargo build --release -q -p platscope

# --- sizes and CPUs ----------------------------------------------------------------------------
# LLC: the summed size of the caches of the highest level (all their instances).
# Only the cache instances (objects with "cpus"): topo's JSON also lists the CPUID cache
# descriptors, and counting those too doubled the LLC (66 MiB for one 33 MiB L3).
command -v jq > /dev/null || { echo "jq is needed (apt-get install jq)" >&2; exit 1; }
llc=$("$P" topo --json | jq '[.. | objects | select(has("level") and has("size_bytes") and has("cpus"))]
  | (map(.level) | max) as $top | map(select(.level == $top) | .size_bytes) | add // 0')
# Each thread's buffer (each array, for copy): the smallest power of two ≥ 4× the LLC and
# ≥ 32 MiB. A power of two because sysbench takes no other block size; mbw takes whole MiB,
# likwid-bench bytes with a "B" suffix, the rest bytes.
min=$((4 * llc > 33554432 ? 4 * llc : 33554432))
S=33554432
while ((S < min)); do S=$((S * 2)); done
S_mib=$((S / 1048576))
fmt_bytes() { awk -v b="$1" 'BEGIN { if (b >= 1073741824) printf "%g GiB", b/1073741824; else if (b >= 1048576) printf "%g MiB", b/1048576; else printf "%g KiB", b/1024 }'; }

# CPUs this script may use, in the kernel's order; one thread uses the first, all threads all.
mapfile -t allowed < <(awk '/^Cpus_allowed_list/ {n = split($2, r, ","); for (i = 1; i <= n; i++) {
  m = split(r[i], ab, "-"); for (c = ab[1]; c <= ab[m]; c++) print c } }' /proc/self/status)
all=${#allowed[@]}
threadsets=(1)
((all > 1)) && threadsets+=("$all")
cpus_of() { local IFS=,; echo "${allowed[*]:0:$1}"; }

# The widest vectors this CPU has: the tools' kernels of that width are the anchors. platscope
# picks its ISA per run (a trial of its two widest; the rows below name what it ran with), so on
# an AVX-512 CPU likwid-bench's 256-bit kernels run too and count as anchors beside the 512-bit
# ones: the widest is not always the fastest (Skylake-SP copies).
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
if [[ $flags == *" avx512f"* ]]; then isa=avx512 lk_sfx=_avx512 mr_width=512 lk_narrow=_avx
elif [[ $flags == *" avx2"* ]]; then isa=avx2 lk_sfx=_avx mr_width=256 lk_narrow=_sse
elif [[ $flags == *" sse2"* ]]; then isa=sse2 lk_sfx=_sse mr_width=128 lk_narrow=
else isa=scalar lk_sfx= mr_width=64 lk_narrow=
fi
lk_read=load$lk_sfx lk_copy=copy$lk_sfx lk_copy_nt=copy_mem$lk_sfx lk_nt=store_mem$lk_sfx
mr_read=read$mr_width
# The next width down (none below SSE); only run where platscope's trial has it as a candidate.
lk2_read= lk2_copy= lk2_copy_nt= lk2_nt=
if [[ -n $lk_narrow ]]; then
  lk2_read=load$lk_narrow lk2_copy=copy$lk_narrow lk2_copy_nt=copy_mem$lk_narrow lk2_nt=store_mem$lk_narrow
fi


# glibc memcpy (mbw's MEMCPY) switches to non-temporal stores above this many bytes.
nt_threshold=$( (/lib64/ld-linux-x86-64.so.2 --list-tunables || ld.so --list-tunables) 2>/dev/null |
  awk -F'[: ]+' '/x86_non_temporal_threshold/ {print $2; exit}' || true)
if [[ $nt_threshold =~ ^0x[0-9a-fA-F]+$ ]]; then
  nt_threshold=$((nt_threshold))
  if ((S > nt_threshold)); then memcpy_stores="non-temporal stores (the buffer is above glibc's x86_non_temporal_threshold, $(fmt_bytes "$nt_threshold"))"
  else memcpy_stores="not non-temporal stores (the buffer is below glibc's x86_non_temporal_threshold, $(fmt_bytes "$nt_threshold"): a vector loop or rep movsb)"
  fi
else memcpy_stores="stores of glibc's choosing (its x86_non_temporal_threshold could not be read)"
fi

# --- measuring ---------------------------------------------------------------------------------
declare -A vals errs cmds notes
record() { vals["$1|$2"]+="$3 "; }
fail() { errs["$1|$2"]=${3:-it failed and printed nothing}; }
# Runs a command with its output in a log; remembers the command line for the doc.
# Runs a command with transparent huge pages disabled for it and its children
# (prctl PR_SET_THP_DISABLE, inherited across fork and exec).
thp_off() {
  python3 -c 'import ctypes, os, sys
if ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_THP_DISABLE) failed")
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
run_logged() {
  local log=$1
  shift
  last_cmd=$(printf '%s ' "$@")
  last_cmd=${last_cmd% }
  "$@" > "$log" 2>&1
}
# What a failed run said: its first two error lines, else its last line.
why() {
  { grep -m2 -iE 'error|fatal|fail|cannot|unable|denied|not supported' "$1" || tail -1 "$1"; } |
    tr -d '\r' | cut -c1-200 | paste -sd'\t' - | sed 's/\t/ \/ /g'
}
mib_to_gb() { awk -v v="$1" -v f="${2:-1}" 'BEGIN {printf "%.4f", v * f * 1048576 / 1e9}'; }
json_field() { grep -o "\"$1\": *[0-9.e+-]*" | head -1 | sed 's/.*: *//'; }
secs_at_least() { awk -v d="$dur_ms" -v m="$1" -v k="${2:-1}" 'BEGIN {s = int(d * k / 1000 + 0.999); print (s < m ? m : s)}'; }

job_platscope() { # KERNEL T
  local k=$1 T=$2 fig="platscope $1" log="$out/platscope-$1.T$2.r$r.log" v
  if run_logged "$log" "$P" mem bandwidth --kernel "$k" --threads "$T" --physcpubind "$(cpus_of "$T")" \
    --size "$S" --duration-ms "$dur_ms" --json --no-store &&
    v=$(json_field median < "$log") && [[ -n $v ]]; then
    record "$fig" "$T" "$v"
    ran_with["$fig|$T"]+="$(grep -o '"isa": *"[a-z0-9]*"' "$log" | head -1 | sed 's/.*: *"//; s/"//')/$(grep -o '"walk": *"[a-z-]*"' "$log" | head -1 | sed 's/.*: *"//; s/"//') "
  else fail "$fig" "$T" "$(why "$log")"; fi
  cmds["$fig|$T"]=$last_cmd
}
declare -A ran_with

declare -A lk_last
job_likwid() { # TEST STREAMS T
  local t=$1 k=$2 T=$3 fig="likwid-bench $1" log="$out/likwid-$1.T$3.r$r.log" total iters v ran
  if ! command -v likwid-bench > /dev/null; then fail "$fig" "$T" "likwid-bench is not installed"; return; fi
  total=$((S * k * T)) # -W's size covers all streams of all threads
  # Iterations for about DURATION_MS at the rate this kernel had last round (10 GB/s at first):
  # likwid-bench's own calibration (-s) costs seconds per run.
  iters=$(awk -v d="$dur_ms" -v g="${lk_last[$fig|$T]:-10}" -v b="$total" \
    'BEGIN {i = int(d / 1000 * g * 1e9 / b + 0.999); print (i < 10 ? 10 : i)}')
  # likwid-bench 5.2 refuses a byte count of 2^31 or more ("Stream size cannot be read"); its
  # kB is 1000 bytes, so larger sizes go in whole kB, at most 999 bytes (≪ 0.01 %) short.
  local size="${total}B"
  ((total < 2147483648)) || size="$((total / 1000))kB"
  if run_logged "$log" likwid-bench -t "$t" -W "N:$size:$T" -i "$iters" &&
    v=$(awk '/^MByte\/s:/ {printf "%.4f", $2 / 1000}' "$log") && [[ -n $v ]]; then
    record "$fig" "$T" "$v"
    lk_last["$fig|$T"]=$v
    ran=$(grep -o 'Global Thread [0-9]* running on hwthread [0-9]*' "$log" | awk '{print $NF}' | paste -sd, -)
    [[ $ran == "$(cpus_of "$T")" ]] || notes["$fig|$T"]="its threads ran on hwthreads $ran, not $(cpus_of "$T")"
  else fail "$fig" "$T" "$(why "$log")"; fi
  cmds["$fig|$T"]="$last_cmd   (-i chosen per round for ≈ $dur_ms ms)"
}

job_mbw() { # T: one single-threaded mbw per CPU, all at once, their rates summed
  local T=$1 n=$((dur_ms / 40)) i pids=() ok=1 m sum cmdline=""
  ((n < 5)) && n=5
  if ! command -v mbw > /dev/null; then
    for m in MEMCPY DUMB MCBLOCK; do fail "mbw $m" "$T" "mbw is not installed"; done
    return
  fi
  for ((i = 0; i < T; i++)); do
    taskset -c "${allowed[i]}" mbw -q -n "$n" -t0 -t1 -t2 "$S_mib" > "$out/mbw.T$T.r$r.i$i.log" 2>&1 &
    pids+=($!)
    cmdline+="${cmdline:+ & }taskset -c ${allowed[i]} mbw -q -n $n -t0 -t1 -t2 $S_mib"
  done
  for i in "${!pids[@]}"; do wait "${pids[i]}" || ok=0; done
  for m in MEMCPY DUMB MCBLOCK; do
    sum=0
    for ((i = 0; i < T; i++)); do
      # Median of this instance's iterations (MiB of the array copied per second).
      v=$(awk -v m="$m" '$1 ~ /^[0-9]+$/ && $3 == m {print $9}' "$out/mbw.T$T.r$r.i$i.log")
      if [[ $ok == 0 || -z $v ]]; then sum=; break; fi
      v=$(median <<< "$v")
      sum=$(awk -v a="$sum" -v b="$v" 'BEGIN {print a + b}')
    done
    if [[ -n $sum ]]; then record "mbw $m" "$T" "$(mib_to_gb "$sum" 2)"
    else fail "mbw $m" "$T" "$(why "$out/mbw.T$T.r$r.i0.log")"; fi
    cmds["mbw $m|$T"]=$cmdline
  done
}

job_sysbench() { # T
  local T=$1 fig="sysbench memory read" log="$out/sysbench.T$1.r$r.log" v
  if ! command -v sysbench > /dev/null; then fail "$fig" "$T" "sysbench is not installed"; return; fi
  if run_logged "$log" taskset -c "$(cpus_of "$T")" sysbench memory --threads="$T" --memory-block-size="$S" \
    --memory-total-size=100T --memory-scope=local --memory-oper=read --memory-access-mode=seq \
    --time="$(secs_at_least 1)" run &&
    v=$(grep -o '([0-9.]* MiB/sec)' "$log" | tr -d '(' | awk '{print $1}') && [[ -n $v ]]; then
    record "$fig" "$T" "$(mib_to_gb "$v")"
  else fail "$fig" "$T" "$(why "$log")"; fi
  cmds["$fig|$T"]=$last_cmd
}

job_memrate() { # T: every method runs in turn (0.15 cannot pick one); read and NT-write kept
  local T=$1 log="$out/memrate.T$1.r$r.log" m v rc=0
  if ! command -v stress-ng > /dev/null; then
    for m in "$mr_read" write128nt; do fail "stress-ng memrate $m" "$T" "stress-ng is not installed"; done
    return
  fi
  # --memrate-flush: memrate cycles all its methods over one buffer and by default does not
  # flush the caches between them, so part of a read pass is served from the last-level cache
  # the previous method filled; flushing makes its figure a memory figure like the others'.
  # thp_off: memrate madvises its buffer MADV_HUGEPAGE, and khugepaged was seen collapsing
  # part of it into 2 MiB pages mid-run (1/8 of it within 1.5 s); every other tool here,
  # platscope included, reads 4 KiB pages, which streamed ~20% slower than THP on the AMD EPYC
  # guest of docs/benchmarks.md.
  run_logged "$log" thp_off taskset -c "$(cpus_of "$T")" stress-ng --memrate "$T" --memrate-bytes "$S" \
    --memrate-flush --metrics-brief -t "$(secs_at_least 2 3)" || rc=$?
  for m in "$mr_read" write128nt; do
    cmds["stress-ng memrate $m|$T"]=$last_cmd
    # "memrate   17962.66 read256 MB per sec (geometic mean of N instances)": MB is MiB here
    # (stress-ng's MB is 2^20), and the figure is the mean of one instance: × T.
    v=$(awk -v m="$m" '/memrate/ && / per sec/ {for (i = 1; i <= NF; i++) if ($i == m) {
      for (j = 1; j <= NF; j++) if ($j ~ /^[0-9]+\.[0-9]+$/) {print $j; exit} } }' "$log")
    if ((rc == 0)) && [[ -n $v ]]; then record "stress-ng memrate $m" "$T" "$(mib_to_gb "$v" "$T")"
    elif ((rc == 0)); then fail "stress-ng memrate $m" "$T" "stress-ng ran but reported no $m rate"
    else fail "stress-ng memrate $m" "$T" "$(why "$log")"; fi
  done
}

job_stream() { # T
  local T=$1 fig="stress-ng stream" log="$out/stream.T$1.r$r.log" v
  if ! command -v stress-ng > /dev/null; then fail "$fig" "$T" "stress-ng is not installed"; return; fi
  # Each instance makes three arrays of 4 × (L3 size / instances): S each.
  if run_logged "$log" taskset -c "$(cpus_of "$T")" stress-ng --stream "$T" --stream-l3-size $((S / 4 * T)) \
    --metrics-brief -t 6 &&
    v=$(awk '/stream: memory rate:/ {for (i = 1; i < NF; i++) if ($(i+1) == "MB" && $(i+2) ~ /^(read|write)\/sec/) s += $i; n++}
      END {if (n) print s}' "$log") && [[ -n $v ]]; then
    record "$fig" "$T" "$(mib_to_gb "$v")"
  else fail "$fig" "$T" "$(grep -m1 -o 'stream: run.*' "$log" || why "$log")"; fi
  cmds["$fig|$T"]=$last_cmd
}

jobs=("platscope read" "platscope read-line" "platscope copy" "platscope copy-nt" "platscope write-nt"
  "likwid $lk_read 1" "likwid clload 1" "likwid $lk_copy 2" "likwid $lk_copy_nt 2" "likwid $lk_nt 1" mbw
  sysbench memrate stream)
[[ -n $lk2_read ]] && jobs+=("likwid $lk2_read 1" "likwid $lk2_copy 2" "likwid $lk2_copy_nt 2" "likwid $lk2_nt 1")
for ((r = 1; r <= rounds; r++)); do
  for T in "${threadsets[@]}"; do
    for ((j = 0; j < ${#jobs[@]}; j++)); do
      set -- ${jobs[(j + (r - 1) * 3) % ${#jobs[@]}]}
      t0=$(date +%s.%N)
      case $1 in
        platscope) job_platscope "$2" "$T" ;;
        likwid) job_likwid "$2" "$3" "$T" ;;
        mbw) job_mbw "$T" ;;
        sysbench) job_sysbench "$T" ;;
        memrate) job_memrate "$T" ;;
        stream) job_stream "$T" ;;
      esac
      echo "round $r, $T thread(s): $* $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f s", b - a}')" >&2
    done
  done
done

# --- the doc -----------------------------------------------------------------------------------
# med FIG T: median over the rounds, empty when it never ran.
med() { local v=${vals["$1|$2"]:-}; [[ -n $v ]] && echo "$v" | tr ' ' '\n' | grep . | median || true; }
range() { echo "${vals["$1|$2"]:-}" | tr ' ' '\n' | grep . | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "%.2f–%.2f", lo, hi}'; }
nruns() { echo "${vals["$1|$2"]:-}" | wc -w; }
f2() { printf %.2f "$1"; }

vendor=$(awk -F': ' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo)
nt_why="stress-ng $(stress-ng --version 2>/dev/null | awk '{print $3}') reported no write128nt"
if [[ $(stress-ng --version 2>/dev/null | awk '{print $3}') =~ ^0\.(1[0-5]|[0-9])\. && $vendor != GenuineIntel ]]; then
  nt_why+=": its x86 feature checks (stress_cpu_is_x86) accept only GenuineIntel, so its non-temporal methods are skipped on this $vendor CPU"
fi

# The tools' figures that stand for each platscope kernel, one cell per tool: "=" a matching
# kernel (it counts towards the best; of several, the best is shown); "~" one shown in brackets
# beside it that is not the same kernel; "-" no such kernel, and why.
declare -A map
map[read]="=likwid-bench $lk_read;-copies only;=sysbench memory read;=stress-ng memrate $mr_read"
# glibc's memcpy is compared with copy-nt: for buffers this large it copies without
# write-allocate reads (non-temporal stores above its x86_non_temporal_threshold; below it,
# `rep movsb`, whose figure here too sits at copy-nt's, above what ordinary stores reach), and
# that is what copy-nt does. Under copy it is shown in brackets.
# One load per 64-byte line: likwid-bench's clload is the same kernel (it loads the first
# element of each line); the others have none.
map[read-line]="=likwid-bench clload;-copies only;-no line-stride read;-no line-stride read"
map[copy]="=likwid-bench $lk_copy;=mbw DUMB,~mbw MEMCPY,~mbw MCBLOCK;-no copy operation;~stress-ng stream"
map[copy-nt]="=likwid-bench $lk_copy_nt;=mbw MEMCPY;-no copy operation;-no non-temporal copy"
map[write-nt]="=likwid-bench $lk_nt;-copies only;-ordinary stores only (its write is platscope's write);=stress-ng memrate write128nt"
if [[ -n $lk2_read ]]; then # the narrower likwid kernel counts too: of the two, the better
  map[read]=${map[read]/=likwid-bench $lk_read;/=likwid-bench $lk_read,=likwid-bench $lk2_read;}
  map[copy]=${map[copy]/=likwid-bench $lk_copy;/=likwid-bench $lk_copy,=likwid-bench $lk2_copy;}
  map[copy-nt]=${map[copy-nt]/=likwid-bench $lk_copy_nt;/=likwid-bench $lk_copy_nt,=likwid-bench $lk2_copy_nt;}
  map[write-nt]=${map[write-nt]/=likwid-bench $lk_nt;/=likwid-bench $lk_nt,=likwid-bench $lk2_nt;}
fi

below=()
table="| kernel | threads (CPUs) | platscope | likwid-bench | mbw | sysbench | stress-ng | best other | platscope / best |"
table+=$'\n'"|---|---|---:|---:|---:|---:|---:|---|---:|"
for k in read read-line copy copy-nt write-nt; do
  for T in "${threadsets[@]}"; do
    p=$(med "platscope $k" "$T")
    row="| $k | $T ($(cpus_of "$T")) | $([[ -n $p ]] && f2 "$p" || echo failed) |"
    best= best_fig=
    IFS=';' read -ra cells <<< "${map[$k]}"
    for cell in "${cells[@]}"; do
      if [[ $cell == -* ]]; then row+=" n/a: ${cell:1} |"; continue; fi
      top= top_fig= errtxt= aside=
      IFS=',' read -ra figs <<< "$cell"
      for spec in "${figs[@]}"; do
        kind=${spec:0:1} fig=${spec:1}
        # Several mbw processes are not released together: while one runs alone it gets the
        # memory to itself, so their sum overstates; shown, not counted.
        [[ $T -gt 1 && $fig == mbw* && $kind == "=" ]] && kind=u
        v=$(med "$fig" "$T")
        e=${errs["$fig|$T"]:-}
        if [[ -n $v && $kind == "u" ]]; then
          aside+=" ($(f2 "$v") ${fig#* }: $T processes not started together, summed; not counted)"
        elif [[ -n $v && $kind == "~" ]]; then
          aside+=" ($(f2 "$v") ${fig#* }, not the same kernel)"
        elif [[ -n $v ]]; then
          if [[ -z $top ]] || awk -v a="$v" -v b="$top" 'BEGIN {exit !(a > b)}'; then top=$v top_fig=$fig; fi
        elif [[ $e == *"reported no"* ]]; then errtxt="n/a: not reported (see below)"
        elif [[ -n $e ]]; then errtxt="failed (see below)"; fi
      done
      if [[ -n $top ]]; then
        row+=" $(f2 "$top") (${top_fig#* })$aside |"
        if [[ -z $best ]] || awk -v a="$top" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$top best_fig=$top_fig; fi
      else
        aside=${aside# }
        row+=" ${errtxt:-${aside:-n/a}}${errtxt:+${aside:+ $aside}} |"
      fi
    done
    if [[ -n $best && -n $p ]]; then
      ratio=$(awk -v a="$p" -v b="$best" 'BEGIN {printf "%.3f", a / b}')
      if awk -v x="$ratio" 'BEGIN {exit !(x < 1)}'; then
        row+=" $best_fig | **$ratio (below)** |"
        below+=("- **$k, $T thread(s): platscope $(f2 "$p") GB/s is below $best_fig at $(f2 "$best") GB/s: ratio $ratio.**")
      else row+=" $best_fig | $ratio |"; fi
    elif [[ -n $best ]]; then row+=" $best_fig | n/a (platscope failed) |"
    else row+=" none measured | n/a |"; fi
    table+=$'\n'"$row"
  done
done

# Every figure, with what it counts and how it became GB/s.
declare -A counts
counts["platscope read"]="bytes loaded (vector loads of the ISA its trial chose); reported in GB/s; the median of its 10 rounds per run"
counts["platscope read-line"]="whole 64-byte lines fetched, one 8-byte load per line; GB/s as reported"
counts["likwid-bench clload"]="whole 64-byte lines fetched (the array's bytes), one load per line; MByte/s ÷ 1000"
counts["platscope copy"]="bytes loaded + stored, ordinary stores, RFO not counted (STREAM); GB/s as reported"
counts["platscope copy-nt"]="bytes loaded + stored with non-temporal stores (no RFO); GB/s as reported"
counts["likwid-bench $lk_copy_nt"]="bytes loaded + stored with non-temporal stores; MByte/s ÷ 1000"
counts["platscope write-nt"]="bytes stored with non-temporal stores; GB/s as reported"
counts["likwid-bench $lk_read"]="bytes loaded; MByte/s (10^6) ÷ 1000"
counts["likwid-bench $lk_copy"]="bytes loaded + stored, ordinary stores, RFO not counted (STREAM); MByte/s ÷ 1000"
counts["likwid-bench $lk_nt"]="bytes stored with non-temporal stores (movntpd); MByte/s ÷ 1000"
if [[ -n $lk2_read ]]; then
  counts["likwid-bench $lk2_read"]="${counts["likwid-bench $lk_read"]} (the narrower vectors)"
  counts["likwid-bench $lk2_copy"]="${counts["likwid-bench $lk_copy"]} (the narrower vectors)"
  counts["likwid-bench $lk2_copy_nt"]="${counts["likwid-bench $lk_copy_nt"]} (the narrower vectors)"
  counts["likwid-bench $lk2_nt"]="${counts["likwid-bench $lk_nt"]} (the narrower vectors)"
fi
counts["mbw MEMCPY"]="glibc memcpy, $memcpy_stores; mbw's MiB/s counts the array once: × 2 (read + written, STREAM) × 1.048576 ÷ 1000"
counts["mbw DUMB"]="b[i]=a[i], one 8-byte load and ordinary store per element; × 2 × 1.048576 ÷ 1000"
counts["mbw MCBLOCK"]="mempcpy of 256 KiB blocks, but mbw 1.2.2 (seen in Debian's build; $(dpkg-query -W -f='${Version}' mbw 2>/dev/null || echo 'version unknown') here) never advances the source: it copies the same 256 KiB (cache-resident) block over the whole destination, so only the stores reach memory; × 2 × 1.048576 ÷ 1000 all the same"
counts["sysbench memory read"]="bytes read, one 8-byte scalar load at a time, per-thread buffer (--memory-scope=local); MiB/s × 1.048576 ÷ 1000"
counts["stress-ng memrate $mr_read"]="bytes read with ${mr_width}-bit vector loads; stress-ng's MB is MiB; it prints the mean of one instance: × instances × 1.048576 ÷ 1000"
counts["stress-ng memrate write128nt"]="bytes stored with 128-bit non-temporal stores; as above"
counts["stress-ng stream"]="read + written bytes of copy, scale, add and triad in turn (6 array reads : 4 writes), RFO not counted; MiB/s summed over instances × 1.048576 ÷ 1000"
figs_order=("platscope read" "likwid-bench $lk_read" "sysbench memory read" "stress-ng memrate $mr_read"
  "platscope read-line" "likwid-bench clload"
  "platscope copy" "likwid-bench $lk_copy" "mbw MEMCPY" "mbw DUMB" "mbw MCBLOCK" "stress-ng stream"
  "platscope copy-nt" "likwid-bench $lk_copy_nt"
  "platscope write-nt" "likwid-bench $lk_nt" "stress-ng memrate write128nt")
[[ -n $lk2_read ]] && figs_order+=("likwid-bench $lk2_read" "likwid-bench $lk2_copy" "likwid-bench $lk2_copy_nt" "likwid-bench $lk2_nt")
# The ISA and walk each platscope run ran with, as its trial chose (read-line's loads are
# scalar whatever the ISA; only its walk is chosen).
isa_lines=$(
  for k in read read-line copy copy-nt write-nt; do
    for T in "${threadsets[@]}"; do
      [[ -n ${ran_with["platscope $k|$T"]:-} ]] && echo "- $k, $T thread(s): ${ran_with["platscope $k|$T"]% }"
    done
  done
)
detail=$(
  echo "| figure | threads | counts, and the conversion to GB/s | median GB/s | range over rounds | rounds |"
  echo "|---|---:|---|---:|---|---:|"
  for fig in "${figs_order[@]}"; do
    for T in "${threadsets[@]}"; do
      v=$(med "$fig" "$T")
      e=${errs["$fig|$T"]:-}
      if [[ -n $v ]]; then cell="$(f2 "$v") | $(range "$fig" "$T") | $(nruns "$fig" "$T")"
      elif [[ $fig == "stress-ng memrate write128nt" && $e == *"reported no"* ]]; then cell="n/a | $nt_why | 0"
      else cell="failed | ${e//|/\\|} | 0"; fi
      [[ -n $v && -n $e ]] && cell+=" (a round failed: ${e//|/\\|})"
      [[ -n ${notes["$fig|$T"]:-} ]] && cell+=" (${notes["$fig|$T"]})"
      echo "| $fig | $T | ${counts[$fig]} | $cell |"
    done
  done
)
# One line per command, naming every figure it gave.
commands=$(
  for T in "${threadsets[@]}"; do
    for fig in "${figs_order[@]}"; do
      [[ -n ${cmds["$fig|$T"]:-} ]] && printf '%s\t%s\n' "$fig" "${cmds["$fig|$T"]}"
    done
  done | awk -F'\t' '{if ($2 in figs) figs[$2] = figs[$2] ", " $1; else {figs[$2] = $1; order[++n] = $2}}
    END {for (i = 1; i <= n; i++) print "# " figs[order[i]] "\n" order[i]}'
)
elapsed=$(($(date +%s) - started))
below_text="platscope is at or above the best matching tool in every row that has one."
((${#below[@]})) && below_text=$(printf '%s\n' "${below[@]}")

section=$(cat <<MD
<!-- mem-bandwidth-tools:begin -->
## Memory bandwidth vs established tools (likwid-bench, mbw, sysbench, stress-ng)

Command: \`bench/mem_bandwidth_tools.sh $rounds $dur_ms\` — $rounds round(s); in each, every tool runs
once per thread count, the tools' order rotated from round to round; each figure is the median over
the rounds. About $dur_ms ms per figure (stress-ng stream 6 s). Run on $(date -u +%Y-%m-%d); it took
${elapsed} s.

Machine: $("$P" topo | head -1); last-level cache $(fmt_bytes "$llc") in all; kernel $(uname -r);
$("$P" topo | awk '/THP|clocksource|hypervisor/ {$1=$1; printf "%s; ", $0}')memory $(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo);
Widest vectors: $isa (the tools' anchors; platscope's runs name theirs below the table). Load average at the start: $load_start; at the end: $(cut -d' ' -f1-3 /proc/loadavg).

platscope: $("$P" --version 2>/dev/null | head -1), binary built $(date -u -r "$P" '+%Y-%m-%d %H:%M UTC'), tree at
$(git describe --always --dirty 2>/dev/null || echo "an unknown commit"). Tools: $(IFS=';'; echo "${versions[*]}" | sed 's/;/, /g') ($install_note).

Every tool works on the same buffer size per thread: $(fmt_bytes "$S") per array ($S bytes; copy: a
source and a destination of that size; stress-ng stream: three), ≥ 4× the last-level cache. Threads
are pinned to the same CPUs: platscope with \`--physcpubind\`, likwid-bench by its \`N\` domain's
first hwthreads (checked against the CPUs it reports), one mbw per CPU with \`taskset\`; sysbench and
stress-ng run under \`taskset -c\` with the CPU set, their threads/instances not pinned one by one.

GB/s throughout is 10^9 bytes per second, bytes counted STREAM's way (bytes read + bytes stored;
write-allocate (RFO) reads not counted), as platscope counts (docs/mem.md).

$table

$below_text

The ISA and walk platscope ran with (ISA/walk), per run in round order. With neither \`--isa\` nor
\`--walk\` given, a trial on the run's own buffers tries its two widest ISAs walking the buffers
front to back, then the same walking four 4 KiB pages at a time (a step in each in turn, as
glibc's memcpy does for large copies: four streams for the prefetchers where front to back gives
one); a later candidate is taken only when more than 3 % faster. Every byte is read or written
once per pass either way. The other tools walk front to back, except glibc's memcpy (mbw MEMCPY),
which interleaves pages too for copies this large (this glibc's memmove has loops of
non-temporal stores to two and to four pages in turn):

$isa_lines

How the tools map to platscope's kernels:

- **read**: likwid-bench \`$lk_read\` (the widest vectors, $isa)${lk2_read:+ and \`$lk2_read\` (the next width down; the better of the two counts, as for every likwid-bench kernel below)}, stress-ng memrate
  \`$mr_read\` (the same width; memrate has no option to run one method in this version, so each run
  cycles through all its methods and this one gets a share of the time), sysbench memory
  \`--memory-oper=read\` (8-byte scalar loads). mbw only copies.
- **copy**: likwid-bench \`$lk_copy\` (ordinary stores, as platscope's copy); mbw DUMB (an
  element-by-element loop); mbw MEMCPY in brackets (see copy-nt). mbw reports MiB of *one* array per second, i.e. bytes copied
  once, so its figures are × 2 for read + write, then MiB → GB. mbw's MCBLOCK is shown in brackets
  and does not count: this mbw copies one 256 KiB source block, from cache, again and again, so it
  reads no memory (its loop passes the same source pointer to every \`mempcpy\`). stress-ng's
  stream reports a read and a write rate over copy, scale, add and triad run in turn; their sum is
  in STREAM's accounting but it is not a copy-only figure, so it is shown in brackets and does not
  count towards the best. sysbench has no copy.
- **copy-nt**: likwid-bench \`$lk_copy_nt\` (non-temporal stores, as platscope's copy-nt); glibc's
  memcpy (mbw MEMCPY; at this size: $memcpy_stores). Either way a large memcpy avoids most
  write-allocate reads, as copy-nt does, so this is where it is compared; under copy it is
  shown in brackets.
- **write-nt**: likwid-bench \`$lk_nt\` (non-temporal vector stores); stress-ng memrate \`write128nt\`
  when it reports it. sysbench's \`--memory-oper=write\` uses ordinary stores (platscope's \`write\`,
  not \`write-nt\`); mbw only copies. (likwid's \`stream_mem*\` kernels are triads with non-temporal
  stores, not pure stores.)
- Where the threads column says more than one, mbw's figure is the sum of one single-threaded mbw
  per CPU, started together but not synchronised; stress-ng's memrate instances run their methods
  unsynchronised too, so one may be writing while another reads.

Every figure:

$detail

Commands (the last round's; likwid-bench's \`-i\` varies by round):

\`\`\`text
$commands
\`\`\`
<!-- mem-bandwidth-tools:end -->
MD
)

doc=docs/benchmarks.md
write_doc_section mem-bandwidth-tools "$section"
echo "$table"
echo "$below_text"
echo "logs in $out; wrote $doc; took ${elapsed} s" >&2
