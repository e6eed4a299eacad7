// macOS runtime over the private AppleNeuralEngine.framework (in-memory MIL path, §1.3 and §8).
// NOT COMPILED OR RUN IN CI: this project has no Apple hardware. Written against the documented
// call sequence only; every private class and selector is resolved at run time and a missing one
// yields StatusCode::kUnavailable with a message, never a crash. Built with -fobjc-arc.
#import <Foundation/Foundation.h>
#import <IOSurface/IOSurface.h>

#include <dlfcn.h>
#include <objc/message.h>
#include <objc/runtime.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "ane_bridge/program_cache.h"
#include "ane_bridge/program_darwin.h"
#include "ane_bridge/sim/simulator.h"
#include "ane_bridge/surface_layout.h"

namespace anelm::ane {

namespace {

constexpr unsigned int kQoS = 21;  // every working pipeline passes 21 (§1.5)
constexpr const char* kFrameworkPath =
    "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine";

struct AneClasses {
  Class descriptor = nil;  // _ANEInMemoryModelDescriptor
  Class model = nil;       // _ANEInMemoryModel
  Class request = nil;     // _ANERequest
  Class io_surface = nil;  // _ANEIOSurfaceObject
};

std::string ns_error_text(NSError* e) {
  if (!e) return "no NSError";
  return std::string([[e description] UTF8String] ?: "?");
}

std::string os_build() {
  char buf[64] = {0};
  size_t n = sizeof buf;
  if (sysctlbyname("kern.osversion", buf, &n, nullptr, 0) != 0) return "unknown-os";
  return std::string("macos-") + buf;
}

// Step 1 of §8: dlopen the framework and resolve the four core classes.
Status load_classes(AneClasses* c) {
  if (!dlopen(kFrameworkPath, RTLD_NOW)) {
    const char* err = dlerror();
    return Status(
        StatusCode::kUnavailable,
        std::string("cannot load AppleNeuralEngine.framework: ") + (err ? err : "unknown error"));
  }
  c->descriptor = NSClassFromString(@"_ANEInMemoryModelDescriptor");
  c->model = NSClassFromString(@"_ANEInMemoryModel");
  c->request = NSClassFromString(@"_ANERequest");
  c->io_surface = NSClassFromString(@"_ANEIOSurfaceObject");
  const char* missing = !c->descriptor   ? "_ANEInMemoryModelDescriptor"
                        : !c->model      ? "_ANEInMemoryModel"
                        : !c->request    ? "_ANERequest"
                        : !c->io_surface ? "_ANEIOSurfaceObject"
                                         : nullptr;
  if (missing)
    return Status(StatusCode::kUnavailable,
                  std::string("private class ") + missing +
                      " is missing from AppleNeuralEngine.framework (OS changed?)");
  return {};
}

// The six-key flat surface of §4.1.
IOSurfaceRef make_surface(std::size_t bytes) {
  NSDictionary* props = @{
    (__bridge id)kIOSurfaceWidth : @(bytes),
    (__bridge id)kIOSurfaceHeight : @1,
    (__bridge id)kIOSurfaceBytesPerElement : @1,
    (__bridge id)kIOSurfaceBytesPerRow : @(bytes),
    (__bridge id)kIOSurfaceAllocSize : @(bytes),
    (__bridge id)kIOSurfacePixelFormat : @0,
  };
  IOSurfaceRef s = IOSurfaceCreate((__bridge CFDictionaryRef)props);
  if (s) {  // zero-fill so padding lanes start at zero (AL)
    IOSurfaceLock(s, 0, nullptr);
    std::memset(IOSurfaceGetBaseAddress(s), 0, IOSurfaceGetAllocSize(s));
    IOSurfaceUnlock(s, 0, nullptr);
  }
  return s;
}

bool responds(id obj, SEL sel) { return obj && [obj respondsToSelector:sel]; }

// Staging directories are shared by identical programs (same hex id, §1.11): reference-count them.
std::mutex g_dirs_mu;
std::map<std::string, int> g_dir_refs;

class DarwinProgram final : public Program {
 public:
  DarwinProgram(std::string name, std::string hex, sim::CompiledProgram front, id model,
                std::string staging_dir, bool owns_dir, bool from_cache, SimulatorOptions opts,
                std::shared_ptr<int> live)
      : name_(std::move(name)),
        hex_(std::move(hex)),
        front_(std::move(front)),
        model_(model),
        staging_dir_(std::move(staging_dir)),
        owns_dir_(owns_dir),
        from_cache_(from_cache),
        opts_(std::move(opts)),
        live_(std::move(live)) {
    ++*live_;
  }
  ~DarwinProgram() override { (void)release(); }

