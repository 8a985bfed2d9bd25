# Shared by the bench/ scripts (sourced, not run).

# Median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {m=(NR+1)/2; if (NR%2) print a[m]; else print (a[m-0.5]+a[m+0.5])/2}'; }

# The kind of host a figure comes from: intel, amd, or the architecture elsewhere; and its label.
host_kind() {
  case $(awk -F': ' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo) in
    GenuineIntel) echo intel ;;
    AuthenticAMD) echo amd ;;
    *) uname -m ;;
  esac
}
host_label() {
  case $(host_kind) in intel) echo "Intel host" ;; amd) echo "AMD host" ;; *) echo "$(uname -m) host" ;; esac
}

# write_doc_section NAME TEXT: put TEXT (which must begin with <!-- NAME:begin --> and end with
# <!-- NAME:end -->) in docs/benchmarks.md as this host kind's section NAME@KIND (KIND from
# host_kind; its first "## " heading gets " — Intel host" and the like), in place of that
# section, else just before another host's NAME section (whose notes below its end marker stay
# with it), else at the end. A figure from one host never replaces another's; every other
# section is kept as it is. Creates the file if missing.
write_doc_section() {
  local base=$1 name doc=docs/benchmarks.md tmp text placed=0
  name="$base@$(host_kind)"
  [ -f "$doc" ] || printf '# Benchmarks\n\nSide-by-side measurements from bench/. Each section says how it was run and on what.\n' > "$doc"
  text=${2//"<!-- $base:begin -->"/"<!-- $name:begin -->"}
  text=${text//"<!-- $base:end -->"/"<!-- $name:end -->"}
  text=$(label="$(host_label)" awk '!done && /^## / {print $0 " — " ENVIRON["label"]; done = 1; next} {print}' <<< "$text")
  grep -qF "<!-- $name:begin -->" "$doc" && placed=1
  tmp=$(mktemp "$doc.XXXXXX")
  # The text goes through the environment: awk -v would interpret backslashes in it.
  section=$text awk -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" \
    -v sibling="<!-- $base@" -v placed="$placed" '
    !placed && !done && index($0, sibling) == 1 && /:begin -->$/ {print ENVIRON["section"] "\n"; done=1}
    index($0, begin) {skip=1; print ENVIRON["section"]; done=1; next}
    index($0, end) {skip=0; next}
    skip {next}
    {print}
    END {if (!done) print "\n" ENVIRON["section"]}
  ' "$doc" > "$tmp" && cat "$tmp" > "$doc"
  rm -f "$tmp"
}

# pg_start DIR [postgres -c options…]: a throwaway PostgreSQL 15 in DIR (owned by postgres), on a
# free loopback port and a socket in DIR; sets pgpid and port and exports PGHOST, PGPORT, PGUSER
# and PGDATABASE. Each wait is bounded. Pair with pg_stop (by PID, never by name).
pg_start() {
  local dir=$1 bin=/usr/lib/postgresql/15/bin
  shift
  chown postgres "$dir"
  runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U platscope --no-sync > "$dir/initdb.log"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # exec: the background job is the postmaster itself, not a subshell.
  (cd "$dir" && exec runuser -u postgres -- "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" \
    -c listen_addresses=127.0.0.1 -c fsync=off "$@" > "$dir/server.log" 2>&1) &
  for _ in $(seq 300); do
    [ "$(sed -n 8p "$dir/data/postmaster.pid" 2>/dev/null | tr -d ' ')" = ready ] && break
    sleep 0.1
  done
  pgpid=$(head -1 "$dir/data/postmaster.pid")
  export PGHOST=$dir PGPORT=$port PGUSER=platscope PGDATABASE=postgres
}

# pg_stop: stops the server pg_start started, by its PID (fast shutdown, then kill after 10 s).
pg_stop() {
  [ -n "${pgpid:-}" ] || return 0
  kill -INT "$pgpid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pgpid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pgpid" 2>/dev/null || true
  pgpid=
}

# The BPF programs' own run time, as the kernel counts it while kernel.bpf_stats_enabled is 1
# (two clock reads around every program run, so runs timed for throughput leave it off).
# bpf_stats_on saves the setting and turns it on; bpf_stats_restore puts the saved one back
# (call it from the script's EXIT trap too).
bpf_stats_on() {
  [ -n "${bpf_stats_saved:-}" ] || bpf_stats_saved=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -qw kernel.bpf_stats_enabled=1
}
bpf_stats_restore() {
  [ -n "${bpf_stats_saved:-}" ] || return 0
  sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_saved"
  bpf_stats_saved=
}

# bpf_prog_runs PID: one line "ID NAME RUN_CNT RUN_TIME_NS" per BPF program that process PID
# holds (read from /proc/PID/fdinfo, each program once however many descriptors or attachments
# it has), named by bpftool; a name the process uses twice gets "~2", "~3" in ID order.
# Counted since each program was loaded, and only while the statistics were on.
bpf_prog_runs() {
  python3 - "$1" <<'PY'
import json, os, subprocess, sys
pid = sys.argv[1]
runs = {}
for fd in os.listdir(f"/proc/{pid}/fdinfo"):
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as f:
            info = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except OSError:
        continue
    # A program's descriptor; a link's names its program too, but has no counts.
    if "prog_id" in info and "run_cnt" in info:
        runs[int(info["prog_id"])] = (int(info["run_cnt"]), int(info["run_time_ns"]))
seen = {}
for prog_id, (cnt, ns) in sorted(runs.items()):
    shown = subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)],
                           capture_output=True, text=True)
    name = json.loads(shown.stdout).get("name", "") if shown.returncode == 0 else ""
    name = name or f"id{prog_id}"
    seen[name] = seen.get(name, 0) + 1
    print(prog_id, name if seen[name] == 1 else f"{name}~{seen[name]}", cnt, ns)
