//===- CApi.cpp - The C ABI of the JIT (kiln_jit.h) -----------------------===//
//
// Handles and argument checks; the work is in KernelFamily (Kernel.cpp). No exception
// crosses the ABI: Failure becomes its status, anything else an internal error, and
// the message goes where the runtime's go (kiln_last_error).
//
//===----------------------------------------------------------------------===//
#include "codegen/BundleBuilder.h"
#include "ir/transforms/SplitCostModel.h"
#include "jit/Choice.h"
#include "jit/Graph.h"
#include "jit/Kernel.h"
#include "jit/kiln_jit.h"
#include "runtime/DTypes.h"

#include <cstdlib>
#include <new>

using namespace kiln;
using namespace kiln::jit;

struct kiln_jit {
  std::shared_ptr<JitState> state;
};
struct kiln_jit_kernel {
  std::unique_ptr<KernelFamily> family;
};

namespace {

kiln_status fail(kiln_status status, const std::string &message) {
  return kiln_set_last_error(status, message.c_str());
}

template <typename Body> kiln_status guarded(Body &&body) {
  try {
    return body();
  } catch (const Failure &f) {
    return fail(f.status, f.message);
  } catch (const InternalCompilerError &e) {
    return fail(KILN_ERROR_COMPILE, std::string("internal compiler error: ") + e.what() + " (raised at " + e.file +
                                        ":" + std::to_string(e.line) +
                                        "); this is a bug in Kiln, not in your program; please report it with the input");
  } catch (const std::bad_alloc &) {
    return fail(KILN_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return fail(KILN_ERROR_DRIVER, std::string("internal error in the Kiln JIT: ") + e.what());
  } catch (...) {
    return fail(KILN_ERROR_DRIVER, "internal error in the Kiln JIT");
  }
}

SemaOptions semaOptions(const kiln_compile_options *options) {
  SemaOptions out;
  if (!options)
    return out;
  if (!options->defines && options->num_defines)
    throw Failure{KILN_ERROR_INVALID_VALUE, "num_defines is " + std::to_string(options->num_defines) +
                                                " but defines is null"};
  if (!options->include_dirs && options->num_include_dirs)
    throw Failure{KILN_ERROR_INVALID_VALUE, "num_include_dirs is " + std::to_string(options->num_include_dirs) +
                                                " but include_dirs is null"};
  for (size_t i = 0; i < options->num_defines; ++i) {
    const kiln_define &d = options->defines[i];
    if (!d.name || !d.value)
      throw Failure{KILN_ERROR_INVALID_VALUE, "define " + std::to_string(i) + " has a null name or value"};
    out.defines.emplace_back(d.name, d.value);
  }
  for (size_t i = 0; i < options->num_include_dirs; ++i)
    if (options->include_dirs[i])
      out.includeDirs.emplace_back(options->include_dirs[i]);
  if (options->num_warps)
    out.numWarps = options->num_warps;
  return out;
}

/// The fusion choices of `options`. Throws Failure for a split beyond the most segments.
FusionChoices fusionChoices(const kiln_compile_options *options) {
  int64_t split = options ? options->reduction_split : 0;
  if (split > ir::kMaxSegments)
    throw Failure{KILN_ERROR_INVALID_VALUE, "reduction_split " + std::to_string(split) +
                                                " is above the most segments, " + std::to_string(ir::kMaxSegments)};
  return FusionChoices{split, options && options->fuse_quantized != 0};
}

kiln_status compile(kiln_jit *jit, const Source &source, const char *kernel, const kiln_compile_options *options,
                    kiln_jit_kernel **out) {
  return guarded([&] {
    FusionChoices fusion = fusionChoices(options);
    auto family = std::make_unique<KernelFamily>(jit->state, source, kernel, semaOptions(options), fusion);
    *out = new kiln_jit_kernel{std::move(family)};
    return KILN_SUCCESS;
  });
}

kiln_status compileGraph(kiln_jit *jit, const Source &source, const char *graph, const kiln_compile_options *options,
                         kiln_graph **out) {
  return guarded([&] {
    if (options && options->num_warps)
      return fail(KILN_ERROR_INVALID_VALUE,
                  "num_warps is " + std::to_string(options->num_warps) + ", but a graph takes none: its kernels " +
                      "keep their own @num_warps (its persistent kernel runs them all with the largest)");
    FusionChoices fusion = fusionChoices(options);
    *out = jit::compileGraph(*jit->state, source, graph, semaOptions(options), fusion);
    return KILN_SUCCESS;
  });
}

// kiln_jit_kernel_select and its grid-function form; `fn` names the entry point in messages.
kiln_status selectVariant(const char *fn, kiln_jit_kernel *kernel, const LaunchGrid &grid, const kiln_arg *args,
                          size_t num_args, kiln_kernel **selected, size_t *config_index, kiln_grid *grid_out) {
  if (!kernel || (!args && num_args))
    return fail(KILN_ERROR_INVALID_VALUE, std::string(fn) + ": null kernel or argument array");
  return guarded([&] {
    KernelFamily::Selection s = kernel->family->select(grid, std::span<const kiln_arg>(args, num_args));
    if (selected)
      *selected = s.kernel;
    if (config_index)
      *config_index = s.config;
    if (grid_out)
      *grid_out = s.grid;
    return KILN_SUCCESS;
  });
}

} // namespace

extern "C" {

void kiln_jit_options_init(kiln_jit_options *options) {
  if (options)
    *options = kiln_jit_options{nullptr, 1, 3, 2, 5, nullptr, nullptr, 0};
}

kiln_status kiln_jit_create(kiln_runtime *runtime, const kiln_jit_options *options, kiln_jit **out) {
  return guarded([&] {
    if (!runtime || !out)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_create: null runtime or `out`");
    *out = nullptr;
    kiln_jit_options o;
    kiln_jit_options_init(&o);
    if (options)
      o = *options;
    if (o.opt_level < 0 || o.opt_level > 3)
      return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_create: opt_level must be 0..3, got " + std::to_string(o.opt_level));
    std::string target = kiln_runtime_target(runtime);
    std::optional<codegen::Target> codeTarget = codegen::targetForDevice(target);
    if (!codeTarget)
      return fail(KILN_ERROR_UNSUPPORTED, "the Kiln JIT cannot generate code for " + target + " (" +
                                              kiln_runtime_device_name(runtime) +
                                              "): it targets sm_80 and newer NVIDIA GPUs and SPIR-V devices");
    kiln_runtime *shared = nullptr;
    if (kiln_status s = kiln_runtime_share(runtime, &shared); s != KILN_SUCCESS)
      return s;
    auto state = std::make_shared<JitState>(
        shared, o.cache_dir ? std::string(o.cache_dir) : DiskCache::directoryFromEnvironment(), Log{o.log, o.log_user_data});
    state->target = *codeTarget;
    state->deviceName = kiln_runtime_device_name(runtime);
    state->specialize = o.specialize != 0;
    state->codegen.optLevel = o.opt_level;
    state->codegen.checked = o.checked != 0;
    state->codegen.emitSpirvAsm = false;
    // Machines with a driver but no CUDA toolkit can still name a libdevice (one ships
    // with Triton, for instance); the path is part of every cache key.
    if (const char *libdevice = std::getenv("KILN_LIBDEVICE"); libdevice && *libdevice)
      state->codegen.libdevicePath = libdevice;
    state->autotuneWarmup = o.autotune_warmup;
    state->autotuneRuns = o.autotune_runs ? o.autotune_runs : 1;
    *out = new kiln_jit{std::move(state)};
    return KILN_SUCCESS;
  });
}

void kiln_jit_destroy(kiln_jit *jit) { delete jit; }

const char *kiln_jit_cache_dir(const kiln_jit *jit) { return jit ? jit->state->cache.directory().c_str() : ""; }

kiln_status kiln_jit_compile_file(kiln_jit *jit, const char *path, const char *kernel,
                                  const kiln_compile_options *options, kiln_jit_kernel **out) {
  if (!jit || !path || !kernel || !out)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_compile_file: null jit, path, kernel name or `out`");
  *out = nullptr;
  return compile(jit, Source{path, std::nullopt}, kernel, options, out);
}

kiln_status kiln_jit_compile_string(kiln_jit *jit, const char *source, const char *source_name, const char *kernel,
                                    const kiln_compile_options *options, kiln_jit_kernel **out) {
  if (!jit || !source || !kernel || !out)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_compile_string: null jit, source, kernel name or `out`");
  *out = nullptr;
  return compile(jit, Source{source_name ? source_name : "<string>", std::string(source)}, kernel, options, out);
}

kiln_status kiln_jit_compile_graph_file(kiln_jit *jit, const char *path, const char *graph,
                                        const kiln_compile_options *options, kiln_graph **out) {
  if (!jit || !path || !graph || !out)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_compile_graph_file: null jit, path, graph name or `out`");
  *out = nullptr;
  return compileGraph(jit, Source{path, std::nullopt}, graph, options, out);
}

kiln_status kiln_jit_compile_graph_string(kiln_jit *jit, const char *source, const char *source_name,
                                          const char *graph, const kiln_compile_options *options, kiln_graph **out) {
  if (!jit || !source || !graph || !out)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_compile_graph_string: null jit, source, graph name or `out`");
  *out = nullptr;
  return compileGraph(jit, Source{source_name ? source_name : "<string>", std::string(source)}, graph, options, out);
}

void kiln_jit_kernel_destroy(kiln_jit_kernel *kernel) {
  delete kernel;
}

const char *kiln_jit_kernel_name(const kiln_jit_kernel *kernel) { return kernel ? kernel->family->name().c_str() : ""; }

size_t kiln_jit_kernel_num_params(const kiln_jit_kernel *kernel) { return kernel ? kernel->family->params().size() : 0; }

kiln_status kiln_jit_kernel_param(const kiln_jit_kernel *kernel, size_t index, const char **name, kiln_dtype *dtype,
                                  int *is_pointer) {
  if (!kernel || index >= kernel->family->params().size())
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_kernel_param: null kernel or index out of range");
  const rt::BundleParam &p = kernel->family->params()[index];
  if (name)
    *name = p.name.c_str();
  if (dtype)
    *dtype = rt::toCDType(p.dtype);
  if (is_pointer)
    *is_pointer = p.pointer ? 1 : 0;
  return KILN_SUCCESS;
}

size_t kiln_jit_kernel_num_configs(const kiln_jit_kernel *kernel) { return kernel ? kernel->family->numConfigs() : 0; }

const char *kiln_jit_kernel_config(const kiln_jit_kernel *kernel, size_t index) {
  return kernel && index < kernel->family->numConfigs() ? kernel->family->configText(index).c_str() : "";
}

kiln_status kiln_jit_launch(kiln_jit_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args) {
  if (!kernel || (!args && num_args))
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_launch: null kernel or argument array");
  return guarded([&] {
    kernel->family->launch(LaunchGrid(grid), std::span<const kiln_arg>(args, num_args));
    return KILN_SUCCESS;
  });
}

kiln_status kiln_jit_launch_on_stream(kiln_jit_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args,
                                      void *stream) {
  if (!kernel || (!args && num_args))
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_launch_on_stream: null kernel or argument array");
  return guarded([&] {
    kernel->family->launch(LaunchGrid(grid), std::span<const kiln_arg>(args, num_args), stream);
    return KILN_SUCCESS;
  });
}

kiln_status kiln_jit_launch_with_grid_fn(kiln_jit_kernel *kernel, kiln_jit_grid_fn grid_fn, void *user_data,
                                         const kiln_arg *args, size_t num_args) {
  if (!kernel || !grid_fn || (!args && num_args))
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_launch_with_grid_fn: null kernel, grid function or argument array");
  return guarded([&] {
    kernel->family->launch(LaunchGrid(grid_fn, user_data), std::span<const kiln_arg>(args, num_args));
    return KILN_SUCCESS;
  });
}

kiln_status kiln_jit_kernel_select(kiln_jit_kernel *kernel, kiln_grid grid, const kiln_arg *args, size_t num_args,
                                   kiln_kernel **selected, size_t *config_index) {
  return selectVariant("kiln_jit_kernel_select", kernel, LaunchGrid(grid), args, num_args, selected, config_index,
                       nullptr);
}

kiln_status kiln_jit_kernel_select_with_grid_fn(kiln_jit_kernel *kernel, kiln_jit_grid_fn grid_fn, void *user_data,
                                                const kiln_arg *args, size_t num_args, kiln_kernel **selected,
                                                size_t *config_index, kiln_grid *grid) {
  if (!grid_fn)
    return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_kernel_select_with_grid_fn: null grid function");
  return selectVariant("kiln_jit_kernel_select_with_grid_fn", kernel, LaunchGrid(grid_fn, user_data), args, num_args,
                selected, config_index, grid);
}

kiln_status kiln_jit_choose(kiln_jit *jit, const char *search, const char *key, const char *const *candidates,
                            size_t num_candidates, kiln_jit_candidate_fn run, void *user_data,
                            const kiln_arg *preserve, size_t num_preserve, size_t *chosen) {
  if (!jit || !search || !run || !chosen || (!candidates && num_candidates) || (!preserve && num_preserve))
    return fail(KILN_ERROR_INVALID_VALUE,
                "kiln_jit_choose: null jit, search name, candidate function, result pointer or array");
  return guarded([&] {
    ChoiceRequest request{search, key ? key : "", {}};
    for (size_t i = 0; i < num_candidates; ++i) {
      if (!candidates[i])
        return fail(KILN_ERROR_INVALID_VALUE, "kiln_jit_choose: candidate " + std::to_string(i) + " has a null name");
      request.candidates.emplace_back(candidates[i]);
    }
    auto runOne = [&](size_t index) -> std::string {
      kiln_set_last_error(KILN_SUCCESS, ""); // so that a failure without a message shows none
      if (run(user_data, index) == KILN_SUCCESS)
        return "";
      std::string why = kiln_last_error();
      return why.empty() ? "the candidate's function failed" : why;
    };
    *chosen = chooseFastest(*jit->state, request, runOne, std::span<const kiln_arg>(preserve, num_preserve));
    return KILN_SUCCESS;
  });
}

} // extern "C"