  // Step 4 of §8: surfaces (equal sizes per side, >= 49,152 B, 16 KiB granule) and one request.
  Status bind(const AneClasses& cls) {
    const auto& fn = front_.functions.at(0);
    std::int64_t in_bytes = 0, out_bytes = 0;
    for (const auto& d : fn.inputs)
      in_bytes = std::max(in_bytes, SurfaceLayout::for_type(d.type).alloc_bytes());
    for (const auto& d : fn.outputs)
      out_bytes = std::max(out_bytes, SurfaceLayout::for_type(d.type).alloc_bytes());
    NSMutableArray* ins = [NSMutableArray array];
    NSMutableArray* in_idx = [NSMutableArray array];
    NSMutableArray* outs = [NSMutableArray array];
    NSMutableArray* out_idx = [NSMutableArray array];
    auto wrap = ((id(*)(Class, SEL, IOSurfaceRef))objc_msgSend);
    for (std::size_t i = 0; i < fn.inputs.size(); ++i) {
      IOSurfaceRef s = make_surface(static_cast<std::size_t>(in_bytes));
      if (!s) return eval_failed("IOSurfaceCreate failed for input " + fn.inputs[i].name);
      in_surfaces_.push_back(s);
      [ins addObject:wrap(cls.io_surface, @selector(objectWithIOSurface:), s)];
      [in_idx addObject:@(i)];
    }
    for (std::size_t i = 0; i < fn.outputs.size(); ++i) {
      IOSurfaceRef s = make_surface(static_cast<std::size_t>(out_bytes));
      if (!s) return eval_failed("IOSurfaceCreate failed for output " + fn.outputs[i].name);
      out_surfaces_.push_back(s);
      [outs addObject:wrap(cls.io_surface, @selector(objectWithIOSurface:), s)];
      [out_idx addObject:@(i)];
    }
    auto make_request = ((id(*)(Class, SEL, id, id, id, id, id, id, id))objc_msgSend);
    // The request factory of §1.2 row 7; weightsBuffer and perfStats are nil, procedure 0.
    SEL factory = NSSelectorFromString(
        @"requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:");
    request_ = make_request(cls.request, factory, ins, in_idx, outs, out_idx, nil, nil, @0);
    if (!request_) return eval_failed("_ANERequest factory returned nil for '" + name_ + "'");
    return {};
  }

  const std::string& name() const override { return name_; }
  const std::string& identifier() const override { return hex_; }
  // Multi-function programs are not bound on device yet (one request per procedure is §1.7 work).
  int procedure_count() const override { return 1; }
  const std::vector<TensorDesc>& inputs(int) const override {
    return front_.functions.at(0).inputs;
  }
  const std::vector<TensorDesc>& outputs(int) const override {
    return front_.functions.at(0).outputs;
  }
  bool from_cache() const override { return from_cache_; }

  // Step 5 of §8: write, evaluate, check the BOOL, read.
  Status evaluate(std::span<const std::span<const std::uint8_t>> inputs,
                  std::span<const std::span<std::uint8_t>> outputs, int procedure) override {
    if (!model_) return Status(StatusCode::kReleased, "program '" + name_ + "' was released");
    if (procedure != 0)
      return eval_failed("status=0x2: procedure " + std::to_string(procedure) + " not bound");
    const auto& fn = front_.functions.at(0);
    ANE_RETURN_IF_ERROR(sim::check_surfaces(fn.inputs, fn.outputs, opts_, inputs, outputs));
    @autoreleasepool {
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        IOSurfaceRef s = in_surfaces_[i];
        IOSurfaceLock(s, 0, nullptr);
        std::memcpy(IOSurfaceGetBaseAddress(s), inputs[i].data(),
                    std::min(inputs[i].size(), IOSurfaceGetAllocSize(s)));
        IOSurfaceUnlock(s, 0, nullptr);
      }
      NSError* err = nil;
      auto eval = ((BOOL(*)(id, SEL, unsigned int, id, id, NSError**))objc_msgSend);
      const BOOL ok = eval(model_, @selector(evaluateWithQoS:options:request:error:), kQoS, @{},
                           request_, &err);
      if (!ok)
        return eval_failed("evaluateWithQoS failed for '" + name_ + "': " + ns_error_text(err));
      for (std::size_t i = 0; i < outputs.size(); ++i) {
        IOSurfaceRef s = out_surfaces_[i];
        IOSurfaceLock(s, kIOSurfaceLockReadOnly, nullptr);
        std::memcpy(outputs[i].data(), IOSurfaceGetBaseAddress(s),
                    std::min(outputs[i].size(), IOSurfaceGetAllocSize(s)));
        IOSurfaceUnlock(s, kIOSurfaceLockReadOnly, nullptr);
      }
    }
    return {};
  }

