// Simulator runtime: counts compiles per (simulated) process, serves the on-disk cache, evaluates.
#include "ane_bridge/sim/simulator.h"

#include "ane_bridge/surface_layout.h"

namespace anelm::ane::sim {

Status front_end(const ProgramSource& source, const SimulatorOptions& options,
                 CompiledProgram* out, ConstMode mode) {
  ProgramAst ast;
  ANE_RETURN_IF_ERROR(parse_mil(source.mil_text, &ast));
  return compile_program(ast, source.weights, options, out, mode);
}

namespace {

bool overlaps(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  if (a.empty() || b.empty()) return false;
  return a.data() < b.data() + b.size() && b.data() < a.data() + a.size();
}

Status check_side(const std::vector<TensorDesc>& desc, std::size_t given, const SimulatorOptions& o,
                  const char* side, const std::vector<std::size_t>& sizes) {
  if (given != desc.size())
    return eval_failed(std::string("status=0x1d: ") + std::to_string(given) + " " + side +
                       " surfaces for " + std::to_string(desc.size()) + " " + side + "s");
  for (std::size_t i = 0; i < desc.size(); ++i) {
    const SurfaceLayout l = SurfaceLayout::for_type(desc[i].type, o.row_align_bytes);
    const auto need = static_cast<std::size_t>(std::max(l.tensor_bytes(), o.min_surface_bytes));
    if (sizes[i] < need)
      return eval_failed(
          std::string("status=0x1d: ") + side + " '" + desc[i].name + "' " + desc[i].type.str() +
          " needs a surface of at least " + std::to_string(need) + " bytes (tensor " +
          std::to_string(l.tensor_bytes()) + " with " + std::to_string(l.row_stride_bytes()) +
          "-byte rows, minimum " + std::to_string(o.min_surface_bytes) + "), got " +
          std::to_string(sizes[i]));
    if (o.multi_io_equal_alloc_required && sizes[i] != sizes[0])
      return eval_failed(std::string("status=0x1d: all ") + side +
                         " surfaces of a request must have the same allocation size (" +
                         std::to_string(sizes[0]) + " vs " + std::to_string(sizes[i]) + ")");
  }
  return {};
}

}  // namespace

Status check_surfaces(const std::vector<TensorDesc>& in_desc,
                      const std::vector<TensorDesc>& out_desc, const SimulatorOptions& options,
                      std::span<const std::span<const std::uint8_t>> inputs,
                      std::span<const std::span<std::uint8_t>> outputs) {
  std::vector<std::size_t> in_sizes, out_sizes;
  for (auto s : inputs) in_sizes.push_back(s.size());
  for (auto s : outputs) out_sizes.push_back(s.size());
  ANE_RETURN_IF_ERROR(check_side(in_desc, inputs.size(), options, "input", in_sizes));
  ANE_RETURN_IF_ERROR(check_side(out_desc, outputs.size(), options, "output", out_sizes));
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (auto in : inputs)
      if (overlaps(in, outputs[i]))
        return eval_failed("output surface " + std::to_string(i) + " aliases an input");
    for (std::size_t j = 0; j < i; ++j)
      if (overlaps(outputs[j], outputs[i]))
        return eval_failed("output surfaces " + std::to_string(j) + " and " + std::to_string(i) +
                           " overlap");
  }
  return {};
}

Status evaluate_function(const CompiledFunction& fn, const SimulatorOptions& options,
                         std::span<const std::span<const std::uint8_t>> inputs,
                         std::span<const std::span<std::uint8_t>> outputs) {
  if (!fn.weights_materialized)
    return invalid_argument("function '" + fn.name +
                            "' was compiled without its weights (ConstMode::kValidateOnly) and "
                            "cannot be evaluated");
  ANE_RETURN_IF_ERROR(check_surfaces(fn.inputs, fn.outputs, options, inputs, outputs));
  Numerics num;
  num.ftz = options.fp16_ftz;
  num.fp16_accumulate = options.accumulate == Accumulate::kFp16;
  std::vector<std::shared_ptr<const SimTensor>> env = fn.consts;
  for (std::size_t i = 0; i < fn.inputs.size(); ++i) {
    auto t = std::make_shared<SimTensor>();
    t->type = fn.inputs[i].type;
    t->data.resize(static_cast<std::size_t>(t->type.numel()));
    const SurfaceLayout l = SurfaceLayout::for_type(t->type, options.row_align_bytes);
    ANE_RETURN_IF_ERROR(read_surface(inputs[i], l, t->data));
    round_to_dtype(t.get(), num);  // FTZ applies to inputs too
    env[fn.input_slots[i]] = std::move(t);
  }
  for (const Step& step : fn.steps) {
    SimArgs args;
    for (const auto& [name, slots] : step.args)
      for (int s : slots) args[name].push_back(env[s].get());
    auto out = std::make_shared<SimTensor>();
    out->type = fn.slot_types[step.out];
    ANE_RETURN_IF_ERROR(run_op(step.op, args, num, out.get()));
    env[step.out] = std::move(out);
  }
  for (std::size_t i = 0; i < fn.outputs.size(); ++i) {
    const SimTensor& t = *env[fn.output_slots[i]];
    const SurfaceLayout l = SurfaceLayout::for_type(t.type, options.row_align_bytes);
    ANE_RETURN_IF_ERROR(
        write_surface(t.data, l, outputs[i]));  // padding bytes are left as they were
  }
  return {};
}

