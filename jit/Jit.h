//===- Jit.h - C++ API of the Kiln JIT ----------------------------*- C++ -*-===//
//
// Kiln source compiled at run time for the runtime's device, cached on disk, launched
// like a kiln::Kernel. A header-only layer over kiln_jit.h, as Runtime.h is over
// kiln_runtime.h:
//
//   kiln::Runtime rt;                                   // CUDA, else Level Zero, else throws why
//   kiln::Jit jit(rt);                                  // cache: $KILN_CACHE_DIR or ~/.cache/kiln
//   auto k = jit.compile_file("softmax.kiln", "softmax", {{"BLOCK", 1024}});
//   k.launch({rows, 1, 1}, x, y, n_cols, n_cols);       // typed args checked against the signature
//   kiln::Graph g = jit.compile_graph_file("decode.kiln", "decode");  // a graph: one call runs it
//   g.launch(kiln::GraphMode::Auto, x, w, h, y, n);
//
// An @autotune kernel's configs differ in how much one program covers, so its grid is a
// function of the config that runs, as Triton's `grid = lambda META: ...`:
//
//   k.launch([&](const kiln::KernelInfo &cfg) {
//     int64_t block = cfg.const_int("BLOCK");                // this config's BLOCK
//     return kiln::Grid((n + block - 1) / block);
//   }, x, y, out, n);
//
// A program with errors throws kiln::CompileError whose what() is the compiler's
// diagnostics ("softmax.kiln:7:13: error[E0200]: ..." with the source line and caret);
// every other failure throws kiln::RuntimeError. docs/jit.md has the details.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "jit/kiln_jit.h"
#include "runtime/Runtime.h"

#include <charconv>
#include <cmath>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <type_traits>
#include <string>
#include <vector>

namespace kiln {

/// The Kiln program has errors; what() is the compiler's diagnostics.
class CompileError : public RuntimeError {
public:
  explicit CompileError(const std::string &diagnostics) : RuntimeError(KILN_ERROR_COMPILE, diagnostics) {}
};

namespace detail {
inline void checkJit(kiln_status s) {
  if (s == KILN_ERROR_COMPILE)
    throw CompileError(kiln_last_error());
  check(s);
}
} // namespace detail

/// A `const` parameter value: `{"BLOCK", 1024}`, `{"EPS", 1e-5}`, `{"CAUSAL", true}`, or
/// the text dslc's -D takes (`{"BLOCK", "0x400"}`).
struct Define {
  template <typename T>
    requires std::is_arithmetic_v<T>
  Define(std::string name_, T value_) : name(std::move(name_)), value(spell(value_)) {}
  Define(std::string name_, std::string value_) : name(std::move(name_)), value(std::move(value_)) {}
  Define(std::string name_, const char *value_) : name(std::move(name_)), value(value_) {}

  std::string name;
  std::string value;

private:
  template <typename T> static std::string spell(T v) {
    if constexpr (std::is_same_v<T, bool>) {
      return v ? "true" : "false";
    } else if constexpr (std::is_integral_v<T>) {
      return std::to_string(v);
    } else {
      // The shortest text that reads back to the same double, kept a float by its '.'.
      if (std::isnan(v))
        return "nan";
      if (std::isinf(v))
        return v < 0 ? "-inf" : "inf";
      char buffer[64];
      auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, static_cast<double>(v));
      std::string text(buffer, ec == std::errc() ? end : buffer);
      if (text.find_first_of(".e") == std::string::npos)
        text += ".0";
      return text;
    }
  }
};

struct CompileOptions {
  std::vector<Define> defines;
  std::vector<std::string> include_dirs; ///< searched for imports after the importing file's folder
  uint32_t num_warps = 0;                ///< 0: the kernel's @num_warps (an @autotune config's wins)
  uint32_t reduction_split = 0;          ///< --reduction-split: 0 the cost model, S segments, 1 none
  bool fuse_quantized = false;           ///< --fuse-quantized
};

/// A callable that gives the grid for the config that runs: Grid(const KernelInfo &).
template <typename F>
concept GridFunction = std::invocable<F &, const KernelInfo &> &&
                       std::convertible_to<std::invoke_result_t<F &, const KernelInfo &>, Grid>;

