# Doxygen input filter for anelm headers: turns the house-style `//` comments into doc comments.
#
# Why: the code base documents its API with plain `//` comments (style guide), which doxygen
# ignores. This filter, run by doxygen on each header (FILTER_PATTERNS in docs/Doxyfile), rewrites
#   line 1 `// text`          -> `/// \brief text \file <path>` (the file's purpose)
#   `// text` on its own line -> `/// text`        (documents the next declaration)
#   `code;  // text`          -> `code;  ///< text` (documents that member / enum value / field)
# and escapes doxygen's special characters (code spans become <tt>), so ordinary prose such as
# "#include", "<tag>" or "a\b" cannot become a (broken) doxygen command. Line numbers are kept,
# so warnings still point at the real source line. Banner lines (// ---- x ----) and tool
# directives (NOLINT, clang-format) are left alone.

function escape_text(s,    out, n, i, parts, seg) {
  n = split(s, parts, "`")
  # An odd number of parts means balanced backticks: even-numbered parts are code spans. Doxygen
  # 1.9.4 still parses commands, tags and #links inside `code`, so spans become escaped <tt>.
  if (n % 2 == 0) return escape_all(s)
  out = ""
  for (i = 1; i <= n; i++) {
    seg = escape_all(parts[i])
    out = out (i % 2 == 0 ? "<tt>" seg "</tt>" : seg)
  }
  return out
}

# Character by character: gsub replacement escaping differs between mawk and gawk.
function escape_all(s,    out, i, c, n) {
  out = ""
  for (i = 1; i <= length(s); i++) {
    c = substr(s, i, 1)
    # "--" and "---" would print as dashes (-- in "--model" as an en dash); \-- and \--- keep them.
    if (c == "-" && substr(s, i + 1, 1) == "-") {
      n = (substr(s, i + 2, 1) == "-") ? 3 : 2
      out = out "\\" substr(s, i, n)
      i += n - 1
      continue
    }
    if (index("\\@<>&#%$\"", c) > 0) out = out "\\"
    # "/*" would open a nested comment inside the doc comment; "/\*" prints the same.
    if (c == "*" && substr(s, i - 1, 1) == "/") out = out "\\"
    out = out c
  }
  return out
}

function skip_text(t) {
  return t ~ /^[-=*#\/]/ || t ~ /^(NOLINT|clang-format|IWYU)/
}

{
  line = $0
  if (NR == 1 && match(line, /^\/\/ /)) {
    # The file's purpose line. \file comes last: it takes a file name first (or would eat the
    # first word), and text on its own line skips Markdown. A purpose continued on line 2 joins
    # this /// block.
    print "/// \\brief " escape_text(substr(line, 4)) " \\file " FILENAME
    next
  }
  if (match(line, /^[ \t]*\/\/ /)) {
    indent = substr(line, 1, RSTART + RLENGTH - 4)
    text = substr(line, RSTART + RLENGTH)
    if (!skip_text(text)) {
      print indent "/// " escape_text(text)
      next
    }
  }
  # Trailing comment after a declaration ending in ';' or ',' (fields, enum values, parameters),
  # or after a bare enumerator (the last one has no comma).
  if (match(line, /[;,][ \t]+\/\/ /) || match(line, /^[ \t]*k[A-Za-z0-9_]+[ \t]+\/\/ /)) {
    pos = index(substr(line, RSTART), "//") + RSTART - 1
    code = substr(line, 1, pos - 1)
    text = substr(line, pos + 3)
    if (code !~ /\/\// && code !~ /"/ && !skip_text(text)) {
      print code "///< " escape_text(text)
      next
    }
  }
  print line
}
