// Shared by the goldens tests: checks every row of a render_hf.py --goldens file against the engine.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/shared_data.h"

namespace anelm::jinja::testing {

struct GoldenCounts {
  int checked = 0, texts = 0, errors = 0;
};

using ::anelm::testing::read_file;

// Renders every {template, case} row of `goldens` (templates read from template_dir) and records a
// gtest failure for each divergence: text byte for byte, raise_exception messages exactly, other
// errors by jinja2's class and message prefix.
GoldenCounts check_goldens(const nlohmann::ordered_json& goldens, const std::filesystem::path& template_dir);

}  // namespace anelm::jinja::testing
