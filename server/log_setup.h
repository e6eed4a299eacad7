// Process-wide logging: level and line format (text, or one JSON object per line for collectors).
#pragma once

#include <string>

namespace anelm::server {

// level: trace | debug | info | warn | error; format: text | json (validated by the options).
void configure_logging(const std::string& level, const std::string& format);

}  // namespace anelm::server