  // Step 6 of §8.
  Status release() override {
    if (!model_) return {};
    @autoreleasepool {
      NSError* err = nil;
      auto unload = ((BOOL(*)(id, SEL, unsigned int, NSError**))objc_msgSend);
      @try {
        unload(model_, @selector(unloadWithQoS:error:), kQoS, &err);
      } @catch (NSException*) {
        // Forged or cache-loaded models may throw on unload (M0); nothing to recover.
      }
    }
    for (IOSurfaceRef s : in_surfaces_) CFRelease(s);
    for (IOSurfaceRef s : out_surfaces_) CFRelease(s);
    in_surfaces_.clear();
    out_surfaces_.clear();
    request_ = nil;
    model_ = nil;
    --*live_;
    if (owns_dir_) {
      std::lock_guard<std::mutex> lock(g_dirs_mu);
      if (--g_dir_refs[staging_dir_] <= 0) {
        g_dir_refs.erase(staging_dir_);
        [[NSFileManager defaultManager] removeItemAtPath:@(staging_dir_.c_str()) error:nil];
      }
    }
    return {};
  }

 private:
  std::string name_, hex_;
  sim::CompiledProgram front_;  // validated without weights (kValidateOnly): I/O descriptions only
  id model_;
  id request_ = nil;
  std::vector<IOSurfaceRef> in_surfaces_, out_surfaces_;
  std::string staging_dir_;
  bool owns_dir_;
  bool from_cache_;
  SimulatorOptions opts_;
  std::shared_ptr<int> live_;  // the runtime's count of loaded programs
};

class DarwinRuntime final : public Runtime {
 public:
  DarwinRuntime(const RuntimeOptions& o, AneClasses cls)
      : opts_(o), cls_(cls), cache_(o.cache_dir), os_build_(os_build()) {}

  std::string_view kind() const override { return "ane"; }

  RuntimeStats stats() const override {
    return RuntimeStats{compiles_, opts_.compile_budget, cache_.hits(), cache_.misses(), *live_};
  }

  Status compile(const ProgramSource& source, std::unique_ptr<Program>* out) override {
    // UNTESTED (no Mac here): the live cap and kValidateOnly below were added without a device.
    // The simulator's live-program cap applies to the device too (§10.5: IM ~55 live models).
    if (opts_.sim.max_live_programs > 0 && *live_ >= opts_.sim.max_live_programs)
      return compile_failed("load of '" + source.name + "' refused: " + std::to_string(*live_) +
                            " programs are loaded and at most " +
                            std::to_string(opts_.sim.max_live_programs) +
                            " may be live at once (max_live_programs)");
    // Validate on the host first: a bad program must not spend device budget. kValidateOnly: the
    // blobs are checked but not copied as fp32 (front_ only serves the I/O descriptions; a
    // materialised copy cost ~3.4 GB for Qwen2.5-0.5B).
    sim::CompiledProgram front;
    ANE_RETURN_IF_ERROR(sim::front_end(source, opts_.sim, &front, sim::ConstMode::kValidateOnly));
    if (front.functions.size() != 1)
      return compile_failed("multi-function programs are not supported by the macOS runtime yet");
    const std::uint64_t key = program_key(source, os_build_);
    @autoreleasepool {
      // Step 2: descriptor (MIL as NSData, weights dict, @{} when empty) and model.
      NSData* mil = [NSData dataWithBytes:source.mil_text.data() length:source.mil_text.size()];
      NSMutableDictionary* weights = [NSMutableDictionary dictionary];
      for (const WeightFile& w : source.weights) {
        NSData* data = [NSData dataWithBytes:w.bytes.data() length:w.bytes.size()];
        weights[@(w.path.c_str())] = @{@"offset" : @0, @"data" : data};
      }
      auto make_desc = ((id(*)(Class, SEL, id, id, id))objc_msgSend);
      id desc = make_desc(cls_.descriptor, @selector(modelWithMILText:weights:optionsPlist:), mil,
                          weights, nil);
      if (!desc)
        return compile_failed("desc=NULL: _ANEInMemoryModelDescriptor rejected '" + source.name +
                              "'");
      auto make_model = ((id(*)(Class, SEL, id))objc_msgSend);
      id model = make_model(cls_.model, @selector(inMemoryModelWithDescriptor:), desc);
      if (!model) return compile_failed("_ANEInMemoryModel is nil for '" + source.name + "'");
      NSString* hex_ns = ((id(*)(id, SEL))objc_msgSend)(model, @selector(hexStringIdentifier));
      const std::string hex = hex_ns ? std::string([hex_ns UTF8String]) : key_hex(key);

      // Step 3 / §1.13: stage into the cache entry (setModelURL:, OM's pattern) or into
      // $TMPDIR/<hex>.
      bool use_cache = cache_.enabled() && responds(model, @selector(setModelURL:));
      std::string dir;
      if (use_cache) {
        dir = cache_.entry_dir(key).string();
        ((void (*)(id, SEL, id))objc_msgSend)(model, @selector(setModelURL:),
                                              [NSURL fileURLWithPath:@(dir.c_str())]);
        const bool exists = responds(model, @selector(compiledModelExists)) &&
                            ((BOOL(*)(id, SEL))objc_msgSend)(model, @selector(compiledModelExists));
        if (exists && cache_.contains(key) && load(model, source.name).ok()) {
          cache_.record_hit();  // a load without a compile does not count (§1.10)
          return finish(source, hex, std::move(front), model, dir, false, true, out);
        }
        cache_.record_miss();
      }
      // Check the budget before staging anything, so a refusal leaves no files behind.
      if (compiles_ >= opts_.compile_budget)
        return Status(StatusCode::kBudgetExhausted,
                      "compile of '" + source.name + "' refused: " + std::to_string(compiles_) +
                          " compiles already made in this process (budget " +
                          std::to_string(opts_.compile_budget) +
                          "); HINT: restart the process, the cache makes the restart cheap");
      if (use_cache) {
        cache_.remove(key);
        ANE_RETURN_IF_ERROR(cache_.store(key, source, os_build_));
      } else {
        dir = std::string([NSTemporaryDirectory() UTF8String]) + "/" + hex;
        ANE_RETURN_IF_ERROR(write_staging(dir, source));
      }
      NSError* err = nil;
      auto compile_fn = ((BOOL(*)(id, SEL, unsigned int, id, NSError**))objc_msgSend);
      if (!compile_fn(model, @selector(compileWithQoS:options:error:), kQoS, @{}, &err)) {
        if (!use_cache) [[NSFileManager defaultManager] removeItemAtPath:@(dir.c_str()) error:nil];
        if (use_cache) cache_.remove(key);
        return compile_failed("ANE compile failed for '" + source.name +
                              "': " + ns_error_text(err));
      }
      ANE_RETURN_IF_ERROR(load(model, source.name));
      ++compiles_;  // step 6 of §1.3: only after compile and load both succeeded
      return finish(source, hex, std::move(front), model, dir, !use_cache, false, out);
    }
  }

