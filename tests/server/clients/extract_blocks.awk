# Takes the marked code blocks out of docs/clients.md. A block belongs to a recipe when the line
# before its opening fence (blank lines allowed between) is
#   <!-- test: NAME -->             the block is run (its fence's language: js or sh)
#   <!-- test: NAME file=PATH -->   the block is written to PATH (~/ = the client's HOME) before the run
# Writes each block to OUT/N (N counts from 1) and prints one manifest line per block:
#   N <TAB> NAME <TAB> LANG <TAB> PATH-or-"-"
# A marker not followed by a fenced block, or a block left open, is an error naming the line (exit 1).
# Usage: awk -v out=DIR -f extract_blocks.awk docs/clients.md
function fail(msg) {
  printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
  failed = 1
  exit 1
}
/^<!-- test: / && !in_block {
  if (pending) fail("test marker '" name "' is not followed by a code block")
  line = $0
  if (!sub(/^<!-- test: /, "", line) || !sub(/ *-->[ \t]*$/, "", line)) fail("malformed test marker: " $0)
  n_words = split(line, words, / +/)
  name = words[1]
  target = "-"
  for (i = 2; i <= n_words; i++) {
    if (words[i] ~ /^file=./) target = substr(words[i], 6)
    else fail("unknown attribute '" words[i] "' in test marker (only file=PATH)")
  }
  if (name !~ /^[a-z0-9][a-z0-9_-]*$/) fail("recipe name '" name "' must be lower-case letters, digits, - or _")
  pending = 1
  marker_line = FNR
  next
}
pending && /^[ \t]*$/ { next }
pending && /^```/ {
  lang = substr($0, 4)
  sub(/[ \t].*$/, "", lang)
  pending = 0
  in_block = 1
  n++
  file = out "/" n
  printf "" > file
  next
}
pending { fail("test marker '" name "' (line " marker_line ") is not followed by a code block") }
in_block && /^```[ \t]*$/ {
  in_block = 0
  close(file)
  printf "%d\t%s\t%s\t%s\n", n, name, lang, target
  next
}
in_block { print > file }
END {
  if (failed) exit 1
  if (pending) { printf "%s: test marker '%s' (line %d) is not followed by a code block\n", FILENAME, name, marker_line > "/dev/stderr"; exit 1 }
  if (in_block) { printf "%s: the code block of '%s' is never closed\n", FILENAME, name > "/dev/stderr"; exit 1 }
}
