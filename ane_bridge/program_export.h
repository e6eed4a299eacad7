// Writes programs to the `anelm compile --out DIR` layout: DIR/NAME/model.mil,
// DIR/NAME/weights/*.bin, DIR/manifest.json (one entry per program: name, I/O with shapes, weight
// bytes, S buckets).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ane_bridge/mil_blocks.h"
#include "ane_bridge/program.h"

namespace anelm::ane {

struct ManifestEntry {
  std::string name;            // directory name under DIR
  std::string kind;            // "attn_in", "ffn", "lm_head", "final_norm", or free text
  int layer = -1;              // decoder layer, -1 when none
  std::vector<IoDesc> inputs;  // shapes [1, C, 1, S] and channel segments
  std::vector<IoDesc> outputs;
  std::uint64_t weight_bytes = 0;       // sum of weights/*.bin sizes
  std::vector<std::int64_t> s_buckets;  // the S this program serves (decode uses 32)
  std::string weight_format = "fp16";   // "fp16" | "int8"
};

ManifestEntry manifest_entry(const BlockProgram& block);

// Writes out_dir/<source.name>/model.mil and out_dir/<source.name>/weights/*.bin.
Status write_program_dir(const std::filesystem::path& out_dir, const ProgramSource& source);

// One JSON object (no trailing newline). Hand-written JSON; strings are escaped.
std::string manifest_entry_json(const ManifestEntry& entry);
// {"format": "anelm-ane-programs", "version": 1, "model": ..., "programs": [...]}.
std::string manifest_json(const std::vector<ManifestEntry>& entries, const std::string& model_name);
Status write_manifest(const std::filesystem::path& out_dir,
                      const std::vector<ManifestEntry>& entries, const std::string& model_name);

// Writes every block's directory plus one manifest.json listing them (the whole `anelm compile`
// output for a model). Blocks sharing a name are an error.
Status write_programs(const std::filesystem::path& out_dir, const std::vector<BlockProgram>& blocks,
                      const std::string& model_name);

// Reads a program directory back (model.mil + weights/*.bin) into a ProgramSource.
Status read_program_dir(const std::filesystem::path& program_dir, ProgramSource* out);

}  // namespace anelm::ane