namespace detail {
/// A C++ grid function as a kiln_jit_grid_fn. No exception crosses the C ABI: the first
/// one thrown is kept here and rethrown, as it was, once the JIT call has returned.
template <typename F> struct GridCallback {
  F &fn;
  std::exception_ptr error;

  static kiln_status call(void *self, const kiln_kernel *config, kiln_grid *out) {
    auto &me = *static_cast<GridCallback *>(self);
    try {
      Grid g = std::invoke(me.fn, KernelInfo(config));
      *out = kiln_grid{g.x, g.y, g.z};
      return KILN_SUCCESS;
    } catch (const RuntimeError &e) {
      me.error = std::current_exception();
      return kiln_set_last_error(e.status() != KILN_SUCCESS ? e.status() : KILN_ERROR_INVALID_VALUE, e.what());
    } catch (const std::exception &e) {
      me.error = std::current_exception();
      return kiln_set_last_error(KILN_ERROR_INVALID_VALUE, e.what());
    } catch (...) {
      me.error = std::current_exception();
      return kiln_set_last_error(KILN_ERROR_INVALID_VALUE, "it threw an exception that is not a std::exception");
    }
  }
  /// After the JIT call: the grid function's own exception, else the JIT's error.
  void check(kiln_status s) const {
    if (s != KILN_SUCCESS && error)
      std::rethrow_exception(error);
    checkJit(s);
  }
};
} // namespace detail

/// A JIT-compiled kernel: launches like kiln::Kernel, compiling the variant its
/// arguments need (and, under @autotune, tuning) on first use.
class JitKernel {
public:
  JitKernel() = default;
  /// `keep_alive`: what the handle's callbacks need (the Jit's log function).
  explicit JitKernel(kiln_jit_kernel *handle, std::shared_ptr<const void> keep_alive = nullptr)
      : h_(handle), keep_(std::move(keep_alive)) {}
  ~JitKernel() { kiln_jit_kernel_destroy(h_); }
  JitKernel(JitKernel &&o) noexcept : h_(std::exchange(o.h_, nullptr)), keep_(std::move(o.keep_)) {}
  JitKernel &operator=(JitKernel &&o) noexcept {
    if (this != &o) {
      kiln_jit_kernel_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
      keep_ = std::move(o.keep_);
    }
    return *this;
  }
  JitKernel(const JitKernel &) = delete;
  JitKernel &operator=(const JitKernel &) = delete;

  /// Launches `grid` programs; arguments as for kiln::Kernel::launch.
  template <typename... Args> void launch(Grid grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    launch_args(grid, a);
  }
  /// launch on `stream` (CUDA: a CUstream; nullptr: the runtime's own) for this launch.
  template <typename... Args> void launch_on(void *stream, Grid grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    detail::checkJit(kiln_jit_launch_on_stream(h_, kiln_grid{grid.x, grid.y, grid.z}, a.data(), a.size(), stream));
  }
  void launch_args(Grid grid, std::span<const kiln_arg> args) {
    detail::checkJit(kiln_jit_launch(h_, kiln_grid{grid.x, grid.y, grid.z}, args.data(), args.size()));
  }

  /// Launches with the grid `grid(info)` gives for the config that runs, `info` being
  /// that config's kernel (its consts: info.const_int("BLOCK")). Under @autotune it is
  /// called for every config timed and then for the chosen one. What it throws is
  /// rethrown here unchanged, after the JIT has put the argument buffers back and kept no
  /// tuning choice. It must not launch through the same Jit.
  template <GridFunction F, typename... Args> void launch(F &&grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    launch_args(grid, a);
  }
  template <GridFunction F> void launch_args(F &&grid, std::span<const kiln_arg> args) {
    detail::GridCallback<F> callback{grid, nullptr};
    callback.check(kiln_jit_launch_with_grid_fn(h_, &detail::GridCallback<F>::call, &callback, args.data(),
                                                args.size()));
  }

  /// What a launch with these arguments runs, without launching it.
  struct Selection {
    kiln_kernel *kernel = nullptr; ///< owned by this JitKernel
    size_t config = 0;             ///< index into configs()
    Grid grid{0u, 0u, 0u};         ///< the grid it runs with
    KernelInfo info() const { return KernelInfo(kernel); }
    uint32_t block_size() const { return kiln_kernel_block_size(kernel); }
  };
  template <typename... Args> Selection select(Grid grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    Selection s;
    detail::checkJit(
        kiln_jit_kernel_select(h_, kiln_grid{grid.x, grid.y, grid.z}, a.data(), a.size(), &s.kernel, &s.config));
    s.grid = grid;
    return s;
  }
  /// The same with a grid function: `grid` receives what the launch would use.
  template <GridFunction F, typename... Args> Selection select(F &&grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    Selection s;
    kiln_grid g{0, 0, 0};
    detail::GridCallback<F> callback{grid, nullptr};
    callback.check(kiln_jit_kernel_select_with_grid_fn(h_, &detail::GridCallback<F>::call, &callback, a.data(),
                                                       a.size(), &s.kernel, &s.config, &g));
    s.grid = Grid(g.x, g.y, g.z);
    return s;
  }

