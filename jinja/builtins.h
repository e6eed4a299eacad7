// What templates call: filters, tests, attribute and item access (with str/dict/list methods, as
// the immutable sandbox allows them), globals (range, namespace, raise_exception, strftime_now).
#pragma once

#include <string>
#include <vector>

#include "jinja/context.h"
#include "jinja/value.h"

namespace anelm::jinja {

Value get_attribute(Context& ctx, const Value& obj, const std::string& name);
Value get_item(Context& ctx, const Value& obj, const Value& key);
Value slice(Context& ctx, const Value& obj, const Value& start, const Value& stop, const Value& step);
Value apply_filter(Context& ctx, const std::string& name, const Value& input, Args& args, Kwargs& kwargs);
bool apply_test(Context& ctx, const std::string& name, const Value& input, Args& args);
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value call_value(Context& ctx, const Value& callee, Args& args, Kwargs& kwargs);
void add_globals(Context::Scope& scope);

// The code points of a UTF-8 string, as Python indexes and counts them.
std::vector<std::string> code_points(const std::string& s);
// Python's format % args (%s %r %d %i %f %e %g %x %o %%, flags, width, precision).
std::string percent_format(Context& ctx, const std::string& format, const Args& args);
// markupsafe's escape (& < > " ').
std::string html_escape(const std::string& s);
// Python's str.capitalize.
std::string capitalize(const std::string& s);
// A filter or test argument by position or keyword, or nullptr.
const Value* arg(const Args& args, const Kwargs& kwargs, size_t index, const char* name);

// jinja2's object_type_repr: "dict object", "None", "jinja2.utils.Namespace object", ...
std::string object_type_repr(const Value& obj);
// The Undefined of a failed lookup: "'dict object' has no attribute 'x'" (a name) and
// "list object has no element 0" (any other key), as jinja2 words them.
Value undefined_attribute(const Value& obj, const std::string& name);
Value undefined_element(const Value& obj, const Value& key);
// Raises the UndefinedError an undefined value carries ("'x' is undefined", "'dict object' has
// no attribute 'y'").
[[noreturn]] void undefined_error(const Context& ctx, const Value& undefined);
// The items a for loop visits: list items, dict keys, string characters. Undefined: none.
std::vector<Value> iterate(Context& ctx, const Value& v);

// Python operators with Python's type rules (TypeError names the types).
Value binary_op(Context& ctx, const std::string& op, const Value& a, const Value& b);
bool contains(Context& ctx, const Value& container, const Value& item);
bool less(Context& ctx, const Value& a, const Value& b);

}  // namespace anelm::jinja
