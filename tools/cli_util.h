// Helpers shared by the CLI subcommands: option parsing conventions and engine options from flags.
#pragma once

#include <cxxopts.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace anelm::tools {

// Parses argv; prints --help and returns nullopt when asked; throws Error(kInvalidArgument) naming
// the bad or unknown option otherwise.
std::optional<cxxopts::ParseResult> parse_cli(cxxopts::Options& options, int argc, char** argv);

// Adds --model --backend --threads --ctx --weights to `options`.
void add_engine_flags(cxxopts::Options& options);
// Builds and validates engine::EngineOptions from those flags (--model required).
engine::EngineOptions engine_options_from(const cxxopts::ParseResult& r);

engine::Backend parse_backend(const std::string& name);
engine::DType parse_weight_type(const std::string& name);

// "1 2 3", "1,2,3" or "[1,2,3]" -> ids; throws naming the bad token.
std::vector<int> parse_id_list(const std::string& text);

}  // namespace anelm::tools
