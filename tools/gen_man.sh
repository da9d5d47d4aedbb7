#!/usr/bin/env bash
# gen_man.sh BIN TEMPLATE: prints the man page, TEMPLATE (doc/attncap.1.in) with @VERSION@ from
# `BIN --version`, @COMMANDS@ from `BIN help CMD` for every command `BIN --help` lists, and @DATA@
# from `BIN help data`.
set -euo pipefail
bin=$1 template=$2
version=$("$bin" --version | awk '{print $2}')
# roff: a backslash is \e, and a line may not start with '.' or '\''
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
# The page fits 80 columns: man indents a section's text by 7, so --help lines longer than 72 are
# broken at a space, the rest indented as the line's text (an option's description column, else the
# line's own indent).
wrap() {
  awk -v W=72 '{
    line = $0
    while (length(line) > W) {
      ind = match(line, /^ *-[^ ]*( [^ -][^ ]*)*  +/) ? RLENGTH : match(line, /^ */) ? RLENGTH : 0
      if (ind > W / 2) ind = 8
      cut = 0
      for (i = W + 1; i > ind + 1; i--) if (substr(line, i, 1) == " ") { cut = i; break }
      if (!cut) break
      print substr(line, 1, cut - 1)
      rest = substr(line, cut + 1); sub(/^ +/, "", rest)
      line = sprintf("%" ind "s%s", "", rest)
    }
    print line
  }'
}
commands() {
  "$bin" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {exit}'
}
body=$(for c in $(commands); do
  summary=$("$bin" --help | awk -v c="$c" '$1 == c {$1 = ""; sub(/^ +/, ""); print}')
  printf '.SS %s\n%s\n.PP\n.nf\n' "$c" "$(printf '%s\n' "$summary" | esc)"
  "$bin" help "$c" | wrap | esc
  printf '.fi\n'
done)
data=$("$bin" help data | tail -n +3 | wrap | esc)
while IFS= read -r line; do
  case $line in
    @COMMANDS@) printf '%s\n' "$body" ;;
    @DATA@) printf '%s\n' "$data" ;;
    *) printf '%s\n' "${line//@VERSION@/$version}" ;;
  esac
done <"$template"