  std::string name() const { return kiln_jit_kernel_name(h_); }
  std::vector<Kernel::Param> params() const {
    std::vector<Kernel::Param> out;
    for (size_t i = 0; i < kiln_jit_kernel_num_params(h_); ++i) {
      const char *n = nullptr;
      kiln_dtype d = KILN_DTYPE_NONE;
      int ptr = 0;
      detail::check(kiln_jit_kernel_param(h_, i, &n, &d, &ptr));
      out.push_back(Kernel::Param{n, d, ptr != 0});
    }
    return out;
  }
  /// The @autotune configs as text ("{}" alone for a kernel without @autotune).
  std::vector<std::string> configs() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < kiln_jit_kernel_num_configs(h_); ++i)
      out.emplace_back(kiln_jit_kernel_config(h_, i));
    return out;
  }
  kiln_jit_kernel *handle() const { return h_; }

private:
  kiln_jit_kernel *h_ = nullptr;
  std::shared_ptr<const void> keep_;
};

class Jit {
public:
  struct Options {
    /// nullopt: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; "": none.
    std::optional<std::string> cache_dir;
    bool specialize = true; ///< specialize launches on argument alignment and multiples of 16
    int opt_level = 3;
    bool checked = false; ///< checked mode (docs/checked.md): every access bounds-checked
    uint32_t autotune_warmup = 2;
    uint32_t autotune_runs = 5;
    /// Receives notes and warnings; unset: they go to stderr.
    std::function<void(kiln_jit_severity, const std::string &)> log;
  };

  explicit Jit(Runtime &runtime) : Jit(runtime, Options{}) {}
  Jit(Runtime &runtime, Options options) : log_(std::make_shared<LogFn>(std::move(options.log))) {
    kiln_jit_options o;
    kiln_jit_options_init(&o);
    if (options.cache_dir)
      o.cache_dir = options.cache_dir->c_str();
    o.specialize = options.specialize ? 1 : 0;
    o.opt_level = options.opt_level;
    o.checked = options.checked ? 1 : 0;
    o.autotune_warmup = options.autotune_warmup;
    o.autotune_runs = options.autotune_runs;
    if (*log_) {
      o.log = [](void *user, kiln_jit_severity severity, const char *message) {
        (*static_cast<LogFn *>(user))(severity, message);
      };
      o.log_user_data = log_.get();
    }
    detail::check(kiln_jit_create(runtime.handle(), &o, &h_));
  }
  ~Jit() { kiln_jit_destroy(h_); }
  Jit(Jit &&o) noexcept : h_(std::exchange(o.h_, nullptr)), log_(std::move(o.log_)) {}
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;
  Jit &operator=(Jit &&) = delete;

  /// `defines` as `{{"BLOCK", 1024}, {"EPS", 1e-5}}`; CompileOptions for more.
  JitKernel compile_file(const std::string &path, const std::string &kernel, std::initializer_list<Define> defines = {}) {
    return compile_file(path, kernel, CompileOptions{defines, {}, 0});
  }
  JitKernel compile_file(const std::string &path, const std::string &kernel, const CompileOptions &options) {
    Converted c(options);
    kiln_jit_kernel *k = nullptr;
    detail::checkJit(kiln_jit_compile_file(h_, path.c_str(), kernel.c_str(), &c.options, &k));
    return JitKernel(k, log_);
  }
  /// `source_name` names the text in diagnostics.
  JitKernel compile_string(const std::string &source, const std::string &kernel,
                           std::initializer_list<Define> defines = {}, const std::string &source_name = "<string>") {
    return compile_string(source, kernel, CompileOptions{defines, {}, 0}, source_name);
  }
  JitKernel compile_string(const std::string &source, const std::string &kernel, const CompileOptions &options,
                           const std::string &source_name = "<string>") {
    Converted c(options);
    kiln_jit_kernel *k = nullptr;
    detail::checkJit(
        kiln_jit_compile_string(h_, source.c_str(), source_name.c_str(), kernel.c_str(), &c.options, &k));
    return JitKernel(k, log_);
  }