 private:
  // loadWithQoS, retried once after 100 ms "for ANE slot reclamation" (MX bridge).
  Status load(id model, const std::string& name) {
    auto load_fn = ((BOOL(*)(id, SEL, unsigned int, id, NSError**))objc_msgSend);
    NSError* err = nil;
    if (load_fn(model, @selector(loadWithQoS:options:error:), kQoS, @{}, &err)) return {};
    usleep(100000);
    err = nil;
    if (load_fn(model, @selector(loadWithQoS:options:error:), kQoS, @{}, &err)) return {};
    return compile_failed("load FAIL for '" + name + "': " + ns_error_text(err));
  }

  static Status write_staging(const std::string& dir, const ProgramSource& source) {
    ANE_RETURN_IF_ERROR(write_file_bytes(
        std::filesystem::path(dir) / "model.mil",
        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(source.mil_text.data()),
                                      source.mil_text.size())));
    for (const WeightFile& w : source.weights) {
      const std::string rel = weight_relative_path(w.path);
      if (rel.empty())
        return invalid_argument("weight path \"" + w.path + "\" is not under @model_path/");
      ANE_RETURN_IF_ERROR(write_file_bytes(std::filesystem::path(dir) / rel, w.bytes));
    }
    return {};
  }

  Status finish(const ProgramSource& source, const std::string& hex, sim::CompiledProgram front,
                id model, const std::string& dir, bool owns_dir, bool from_cache,
                std::unique_ptr<Program>* out) {
    if (owns_dir) {
      std::lock_guard<std::mutex> lock(g_dirs_mu);
      ++g_dir_refs[dir];
    }
    auto p = std::make_unique<DarwinProgram>(source.name, hex, std::move(front), model, dir,
                                             owns_dir, from_cache, opts_.sim, live_);
    ANE_RETURN_IF_ERROR(p->bind(cls_));
    *out = std::move(p);
    return {};
  }

  RuntimeOptions opts_;
  AneClasses cls_;
  ProgramCache cache_;
  std::string os_build_;
  int compiles_ = 0;
  std::shared_ptr<int> live_ = std::make_shared<int>(0);
};

}  // namespace

Status make_darwin_runtime(const RuntimeOptions& options, std::unique_ptr<Runtime>* out) {
  AneClasses cls;
  ANE_RETURN_IF_ERROR(load_classes(&cls));
  *out = std::make_unique<DarwinRuntime>(options, cls);
  return {};
}

}  // namespace anelm::ane
