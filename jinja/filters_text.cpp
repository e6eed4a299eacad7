// The text filters: escape, indent, wordcount, center, truncate, format (and Python's "%" on a
// str), striptags, as jinja2 3.1 defines them.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "jinja/builtins.h"
#include "jinja/filter_table.h"

namespace anelm::jinja {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

Value f_escape(Context&, const Value& v, Args&, Kwargs&) {
  if (v.is_string() && v.safe) return v;
  Value s = Value::string(html_escape(to_str(v)));
  s.safe = true;
  return s;
}

// Python's str.splitlines (the ASCII line boundaries).
std::vector<std::string> splitlines(const std::string& s) {
  std::vector<std::string> lines;
  size_t k = 0, start = 0;
  while (k < s.size()) {
    const char c = s[k];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
      lines.push_back(s.substr(start, k - start));
      k += (c == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ? 2 : 1;
      start = k;
    } else {
      ++k;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

Value f_indent(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const Value* width = arg(a, k, 0, "width");
  std::string pad(4, ' ');
  if (width && width->is_string()) pad = width->str();
  else if (width) pad.assign(static_cast<size_t>(std::clamp<int64_t>(int_arg(ctx, width, 4, "width"), 0, 1024)), ' ');
  const bool first = bool_arg(arg(a, k, 1, "first"), false);
  const bool blank = bool_arg(arg(a, k, 2, "blank"), false);
  std::vector<std::string> lines = splitlines(to_str(v) + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) {
      out += '\n';
      if (blank || !lines[i].empty()) out += pad;
    }
    out += lines[i];
    ctx.check_size(out.size());
  }
  if (first) out = pad + out;
  return Value::string(std::move(out));
}

Value f_wordcount(Context&, const Value& v, Args&, Kwargs&) {
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : s) {
    const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value f_center(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const std::string s = to_str(v);
  const int64_t width = std::min<int64_t>(int_arg(ctx, arg(a, k, 0, "width"), 80, "width"), 1 << 20);
  const int64_t len = static_cast<int64_t>(code_points(s).size());
  if (width <= len) return Value::string(s);
  const int64_t marg = width - len, left = marg / 2 + (marg & width & 1);
  return Value::string(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

Value f_truncate(Context& ctx, const Value& v, Args& a, Kwargs& k) {
  const std::vector<std::string> cps = code_points(to_str(v));
  const int64_t length = int_arg(ctx, arg(a, k, 0, "length"), 255, "length");
  const bool killwords = bool_arg(arg(a, k, 1, "killwords"), false);
  const Value* endv = arg(a, k, 2, "end");
  const std::string end = endv ? to_str(*endv) : "...";
  const int64_t leeway = int_arg(ctx, arg(a, k, 3, "leeway"), 5, "leeway");
  const int64_t n = static_cast<int64_t>(cps.size());
  if (n <= length + leeway) return Value::string(to_str(v));
  const int64_t keep = std::clamp<int64_t>(length - static_cast<int64_t>(code_points(end).size()), 0, n);
  std::string head;
  for (int64_t i = 0; i < keep; ++i) head += cps[static_cast<size_t>(i)];
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return Value::string(head + end);
}

// printf-style "%s" % args as the format filter does (%s %r %d %i %f %x %%, with width/precision).
}  // namespace

// printf-style formatting as Python's str % args.
std::string percent_format(Context& ctx, const std::string& f, const Args& a) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out += f[i];
      continue;
    }
    size_t j = i + 1;
    while (j < f.size() && std::strchr("-+ 0#.0123456789", f[j])) ++j;
    if (j >= f.size()) fail(ctx, "ValueError", "incomplete format");
    const char conv = f[j];
    const std::string spec = f.substr(i + 1, j - i - 1);
    i = j;
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= a.size()) fail(ctx, "TypeError", "not enough arguments for format string");
    const Value& x = a[next++];
    char buf[512];
    if (conv == 's' || conv == 'r') {
      const std::string s = conv == 's' ? to_str(x) : to_repr(x);
      std::snprintf(buf, sizeof buf, ("%" + spec + "s").c_str(), s.c_str());
      out += s.size() + 64 < sizeof buf ? std::string(buf) : s;
    } else if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o') {
      if (!x.is_number()) fail(ctx, "TypeError", std::string("%") + conv + " format: a real number is required, not " + type_name(x));
      std::snprintf(buf, sizeof buf, ("%" + spec + "ll" + std::string(1, conv == 'i' ? 'd' : conv)).c_str(),
                    static_cast<long long>(x.kind == Value::Kind::kFloat ? std::trunc(x.f) : static_cast<double>(x.kind == Value::Kind::kBool ? x.b : x.i)));
      out += buf;
    } else if (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' || conv == 'G') {
      if (!x.is_number()) fail(ctx, "TypeError", std::string("must be real number, not ") + type_name(x));
      std::snprintf(buf, sizeof buf, ("%" + spec + std::string(1, conv)).c_str(), x.as_double());
      out += buf;
    } else {
      fail(ctx, "ValueError", std::string("unsupported format character '") + conv + "'");
    }
    ctx.check_size(out.size());
  }
  if (next < a.size()) fail(ctx, "TypeError", "not all arguments converted during string formatting");
  return out;
}

namespace {

Value f_format(Context& ctx, const Value& v, Args& a, Kwargs&) { return Value::string(percent_format(ctx, to_str(v), a)); }

Value f_striptags(Context&, const Value& v, Args&, Kwargs&) {
  const std::string s = to_str(v);
  std::string text;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') {
      const size_t e = s.find('>', i);
      if (e != std::string::npos) {
        i = e;
        continue;
      }
    }
    text += s[i];
  }
  std::string out;  // whitespace runs collapse to one space, ends trimmed
  bool space = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return Value::string(std::move(out));
}

}  // namespace

void add_text_filters(std::map<std::string, FilterFn>& table) {
  for (const char* name : {"e", "escape", "forceescape"}) table[name] = f_escape;
  table["indent"] = f_indent;
  table["wordcount"] = f_wordcount;
  table["center"] = f_center;
  table["truncate"] = f_truncate;
  table["format"] = f_format;
  table["striptags"] = f_striptags;
}

}  // namespace anelm::jinja
