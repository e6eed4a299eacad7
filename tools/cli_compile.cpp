// `anelm compile`: writes the model's ANE programs (MIL text, weight blobs, manifest) to a directory,
// plans them, or verifies their numerics (--verify).
#include <cstdio>
#include <filesystem>

#include "tools/ane_compile.h"
#include "engine/config_gguf.h"
#include "engine/config_hf.h"
#include "engine/gguf.h"
#include "engine/error.h"
#include "tools/cli_commands.h"
#include "tools/cli_util.h"

namespace anelm::tools {

using namespace engine;

namespace {

// Config only (no weights), so a plan works on a bare config.json too.
engine::ModelConfig read_config(const std::string& path) {
  if (std::filesystem::is_directory(path)) return engine::config_from_hf_dir(path);
  return engine::config_from_gguf(*engine::GgufFile::open(path));
}

}  // namespace

int run_compile(int argc, char** argv) {
  cxxopts::Options options("anelm compile",
                           "Write every ANE program of a model as the runtime hands it to the compiler");
  options.add_options()
      ("m,model", "GGUF file or HuggingFace model directory", cxxopts::value<std::string>())
      ("out", "output directory (NAME/model.mil, NAME/weights/*.bin, manifest.json)", cxxopts::value<std::string>())
      ("int8", "bake int8 per-channel weights (constexpr_affine_dequantize) instead of fp16")
      ("plan", "count programs only; read no weights and write nothing")
      ("verify", "run every program on the calibration prompt's activations through the simulator "
                 "and report its relative error against an fp32 CPU reference (on a Mac also the "
                 "device against the simulator)")
      ("no-ftz", "with --verify: keep fp16 subnormals in the simulator (default: flushed)")
      ("fp32-residual", "program B returns the layer's update and the residual stays fp32 on the CPU")
      ("json", "print the summary as one JSON object");
  auto r = parse_cli(options, argc, argv);
  if (!r) return 0;
  if (!r->count("model")) throw Error(ErrorKind::kInvalidArgument, "--model is required");
  engine::AneBackendOptions opts;
  opts.int8_weights = r->count("int8") > 0;
  opts.fp32_residual = r->count("fp32-residual") > 0;
  const bool json = r->count("json") > 0;
  if (r->count("verify")) {
    if (r->count("plan") || r->count("out"))
      throw Error(ErrorKind::kInvalidArgument, "--verify takes neither --plan nor --out");
    const engine::AneVerifyReport v =
        verify_ane_model((*r)["model"].as<std::string>(), opts, r->count("no-ftz") == 0);
    std::fputs((json ? ane_verify_json(v) + "\n" : ane_verify_text(v)).c_str(), stdout);
    return 0;
  }
  if (r->count("no-ftz")) throw Error(ErrorKind::kInvalidArgument, "--no-ftz needs --verify");
  engine::AneCompileSummary s;
  if (r->count("plan")) {
    s = engine::plan_ane_programs(read_config((*r)["model"].as<std::string>()), opts);
  } else {
    if (!r->count("out")) throw Error(ErrorKind::kInvalidArgument, "--out is required (or --plan)");
    s = compile_ane_programs((*r)["model"].as<std::string>(), (*r)["out"].as<std::string>(), opts);
  }
  std::puts((json ? ane_compile_summary_json(s) : ane_compile_summary_text(s)).c_str());
  return 0;
}

}  // namespace anelm::tools
