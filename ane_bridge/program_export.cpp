// Program directory and manifest.json writer/reader for the offline `anelm compile` step.
#include "ane_bridge/program_export.h"

#include <algorithm>
#include <cstdio>

#include "ane_bridge/program_cache.h"

namespace anelm::ane {

namespace fs = std::filesystem;

namespace {

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

std::string json_ints(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string io_json(const std::vector<IoDesc>& ios) {
  std::string s = "[";
  for (std::size_t i = 0; i < ios.size(); ++i) {
    const IoDesc& io = ios[i];
    s += (i ? ", " : "");
    s += "{\"name\": " + json_str(io.name) +
         ", \"dtype\": " + json_str(std::string(dtype_name(io.type.dtype))) +
         ", \"shape\": " + json_ints(io.type.shape) + ", \"segments\": [";
    for (std::size_t j = 0; j < io.segments.size(); ++j) {
      const IoSegment& g = io.segments[j];
      s += (j ? ", " : "");
      s += "{\"name\": " + json_str(g.name) +
           ", \"channel_offset\": " + std::to_string(g.channel_offset) +
           ", \"channels\": " + std::to_string(g.channels) + "}";
    }
    s += "]}";
  }
  return s + "]";
}

}  // namespace

ManifestEntry manifest_entry(const BlockProgram& b) {
  ManifestEntry e;
  e.name = b.source.name;
  e.kind = b.kind;
  e.layer = b.layer;
  e.inputs = b.inputs;
  e.outputs = b.outputs;
  e.weight_bytes = b.weight_bytes;
  e.s_buckets = {b.seq_len};
  e.weight_format = b.format == WeightFormat::kInt8 ? "int8" : "fp16";
  return e;
}

Status write_program_dir(const fs::path& out_dir, const ProgramSource& source) {
  if (source.name.empty() || source.name.find('/') != std::string::npos || source.name == "." ||
      source.name == "..")
    return invalid_argument("program name \"" + source.name + "\" is not a valid directory name");
  const fs::path dir = out_dir / source.name;
  ANE_RETURN_IF_ERROR(write_file_bytes(
      dir / "model.mil",
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(source.mil_text.data()),
                                    source.mil_text.size())));
  std::error_code ec;
  fs::create_directories(dir / "weights", ec);
  if (ec) return io_error("cannot create " + (dir / "weights").string() + ": " + ec.message());
  for (const WeightFile& w : source.weights) {
    const std::string rel = weight_relative_path(w.path);
    if (rel.empty())
      return invalid_argument("weight path \"" + w.path + "\" is not under @model_path/");
    ANE_RETURN_IF_ERROR(write_file_bytes(dir / rel, w.bytes));
  }
  return {};
}

std::string manifest_entry_json(const ManifestEntry& e) {
  return "{\"name\": " + json_str(e.name) + ", \"kind\": " + json_str(e.kind) +
         ", \"layer\": " + std::to_string(e.layer) +
         ", \"mil\": " + json_str(e.name + "/model.mil") +
         ", \"weight_format\": " + json_str(e.weight_format) +
         ", \"weight_bytes\": " + std::to_string(e.weight_bytes) +
         ", \"s_buckets\": " + json_ints(e.s_buckets) + ", \"inputs\": " + io_json(e.inputs) +
         ", \"outputs\": " + io_json(e.outputs) + "}";
}

std::string manifest_json(const std::vector<ManifestEntry>& entries,
                          const std::string& model_name) {
  std::string s = "{\n  \"format\": \"anelm-ane-programs\",\n  \"version\": 1,\n  \"model\": " +
                  json_str(model_name) + ",\n  \"programs\": [";
  for (std::size_t i = 0; i < entries.size(); ++i)
    s += (i ? ",\n    " : "\n    ") + manifest_entry_json(entries[i]);
  return s + (entries.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

Status write_manifest(const fs::path& out_dir, const std::vector<ManifestEntry>& entries,
                      const std::string& model_name) {
  const std::string text = manifest_json(entries, model_name);
  return write_file_bytes(out_dir / "manifest.json",
                          std::span<const std::uint8_t>(
                              reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

Status write_programs(const fs::path& out_dir, const std::vector<BlockProgram>& blocks,
                      const std::string& model_name) {
  std::vector<ManifestEntry> entries;
  std::vector<std::string> names;
  for (const BlockProgram& b : blocks) {
    if (std::find(names.begin(), names.end(), b.source.name) != names.end())
      return invalid_argument("two programs are named \"" + b.source.name + "\"");
    names.push_back(b.source.name);
    ANE_RETURN_IF_ERROR(write_program_dir(out_dir, b.source));
    entries.push_back(manifest_entry(b));
  }
  return write_manifest(out_dir, entries, model_name);
}

Status read_program_dir(const fs::path& program_dir, ProgramSource* out) {
  ProgramSource src;
  src.name = program_dir.filename().string();
  std::vector<std::uint8_t> mil;
  ANE_RETURN_IF_ERROR(read_file_bytes(program_dir / "model.mil", &mil));
  src.mil_text.assign(mil.begin(), mil.end());
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(program_dir / "weights", ec))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    WeightFile w;
    w.path = "@model_path/weights/" + p.filename().string();
    ANE_RETURN_IF_ERROR(read_file_bytes(p, &w.bytes));
    src.weights.push_back(std::move(w));
  }
  *out = std::move(src);
  return {};
}

}  // namespace anelm::ane
