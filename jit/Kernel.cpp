//===- Kernel.cpp - One JIT-compiled kernel and its variants --------------===//

#include "jit/Kernel.h"

#include "codegen/BundleBuilder.h"
#include "jit/Autotuner.h"
#include "runtime/Args.h"
#include "runtime/DTypes.h"
#include "support/BlockMask.h"

#include <chrono>
#include <cstdio>
#include <cstring>

namespace kiln::jit {

JitState::JitState(kiln_runtime *runtime, std::string cacheDir, Log log)
    : runtime(runtime), log(log), cache(std::move(cacheDir), this->log) {}

JitState::~JitState() { kiln_runtime_destroy(runtime); }

Failure compileFailure(std::string diagnostics) {
  while (!diagnostics.empty() && diagnostics.back() == '\n')
    diagnostics.pop_back();
  return Failure{KILN_ERROR_COMPILE, std::move(diagnostics)};
}

// The first line of a diagnostics text, for one-line notes.
static std::string firstLine(const std::string &text) { return text.substr(0, text.find('\n')); }

kiln_grid LaunchGrid::forConfig(const kiln_kernel *kernel, const std::string &name, const std::string &config) const {
  if (!fn_)
    return fixed_;
  // Cleared first, so a message left by an earlier call is not taken for this one's.
  kiln_set_last_error(KILN_SUCCESS, "");
  kiln_grid grid{0, 0, 0};
  kiln_status status = fn_(userData_, kernel, &grid);
  if (status == KILN_SUCCESS)
    return grid;
  std::string why = kiln_last_error();
  if (why.empty())
    why = std::string("it returned ") + kiln_status_name(status) +
          " without a message (a grid function sets one with kiln_set_last_error)";
  // The status reaches the caller of the launch: keep it one the caller can name.
  if (std::strcmp(kiln_status_name(status), "KILN_STATUS_UNKNOWN") == 0)
    status = KILN_ERROR_INVALID_VALUE;
  throw Failure{status, "kernel '" + name + "': the grid function failed" +
                            (config.empty() ? std::string() : " for config " + config) + ": " + why};
}

KernelFamily::KernelFamily(std::shared_ptr<JitState> jit, const Source &source, const std::string &kernel,
                           const SemaOptions &options, const FusionChoices &fusion)
    : jit_(std::move(jit)), name_(kernel) {
  std::optional<KernelAutotune> autotune;
  std::string diagnostics;
  if (!listConfigs(source, kernel, options, autotune, diagnostics))
    throw compileFailure(diagnostics);
  autotuned_ = autotune.has_value();
  if (!autotune) {
    Config &c = configs_.emplace_back();
    c.text = "{}";
    c.lowered = lowerKernel(source, kernel, options, fusion, c.failure);
    if (!c.lowered)
      throw compileFailure(c.failure);
  } else {
    // A value the caller fixes cannot also be tuned: say so rather than pick one.
    for (const AutotuneConfig &config : autotune->configs)
      for (const auto &[name, value] : config.defines)
        for (const auto &define : options.defines)
          if (define.first == name)
            throw Failure{KILN_ERROR_INVALID_VALUE, "kernel '" + kernel + "': const " + name +
                                                        " is tuned by its @autotune configs and cannot also be set"};
    std::string all;
    for (const AutotuneConfig &config : autotune->configs) {
      Config &c = configs_.emplace_back();
      c.text = config.text();
      c.lowered = lowerKernel(source, kernel, config.apply(options), fusion, c.failure);
      if (!c.lowered) {
        jit_->log.note("kernel '" + kernel + "': @autotune config " + c.text + " does not compile and is skipped: " +
                       firstLine(c.failure));
        all += c.failure;
      }
    }
    if (std::none_of(configs_.begin(), configs_.end(), [](const Config &c) { return c.lowered != nullptr; }))
      throw compileFailure(all);
  }

  const Config &first = configs_[firstCompiled()];
  for (const auto &p : first.lowered->kernel->params())
    params_.push_back(rt::BundleParam{p->nameHint, p->type.dtype, p->type.pointer, 1});
  for (const ir::BlockMaskParam &m : first.lowered->kernel->blockMasks)
    masks_.push_back(rt::BundleBlockMask{m.name, static_cast<uint32_t>(m.blockRows),
                                         static_cast<uint32_t>(m.blockCols), static_cast<uint32_t>(m.firstParam),
                                         m.extents});

  if (autotuned_) {
    // A key parameter that is `const` is fixed for this kernel object: nothing to key on.
    for (const std::string &name : autotune->key)
      for (size_t i = 0; i < params_.size(); ++i)
        if (params_[i].name == name)
          keyParams_.emplace_back(name, i);
    tuningKey_.add("kiln-autotune", 1).append(codegenKey(jit_->target, jit_->codegen));
    for (const Config &c : configs_)
      tuningKey_.add("config", c.text + " " + (c.lowered ? c.lowered->key.digest() : "does-not-compile"));
  }

  // Without launch-time specialization every variant there will be is known now;
  // compiling it here reports code-generation errors from the compile call.
  if (!jit_->specialize) {
    std::string errors;
    for (size_t i = 0; i < configs_.size(); ++i) {
      if (!configs_[i].lowered)
        continue;
      try {
        variant(i, genericFacts());
      } catch (const Failure &f) {
        if (!autotuned_)
          throw;
        jit_->log.note("kernel '" + kernel + "': @autotune config " + configs_[i].text + " is skipped: " +
                       firstLine(f.message));
        configs_[i].failure = f.message;
        configs_[i].lowered.reset();
        errors += f.message + "\n";
      }
    }
    if (std::none_of(configs_.begin(), configs_.end(), [](const Config &c) { return c.lowered != nullptr; }))
      throw compileFailure(errors);
  }
}

KernelFamily::~KernelFamily() {
  for (Config &c : configs_)
    for (auto &[facts, k] : c.variants)
      kiln_kernel_destroy(k);
}

rt::PackedArgs KernelFamily::checkArgs(std::span<const kiln_arg> args) const {
  // The runtime's own check, with buffers and masks looked up safely through the
  // runtime, so the messages are the runtime's and nothing is compiled for arguments it
  // would refuse.
  rt::BufferResolver resolve = [&](const kiln_buffer *buffer, std::string &why) -> std::optional<rt::BufferRef> {
    uint64_t address = 0;
    size_t size = 0;
    kiln_dtype dtype = KILN_DTYPE_NONE;
    if (kiln_buffer_query(jit_->runtime, buffer, &address, &size, &dtype) != KILN_SUCCESS) {
      why = kiln_last_error();
      return std::nullopt;
    }
    return rt::BufferRef{address, size, rt::fromCDType(dtype)};
  };
  rt::MaskResolver resolveMask = [&](const kiln_block_mask *mask, std::string &why) -> std::optional<rt::MaskRef> {
    int64_t shape[4] = {};
    rt::MaskRef ref;
    if (kiln_block_mask_query(jit_->runtime, mask, &shape[0], &shape[1], &shape[2], &shape[3], &ref.rowStart,
                              &ref.blocks, &ref.bitmaps) != KILN_SUCCESS) {
      why = kiln_last_error();
      return std::nullopt;
    }
    ref.rows = static_cast<int32_t>(shape[0]);
    ref.cols = static_cast<int32_t>(shape[1]);
    ref.blockRows = static_cast<int32_t>(shape[2]);
    ref.blockCols = static_cast<int32_t>(shape[3]);
    return ref;
  };
  rt::PackedArgs packed;
  if (std::optional<rt::ArgsError> error =
          rt::packLaunchArgs(name_, params_, masks_, args, resolve, resolveMask, packed))
    throw Failure{error->status, error->message};
  return packed;
}

// What the compiler would record in the bundle of `lowered` compiled with `options`, but
// for the code: makeBundle itself fills it, so the signature and the assumptions checked
// against a cached bundle are exactly those a fresh compile would write.
static DiskCache::Expected expectedBundle(const LoweredKernel &lowered, codegen::Target target,
                                          const codegen::CodegenOptions &options) {
  rt::Bundle b = codegen::makeBundle(*lowered.module, *lowered.kernel, target, options, codegen::CodegenResult{});
  return DiskCache::Expected{std::move(b.kernelName), b.target, std::move(b.sourceHash), std::move(b.consts),
                             b.numWarps, std::move(b.params)};
}

kiln_kernel *KernelFamily::variant(size_t index, const ArgFacts &facts) {
  Config &config = configs_[index];
  if (auto it = config.variants.find(facts); it != config.variants.end())
    return it->second;
  if (!config.lowered)
    throw compileFailure(config.failure);
  JitState &jit = *jit_;
  codegen::CodegenOptions options = facts.applyTo(jit.codegen);
  std::string key = KeyText(config.lowered->key).append(codegenKey(jit.target, options)).digest();
  std::optional<rt::Bundle> bundle = jit.cache.loadBundle(key, expectedBundle(*config.lowered, jit.target, options));
  if (!bundle) {
    std::string diagnostics;
    bundle = generateBundle(*config.lowered, jit.target, options, diagnostics);
    if (!bundle)
      throw compileFailure(diagnostics);
    jit.cache.storeBundle(key, *bundle);
  }
  std::string error;
  std::vector<uint8_t> bytes = rt::serializeBundle(*bundle, error);
  kiln_kernel *loaded = nullptr;
  if (bytes.empty())
    throw Failure{KILN_ERROR_INVALID_BUNDLE, "kernel '" + name_ + "': " + error};
  if (kiln_status s = kiln_kernel_load_memory(jit.runtime, bytes.data(), bytes.size(), &loaded); s != KILN_SUCCESS)
    throw Failure{s, kiln_last_error()};
  config.variants.emplace(facts, loaded);
  return loaded;
}

std::string KernelFamily::keyValues(std::span<const kiln_arg> args) const {
  std::string out;
  for (const auto &[name, index] : keyParams_) {
    const kiln_arg &a = args[index];
    std::string value;
    char text[64];
    switch (a.kind) {
    case KILN_ARG_BUFFER: {
      // A buffer is keyed by the bytes the kernel can see: problem size, not address.
      size_t size = kiln_buffer_size(a.value.buffer.buffer);
      value = std::to_string(size - std::min<uint64_t>(size, a.value.buffer.offset)) + "B";
      break;
    }
    case KILN_ARG_INT: value = std::to_string(a.value.i); break;
    case KILN_ARG_UINT: value = std::to_string(a.value.u); break;
    case KILN_ARG_FLOAT:
      std::snprintf(text, sizeof text, "%.17g", a.value.f);
      value = text;
      break;
    case KILN_ARG_BOOL: value = a.value.b ? "true" : "false"; break;
    case KILN_ARG_BLOCK_MASK: // a key names a scalar or pointer parameter, never a mask's parts
    case KILN_ARG_KIND_MAX_ENUM: break;
    }
    out += (out.empty() ? "" : ", ") + name + "=" + value;
  }
  return out;
}

static bool isEmpty(kiln_grid g) { return g.x == 0 || g.y == 0 || g.z == 0; }

size_t KernelFamily::firstCompiled() const {
  return std::find_if(configs_.begin(), configs_.end(), [](const Config &c) { return c.lowered != nullptr; }) -
         configs_.begin();
}

kiln_grid KernelFamily::gridFor(const LaunchGrid &grid, const kiln_kernel *kernel, size_t index) const {
  return grid.forConfig(kernel, name_, autotuned_ ? configs_[index].text : "");
}

size_t KernelFamily::chooseConfig(const LaunchGrid &grid, std::span<const kiln_arg> args, const ArgFacts &facts,
                                  const std::string &maskKey) {
  if (grid.isFixed() && isEmpty(grid.fixed())) // nothing runs, so there is nothing to time
    return firstCompiled();
  // A mask passed whole is part of the key: how sparse it is decides the best config.
  std::string values = keyValues(args);
  if (!maskKey.empty())
    values += (values.empty() ? "" : ", ") + maskKey;
  std::string choiceKey = values + "; " + facts.text();
  if (auto it = choices_.find(choiceKey); it != choices_.end())
    return it->second;
  JitState &jit = *jit_;
  std::string recordKey =
      KeyText(tuningKey_).add("key", values).add("facts", facts.text()).add("device", jit.deviceName).digest();
  std::vector<std::string> texts;
  for (const Config &c : configs_)
    texts.push_back(c.text);
  auto sound = [&](const std::string &text) { return TuningRecord::parseBest(text, texts).has_value(); };
  if (std::optional<std::string> record = jit.cache.loadText(recordKey, "tune", sound)) {
    size_t best = *TuningRecord::parseBest(*record, texts);
    if (configs_[best].lowered)
      return choices_[choiceKey] = best;
  }
  bool keep = true;
  size_t best = tune(grid, args, facts, values, keep);
  if (keep)
    choices_[choiceKey] = best;
  return best;
}

size_t KernelFamily::tune(const LaunchGrid &grid, std::span<const kiln_arg> args, const ArgFacts &facts,
                          const std::string &values, bool &keep) {
  const auto tuneStart = std::chrono::steady_clock::now();
  JitState &jit = *jit_;
  TuningRecord record;
  record.keyValues = values;
  ArgumentSnapshot snapshot;
  if (std::string why = snapshot.take(jit.runtime, args); !why.empty()) {
    // Timing on the caller's only copy could change its data; run the first config untimed.
    keep = false;
    jit.log.warning("kernel '" + name_ + "': cannot copy the arguments to autotune on (" + why +
                    "); using the first config that compiles without timing");
    return firstCompiled();
  }
  std::optional<size_t> best;
  std::string reasons;
  bool emptyGrid = false;
  for (size_t i = 0; i < configs_.size(); ++i) {
    record.configs.push_back(configs_[i].text);
    record.medianMs.emplace_back();
    record.skipped.emplace_back();
    std::string why;
    kiln_kernel *k = nullptr;
    try {
      k = variant(i, facts);
    } catch (const Failure &f) {
      why = firstLine(f.message);
    }
    if (k) {
      kiln_grid g{0, 0, 0};
      try {
        g = gridFor(grid, k, i);
      } catch (Failure &f) {
        // The caller's grid function is broken, not this config: stop, leaving the
        // caller's data as it was and no choice behind.
        if (std::string lost = snapshot.restore(); !lost.empty())
          f.message += "; the arguments could not be restored after the configs that ran: " + lost;
        throw;
      }
      float ms = 0;
      if (isEmpty(g)) {
        emptyGrid = true;
        why = "its grid is empty, so there is nothing to time";
      }
      if (why.empty())
        why = snapshot.restore();
      if (why.empty())
        why = timeLaunch(jit.runtime, k, g, args, jit.autotuneWarmup, jit.autotuneRuns, ms);
      if (why.empty()) {
        record.medianMs.back() = ms;
        if (!best || ms < *record.medianMs[*best])
          best = i;
      }
    }
    if (!why.empty()) {
      record.skipped.back() = why;
      reasons += "\n  " + configs_[i].text + ": " + why;
    }
  }
  if (std::string why = snapshot.restore(); !why.empty())
    throw Failure{KILN_ERROR_DRIVER, "kernel '" + name_ + "': cannot restore the arguments after autotuning: " + why};
  if (!best && emptyGrid) {
    // As with an empty grid given for every config: nothing runs, nothing is learned.
    keep = false;
    return firstCompiled();
  }
  if (!best)
    throw Failure{KILN_ERROR_LAUNCH, "kernel '" + name_ + "': no @autotune config could run:" + reasons};
  record.best = *best;
  std::string recordKey =
      KeyText(tuningKey_).add("key", values).add("facts", facts.text()).add("device", jit.deviceName).digest();
  jit.cache.storeText(recordKey, "tune", record.serialize());
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.4f", *record.medianMs[*best]);
  const double tunedMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - tuneStart).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.0f", tunedMs);
  jit.log.note("kernel '" + name_ + "' autotuned for " + (values.empty() ? "its arguments" : values) + ": " +
               configs_[*best].text + " (" + ms + " ms, fastest of " + std::to_string(configs_.size()) +
               "; tuning took " + took + " ms)");
  return *best;
}