  /// Graph `graph` of a Kiln file, with every kernel it launches (kiln_jit_compile_graph_file):
  /// a kiln::Graph as Runtime::load_graph gives, run in any mode. `defines` set the
  /// graph's `const` parameters; CompileOptions::num_warps must be 0.
  Graph compile_graph_file(const std::string &path, const std::string &graph, const CompileOptions &options = {}) {
    Converted c(options);
    kiln_graph *g = nullptr;
    detail::checkJit(kiln_jit_compile_graph_file(h_, path.c_str(), graph.c_str(), &c.options, &g));
    return Graph(g);
  }
  /// The same from source text; `source_name` names it in diagnostics.
  Graph compile_graph_string(const std::string &source, const std::string &graph, const CompileOptions &options = {},
                             const std::string &source_name = "<string>") {
    Converted c(options);
    kiln_graph *g = nullptr;
    detail::checkJit(
        kiln_jit_compile_graph_string(h_, source.c_str(), source_name.c_str(), graph.c_str(), &c.options, &g));
    return Graph(g);
  }

  /// One way to compute a result, for choose(): its name and the launches it makes.
  struct Candidate {
    std::string name;
    std::function<void()> run;
  };
  /// The first stage of a two-stage search (kiln_jit_choose): the index of the fastest
  /// of `candidates` on this device for `key` (the shapes, a mask's digest), measured on
  /// the first call per key (each candidate's kernels compile and autotune on its
  /// untimed runs) and kept on disk. `preserve` lists buffers the candidates update in
  /// place; they are restored after the runs. A candidate that throws is skipped, its
  /// message kept as the reason; when none runs, throws RuntimeError listing them.
  size_t choose(const std::string &search, const std::string &key, const std::vector<Candidate> &candidates,
                std::initializer_list<std::reference_wrapper<const Buffer>> preserve = {}) {
    std::vector<const char *> names;
    for (const Candidate &c : candidates)
      names.push_back(c.name.c_str());
    std::vector<kiln_arg> kept;
    for (const Buffer &b : preserve)
      kept.push_back(detail::toArg(b));
    auto call = [](void *user, size_t index) -> kiln_status {
      const Candidate &c = (*static_cast<const std::vector<Candidate> *>(user))[index];
      try {
        c.run();
        return KILN_SUCCESS;
      } catch (const RuntimeError &e) {
        return kiln_set_last_error(e.status() != KILN_SUCCESS ? e.status() : KILN_ERROR_LAUNCH, e.what());
      } catch (const std::exception &e) {
        return kiln_set_last_error(KILN_ERROR_LAUNCH, e.what());
      } catch (...) {
        return kiln_set_last_error(KILN_ERROR_LAUNCH, "it threw an exception that is not a std::exception");
      }
    };
    size_t chosen = 0;
    detail::checkJit(kiln_jit_choose(h_, search.c_str(), key.c_str(), names.data(), names.size(), call,
                                     const_cast<std::vector<Candidate> *>(&candidates), kept.data(), kept.size(),
                                     &chosen));
    return chosen;
  }

  /// The disk cache directory in use ("" when there is none).
  std::string cache_dir() const { return kiln_jit_cache_dir(h_); }
  kiln_jit *handle() const { return h_; }

private:
  using LogFn = std::function<void(kiln_jit_severity, const std::string &)>;

  /// CompileOptions as the C structs, pointing into `options` (which must outlive it).
  struct Converted {
    explicit Converted(const CompileOptions &o) {
      for (const Define &d : o.defines)
        defines.push_back(kiln_define{d.name.c_str(), d.value.c_str()});
      for (const std::string &dir : o.include_dirs)
        dirs.push_back(dir.c_str());
      options = kiln_compile_options{defines.data(), defines.size(), dirs.data(), dirs.size(), o.num_warps,
                                     o.reduction_split, o.fuse_quantized ? 1u : 0u};
    }
    std::vector<kiln_define> defines;
    std::vector<const char *> dirs;
    kiln_compile_options options;
  };

  kiln_jit *h_ = nullptr;
  // The callback kiln_jit calls; kernels share it, since they may log (while tuning)
  // after the Jit object is gone.
  std::shared_ptr<LogFn> log_;
};

} // namespace kiln
