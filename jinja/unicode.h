// Python's str case methods on UTF-8 text: upper, lower, capitalize, title, islower, isupper, for
// Latin-1, Latin Extended-A, Greek, Cyrillic and fullwidth Latin (other scripts have no case here).
#pragma once

#include <string>

namespace anelm::jinja {

std::string py_upper(const std::string& s);
std::string py_lower(const std::string& s);
std::string py_capitalize(const std::string& s);  // first character upper, the rest lower
std::string py_title(const std::string& s);       // each run of cased letters: first upper, rest lower
bool py_islower(const std::string& s);
bool py_isupper(const std::string& s);

}  // namespace anelm::jinja