std::vector<kiln_arg> KernelFamily::withMaskParts(std::span<const kiln_arg> args, std::string &maskKey) const {
  std::vector<kiln_arg> out;
  size_t param = 0, arg = 0;
  for (const rt::BundleBlockMask &m : masks_) {
    for (; param < m.firstParam && arg < args.size(); ++param, ++arg)
      out.push_back(args[arg]);
    if (arg == args.size())
      break;
    int64_t shape[2] = {};
    const kiln_buffer *arrays[3] = {};
    if (param != m.firstParam || args[arg].kind != KILN_ARG_BLOCK_MASK ||
        kiln_block_mask_query(jit_->runtime, args[arg].value.mask, &shape[0], &shape[1], nullptr, nullptr,
                              &arrays[0], &arrays[1], &arrays[2]) != KILN_SUCCESS)
      continue; // passed as parts, or refused by checkArgs with the runtime's message
    maskKey += (maskKey.empty() ? "" : ", ") + m.name + "=" + kiln_block_mask_digest(args[arg].value.mask);
    for (int64_t extent : shape) {
      kiln_arg a{};
      a.kind = KILN_ARG_INT;
      a.value.i = extent;
      out.push_back(a);
    }
    for (const kiln_buffer *array : arrays) {
      kiln_arg a{};
      a.kind = KILN_ARG_BUFFER;
      a.value.buffer.buffer = array;
      out.push_back(a);
    }
    param += kBlockMaskParams;
    ++arg;
  }
  out.insert(out.end(), args.begin() + static_cast<std::ptrdiff_t>(arg), args.end());
  return out;
}

