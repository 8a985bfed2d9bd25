# Shared by the bench/ scripts (sourced, not run).

# Median of the numbers on stdin, one per line.
median() { sort -g | awk '{a[NR]=$1} END {m=(NR+1)/2; if (NR%2) print a[m]; else print (a[m-0.5]+a[m+0.5])/2}'; }

# write_doc_section NAME TEXT: put TEXT (which must begin with <!-- NAME:begin --> and end with
# <!-- NAME:end -->) in place of the section of that name in docs/benchmarks.md, or append it;
# every other section is kept as it is. Creates the file if missing.
write_doc_section() {
  local name=$1 doc=docs/benchmarks.md tmp
  [ -f "$doc" ] || printf '# Benchmarks\n\nSide-by-side measurements from bench/. Each section says how it was run and on what.\n' > "$doc"
  tmp=$(mktemp "$doc.XXXXXX")
  # The text goes through the environment: awk -v would interpret backslashes in it.
  section=$2 awk -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" '
    index($0, begin) {skip=1; print ENVIRON["section"]; done=1; next}
    index($0, end) {skip=0; next}
    !skip {print}
    END {if (!done) print "\n" ENVIRON["section"]}
  ' "$doc" > "$tmp" && cat "$tmp" > "$doc"
  rm -f "$tmp"
}
