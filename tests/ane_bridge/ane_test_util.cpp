// Helpers shared by every ane_bridge test executable.
#include "tests/ane_bridge/ane_test_util.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "ane_bridge/program_cache.h"
#include "ane_bridge/surface_layout.h"

namespace anelm::ane::testing {

namespace fs = std::filesystem;

std::vector<float> seeded_values(std::size_t n, std::uint32_t seed, float scale) {
  std::vector<float> v(n);
  std::uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(s >> 11) / 9007199254740992.0;  // [0, 1)
    x = static_cast<float>((2.0 * u - 1.0) * scale);
  }
  return v;
}

fs::path golden_dir() { return fs::path(__FILE__).parent_path().parent_path() / "data" / "ane"; }

std::string check_golden(const std::string& file, const std::string& text) {
  const fs::path p = golden_dir() / file;
  if (const char* u = std::getenv("ANELM_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return "";
  }
  std::ifstream f(p, std::ios::binary);
  if (!f)
    return "golden file " + p.string() +
           " is missing (run with ANELM_UPDATE_GOLDEN=1 to create it)";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string want = ss.str();
  if (want == text) return "";
  std::size_t i = 0;
  while (i < want.size() && i < text.size() && want[i] == text[i]) ++i;
  int line = 1;
  for (std::size_t j = 0; j < i; ++j) line += text[j] == '\n';
  return "differs from " + p.string() + " at byte " + std::to_string(i) + " (line " +
         std::to_string(line) + "): golden \"" + want.substr(i, 60) + "\" vs emitted \"" +
         text.substr(i, 60) + "\"";
}

SimulatorOptions test_options() { return SimulatorOptions{}; }

RunResult run_compiled(Program& program, const std::vector<std::vector<float>>& inputs,
                       const SimulatorOptions& options) {
  RunResult r;
  const auto& in_desc = program.inputs();
  const auto& out_desc = program.outputs();
  std::int64_t in_alloc = 0, out_alloc = 0;
  for (const auto& d : in_desc)
    in_alloc =
        std::max(in_alloc, SurfaceLayout::for_type(d.type, options.row_align_bytes).alloc_bytes());
  for (const auto& d : out_desc)
    out_alloc =
        std::max(out_alloc, SurfaceLayout::for_type(d.type, options.row_align_bytes).alloc_bytes());
  std::vector<std::vector<std::uint8_t>> in_bufs, out_bufs;
  for (std::size_t i = 0; i < in_desc.size(); ++i) {
    in_bufs.emplace_back(static_cast<std::size_t>(in_alloc), 0);
    if (i < inputs.size()) {
      const Status s = write_surface(
          inputs[i], SurfaceLayout::for_type(in_desc[i].type, options.row_align_bytes),
          in_bufs.back());
      if (!s.ok()) {
        r.status = s;
        return r;
      }
    }
  }
  for (std::size_t i = 0; i < out_desc.size(); ++i)
    out_bufs.emplace_back(static_cast<std::size_t>(out_alloc), 0);
  std::vector<std::span<const std::uint8_t>> ins(in_bufs.begin(), in_bufs.end());
  std::vector<std::span<std::uint8_t>> outs(out_bufs.begin(), out_bufs.end());
  r.status = program.evaluate(ins, outs);
  if (!r.status.ok()) return r;
  for (std::size_t i = 0; i < out_desc.size(); ++i) {
    const SurfaceLayout l = SurfaceLayout::for_type(out_desc[i].type, options.row_align_bytes);
    r.outputs.emplace_back(static_cast<std::size_t>(l.rows * l.width));
    r.status = read_surface(out_bufs[i], l, r.outputs.back());
    if (!r.status.ok()) return r;
  }
  return r;
}

RunResult run_program(const ProgramSource& src, const std::vector<std::vector<float>>& inputs,
                      const SimulatorOptions& options) {
  RuntimeOptions ro;
  ro.sim = options;
  auto rt = make_simulator(ro);
  std::unique_ptr<Program> prog;
  RunResult r;
  r.status = rt->compile(src, &prog);
  if (!r.status.ok()) return r;
  return run_compiled(*prog, inputs, options);
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace anelm::ane::testing