KernelFamily::Selection KernelFamily::selectLocked(const LaunchGrid &grid, std::span<const kiln_arg> whole) {
  // Checked as given first: a mask passed whole is checked against its parameter's block
  // sizes, which its parts no longer carry, before any config is compiled or timed.
  checkArgs(whole);
  // Masks passed whole become their five parts, so that every argument lines up with
  // its parameter for the facts, the autotuning key and the timing launches.
  std::string maskKey;
  const std::vector<kiln_arg> args = withMaskParts(whole, maskKey);
  rt::PackedArgs packed = checkArgs(args);
  ArgFacts facts = jit_->specialize ? factsOf(params_, packed) : genericFacts();
  size_t config = autotuned_ ? chooseConfig(grid, args, facts, maskKey) : 0;
  kiln_kernel *kernel = variant(config, facts);
  return Selection{kernel, config, gridFor(grid, kernel, config)};
}

KernelFamily::Selection KernelFamily::select(const LaunchGrid &grid, std::span<const kiln_arg> args) {
  std::lock_guard<std::mutex> lock(jit_->mutex);
  return selectLocked(grid, args);
}

void KernelFamily::launch(const LaunchGrid &grid, std::span<const kiln_arg> args, std::optional<void *> stream) {
  std::lock_guard<std::mutex> lock(jit_->mutex);
  Selection s = selectLocked(grid, args);
  const kiln_status status = stream ? kiln_launch_on_stream(s.kernel, s.grid, args.data(), args.size(), *stream)
                                    : kiln_launch(s.kernel, s.grid, args.data(), args.size());
  if (status != KILN_SUCCESS)
    throw Failure{status, kiln_last_error()};
}

} // namespace kiln::jit