namespace {

class SimProgram final : public Program {
 public:
  SimProgram(std::string name, std::string id, CompiledProgram prog, bool from_cache,
             SimulatorOptions opts, std::shared_ptr<int> live)
      : name_(std::move(name)),
        id_(std::move(id)),
        prog_(std::move(prog)),
        from_cache_(from_cache),
        opts_(std::move(opts)),
        live_(live) {
    ++*live_;
  }
  ~SimProgram() override { (void)release(); }

  const std::string& name() const override { return name_; }
  const std::string& identifier() const override { return id_; }
  int procedure_count() const override { return static_cast<int>(prog_.functions.size()); }
  const std::vector<TensorDesc>& inputs(int p) const override { return fn(p).inputs; }
  const std::vector<TensorDesc>& outputs(int p) const override { return fn(p).outputs; }
  bool from_cache() const override { return from_cache_; }

  Status evaluate(std::span<const std::span<const std::uint8_t>> inputs,
                  std::span<const std::span<std::uint8_t>> outputs, int procedure) override {
    if (released_) return Status(StatusCode::kReleased, "program '" + name_ + "' was released");
    if (procedure < 0 || procedure >= procedure_count())
      return eval_failed("status=0x2: procedure index " + std::to_string(procedure) +
                         " does not exist in '" + name_ + "' (" +
                         std::to_string(procedure_count()) + " procedures)");
    return evaluate_function(prog_.functions[procedure], opts_, inputs, outputs);
  }

  Status release() override {
    if (!released_) {
      released_ = true;
      --*live_;
    }
    return {};
  }

 private:
  const CompiledFunction& fn(int p) const {
    return prog_.functions.at(p < 0 || p >= procedure_count() ? 0 : p);
  }

  std::string name_, id_;
  CompiledProgram prog_;
  bool from_cache_;
  SimulatorOptions opts_;
  std::shared_ptr<int> live_;
  bool released_ = false;
};

class SimRuntime final : public Runtime {
 public:
  explicit SimRuntime(const RuntimeOptions& o)
      : opts_(o.sim), cache_(o.cache_dir), live_(std::make_shared<int>(0)) {}

  std::string_view kind() const override { return "simulator"; }

  Status compile(const ProgramSource& source, std::unique_ptr<Program>* out) override {
    const std::uint64_t key = program_key(source, kSimulatorRuntimeId);
    if (opts_.max_live_programs > 0 && *live_ >= opts_.max_live_programs)
      return compile_failed("load of '" + source.name + "' refused: " + std::to_string(*live_) +
                            " programs are loaded and at most " +
                            std::to_string(opts_.max_live_programs) +
                            " may be live at once (SimulatorOptions::max_live_programs; the "
                            "device reports ~55, §10.5); HINT: release programs first, or plan "
                            "fewer (one S bucket, LM head on the CPU)");
    if (cache_.enabled()) {
      if (cache_.contains(key)) {
        // A cached program loads without compiling and costs no budget (§1.10, §1.13). The files on
        // disk, not `source`, are what gets loaded: a corrupt entry falls back to compiling.
        ProgramSource cached;
        CompiledProgram prog;
        if (cache_.load(key, kSimulatorRuntimeId, &cached).ok() &&
            front_end(cached, opts_, &prog).ok()) {
          cache_.record_hit();
          *out = std::make_unique<SimProgram>(source.name, key_hex(key), std::move(prog), true,
                                              opts_, live_);
          return {};
        }
      }
      cache_.record_miss();
    }
    if (compiles_ >= opts_.compile_budget)
      return Status(
          StatusCode::kBudgetExhausted,
          "compile of '" + source.name + "' refused: the per-process budget of " +
              std::to_string(opts_.compile_budget) +
              " compiles is spent (the device fails silently past ~119; HINT: restart the process, "
              "or enable the compile cache so restarts load without compiling)");
    CompiledProgram prog;
    ANE_RETURN_IF_ERROR(front_end(source, opts_, &prog));
    ++compiles_;
    if (cache_.enabled()) (void)cache_.store(key, source, kSimulatorRuntimeId);  // fail-open
    *out = std::make_unique<SimProgram>(source.name, key_hex(key), std::move(prog), false, opts_,
                                        live_);
    return {};
  }

  RuntimeStats stats() const override {
    return RuntimeStats{compiles_, opts_.compile_budget, cache_.hits(), cache_.misses(), *live_};
  }

 private:
  SimulatorOptions opts_;
  ProgramCache cache_;
  int compiles_ = 0;
  // Shared with the programs so a program outliving its runtime stays valid.
  std::shared_ptr<int> live_;
};

}  // namespace

}  // namespace anelm::ane::sim

namespace anelm::ane {

std::unique_ptr<Runtime> make_simulator(const RuntimeOptions& options) {
  return std::make_unique<sim::SimRuntime>(options);
}

}  // namespace anelm::ane
