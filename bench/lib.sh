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