PY
}

# bpf_prog_delta BEFORE AFTER: bpf_prog_runs' lines of one process taken before and after some
# work; prints "NAME RUNS NS" of each program that ran in between.
bpf_prog_delta() {
  awk 'NR == FNR {c[$1] = $3; n[$1] = $4; next}
       $1 in c && $3 > c[$1] {print $2, $3 - c[$1], $4 - n[$1]}' \
    <(printf '%s\n' "$1") <(printf '%s\n' "$2")
}

# bpf_cost_table FILE UNIT: FILE holds lines "TRACER TURN UNITS NAME RUN_CNT RUN_TIME_NS" (UNITS:
# the work the workload did in that turn, counted in UNIT, e.g. queries). Prints a Markdown
# table: per (tracer, program) its runs per UNIT, its ns per run (median over the turns, then
# each turn's) and its ns per UNIT; then per tracer all its programs' ns per UNIT.
bpf_cost_table() {
  python3 - "$1" "$2" <<'PY'
import statistics, sys
path, unit = sys.argv[1], sys.argv[2]
rows = {}    # (tracer, program) -> [(units, runs, ns)], in first-seen order
totals = {}  # tracer -> {turn: [units, ns]}
for line in open(path):
    tracer, turn, units, name, runs, ns = line.split()
    units, runs, ns = float(units), int(runs), int(ns)
    if units <= 0:
        continue
    rows.setdefault((tracer, name), []).append((units, runs, ns))
    totals.setdefault(tracer, {}).setdefault(turn, [units, 0])[1] += ns
med = statistics.median
print(f"| tracer | BPF program | runs per {unit} | ns per run (median) | ns per run, each turn | ns per {unit} |")
print("|---|---|---|---|---|---|")
for (tracer, name), turns in rows.items():
    each = [ns / runs for _, runs, ns in turns]
    print(f"| {tracer} | {name} | {med(r / u for u, r, _ in turns):.2f} | {med(each):.0f} | "
          f"{', '.join('%.0f' % x for x in each)} | {med(ns / u for u, _, ns in turns):.0f} |")
for tracer, turns in totals.items():
    print(f"| {tracer} | all of them | | | | {med(ns / u for u, ns in turns.values()):.0f} |")
PY
}
