//===- Runtime.h - C++ API of the Kiln runtime --------------------*- C++ -*-===//
//
// A thin, header-only layer over the C ABI in kiln_runtime.h: RAII handles, typed
// buffers, and a variadic launch whose arguments are turned into kiln_args by type:
//
//   kiln::Runtime rt;                                // CUDA, else Level Zero, else throws why
//   auto k = rt.load_bundle("softmax.kbin");
//   auto x = rt.upload(host_x);                      // a buffer of f32 from a std::vector<float>
//   auto y = rt.alloc<float>(rows * cols);
//   k.launch({rows, 1, 1}, x, y, cols);              // checked against softmax(x: *f32, y: *f32, n: i32)
//   std::vector<float> out = y.download<float>();
//
// A block_mask<BM, BN> parameter takes a kiln::BlockMask, built on the host from a dense
// array or BSR arrays and uploaded once (rt.block_mask_from_dense, rt.block_mask_from_bsr).
//
// Errors throw kiln::RuntimeError carrying the kiln_status and the runtime's message.
// Names are snake_case to match the C ABI and the API shape in the design documents.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/kiln_runtime.h"

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace kiln {

/// A failed runtime call: the status and the runtime's message for it.
class RuntimeError : public std::runtime_error {
public:
  RuntimeError(kiln_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
  kiln_status status() const noexcept { return status_; }

private:
  kiln_status status_;
};

namespace detail {
inline void check(kiln_status s) {
  if (s != KILN_SUCCESS)
    throw RuntimeError(s, kiln_last_error());
}

template <typename> inline constexpr bool kAlwaysFalse = false;

/// The kiln_dtype of a C++ element type (KILN_DTYPE_NONE when there is none).
template <typename T> constexpr kiln_dtype dtypeOf() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>)
    return KILN_DTYPE_BOOL;
  else if constexpr (std::is_same_v<U, float>)
    return KILN_DTYPE_F32;
  else if constexpr (std::is_same_v<U, double>)
    return KILN_DTYPE_F64;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>)
    return sizeof(U) == 1   ? KILN_DTYPE_I8
           : sizeof(U) == 2 ? KILN_DTYPE_I16
           : sizeof(U) == 4 ? KILN_DTYPE_I32
                            : KILN_DTYPE_I64;
  else if constexpr (std::is_integral_v<U>)
    return sizeof(U) == 1   ? KILN_DTYPE_U8
           : sizeof(U) == 2 ? KILN_DTYPE_U16
           : sizeof(U) == 4 ? KILN_DTYPE_U32
                            : KILN_DTYPE_U64;
  else
    return KILN_DTYPE_NONE;
}
} // namespace detail

enum class Backend { Auto = KILN_BACKEND_AUTO, Cuda = KILN_BACKEND_CUDA, LevelZero = KILN_BACKEND_LEVEL_ZERO };

/// Programs per grid axis. Takes any integer type, so `{rows, 1, 1}` works for an int
/// or a size_t `rows`; a value outside 0..2^32-1 throws.
struct Grid {
  template <std::integral X, std::integral Y = int, std::integral Z = int>
  Grid(X x_, Y y_ = 1, Z z_ = 1) : x(axis(x_)), y(axis(y_)), z(axis(z_)) {}

  uint32_t x, y, z;

private:
  template <std::integral T> static uint32_t axis(T v) {
    if (std::cmp_less(v, 0) || std::cmp_greater(v, UINT32_MAX))
      throw RuntimeError(KILN_ERROR_INVALID_VALUE, "grid size " + std::to_string(v) + " is outside 0..4294967295");
    return static_cast<uint32_t>(v);
  }
};

class Buffer;

/// A buffer plus a byte offset, passed where a kernel takes a pointer.
struct BufferView {
  const Buffer *buffer;
  uint64_t offset;
};

/// Device memory, freed when the object dies.
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(kiln_buffer *handle) : h_(handle) {}
  ~Buffer() { kiln_buffer_free(h_); }
  Buffer(Buffer &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Buffer &operator=(Buffer &&o) noexcept {
    if (this != &o) {
      kiln_buffer_free(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  kiln_buffer *handle() const { return h_; }
  size_t size_bytes() const { return kiln_buffer_size(h_); }
  kiln_dtype dtype() const { return kiln_buffer_dtype(h_); }
  uint64_t device_address() const { return kiln_buffer_device_address(h_); }
  /// This buffer starting `byte_offset` bytes in, as a kernel argument.
  BufferView at(uint64_t byte_offset) const { return BufferView{this, byte_offset}; }

  void write(const void *src, size_t bytes, size_t offset = 0) {
    detail::check(kiln_buffer_write(h_, offset, src, bytes));
  }
  void read(void *dst, size_t bytes, size_t offset = 0) const {
    detail::check(kiln_buffer_read(h_, offset, dst, bytes));
  }
  void fill(uint8_t byte) { detail::check(kiln_buffer_fill(h_, byte)); }
  /// Copies `bytes` of `src`, from `src_offset`, into this buffer at `dst_offset`, on the
  /// device (both buffers of one runtime).
  void copy_from(const Buffer &src, size_t bytes, size_t src_offset = 0, size_t dst_offset = 0) {
    detail::check(kiln_buffer_copy(h_, dst_offset, src.h_, src_offset, bytes));
  }

  /// Copies `data` to the start of the buffer.
  template <typename T> void upload(std::span<const T> data) {
    static_assert(std::is_trivially_copyable_v<T>, "upload needs trivially copyable elements");
    write(data.data(), data.size_bytes());
  }
  template <typename T> void upload(const std::vector<T> &data) { upload(std::span<const T>(data)); }

  /// The whole buffer as elements of T.
  template <typename T> std::vector<T> download() const {
    static_assert(std::is_trivially_copyable_v<T>, "download needs trivially copyable elements");
    static_assert(!std::is_same_v<T, bool>, "std::vector<bool> has no contiguous storage; download<uint8_t>");
    std::vector<T> out(size_bytes() / sizeof(T));
    read(out.data(), out.size() * sizeof(T));
    return out;
  }

private:
  kiln_buffer *h_ = nullptr;
};

/// How many blocks of a mask's grid are full, partial and empty.
struct BlockMaskCounts {
  int64_t full = 0, partial = 0, empty = 0;
};

/// A block-sparse mask on the device, for block_mask<BM, BN> parameters (one launch
/// argument in place of the mask's five parameters); freed when the object dies. Built
/// by Runtime::block_mask_from_dense, Runtime::block_mask_from_bsr and
/// Runtime::block_mask_from_buffers.
class BlockMask {
public:
  BlockMask() = default;
  explicit BlockMask(kiln_block_mask *handle) : h_(handle) {}
  ~BlockMask() { kiln_block_mask_destroy(h_); }
  BlockMask(BlockMask &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  BlockMask &operator=(BlockMask &&o) noexcept {
    if (this != &o) {
      kiln_block_mask_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  BlockMask(const BlockMask &) = delete;
  BlockMask &operator=(const BlockMask &) = delete;

  kiln_block_mask *handle() const { return h_; }
  /// Element extents and block sizes (BM, BN).
  int64_t rows() const { return shape()[0]; }
  int64_t cols() const { return shape()[1]; }
  int64_t block_rows() const { return shape()[2]; }
  int64_t block_cols() const { return shape()[3]; }
  /// A digest of the pattern (kiln_block_mask_digest): equal for equal patterns however
  /// they were built; what a tuning key names the mask by.
  std::string digest() const { return kiln_block_mask_digest(h_); }
  BlockMaskCounts counts() const {
    BlockMaskCounts c;
    detail::check(kiln_block_mask_counts(h_, &c.full, &c.partial, &c.empty));
    return c;
  }

private:
  std::array<int64_t, 4> shape() const {
    std::array<int64_t, 4> s{};
    detail::check(kiln_block_mask_shape(h_, &s[0], &s[1], &s[2], &s[3]));
    return s;
  }

  kiln_block_mask *h_ = nullptr;
};

namespace detail {
/// One launch argument from a C++ value, by its type.
template <typename T> kiln_arg toArg(const T &v) {
  using U = std::remove_cvref_t<T>;
  kiln_arg a{};
  if constexpr (std::is_same_v<U, Buffer>) {
    a.kind = KILN_ARG_BUFFER;
    a.value.buffer.buffer = v.handle();
    a.value.buffer.offset = 0;
  } else if constexpr (std::is_same_v<U, BufferView>) {
    a.kind = KILN_ARG_BUFFER;
    a.value.buffer.buffer = v.buffer ? v.buffer->handle() : nullptr;
    a.value.buffer.offset = v.offset;
  } else if constexpr (std::is_same_v<U, BlockMask>) {
    a.kind = KILN_ARG_BLOCK_MASK;
    a.value.mask = v.handle();
  } else if constexpr (std::is_same_v<U, bool>) {
    a.kind = KILN_ARG_BOOL;
    a.value.b = v ? 1 : 0;
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    a.kind = KILN_ARG_INT;
    a.value.i = static_cast<int64_t>(v);
  } else if constexpr (std::is_integral_v<U>) {
    a.kind = KILN_ARG_UINT;
    a.value.u = static_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<U, float> || std::is_same_v<U, double>) {
    a.kind = KILN_ARG_FLOAT;
    a.value.f = static_cast<double>(v);
  } else {
    static_assert(kAlwaysFalse<U>, "a kernel argument must be a kiln::Buffer, a kiln::BufferView, a "
                                   "kiln::BlockMask, bool, an integer, float or double (host pointers cannot be "
                                   "passed to a kernel)");
  }
  return a;
}
} // namespace detail

/// A runtime parameter of a kernel.
struct KernelParam {
  std::string name;
  kiln_dtype dtype;
  bool pointer;
};

/// A `block_mask<BM, BN>` parameter of a kernel: its five runtime parameters are
/// params()[first_param] .. params()[first_param + 4].
struct KernelBlockMask {
  std::string name;
  int64_t block_rows, block_cols;
  size_t first_param;
};

namespace detail {
/// The block masks of a kernel or a graph, through the C API's count and query calls.
template <typename Handle, typename Count, typename Query>
std::vector<KernelBlockMask> blockMasks(Handle handle, Count count, Query query) {
  std::vector<KernelBlockMask> out;
  for (size_t i = 0; i < count(handle); ++i) {
    const char *n = nullptr;
    KernelBlockMask m{};
    check(query(handle, i, &n, &m.block_rows, &m.block_cols, &m.first_param));
    m.name = n;
    out.push_back(std::move(m));
  }
  return out;
}
} // namespace detail

/// A `const` parameter of a kernel and the value it was compiled with.
struct KernelConst {
  std::string name;
  std::variant<int64_t, double, bool> value;
};

/// What a loaded kernel is, without owning it: its signature, its consts and its launch
/// shape. A grid function of the JIT (kiln::JitKernel::launch) receives one for the
/// config it sizes the grid for.
class KernelInfo {
public:
  explicit KernelInfo(const kiln_kernel *handle) : h_(handle) {}

  std::string name() const { return kiln_kernel_name(h_); }
  std::vector<KernelParam> params() const {
    std::vector<KernelParam> out;
    for (size_t i = 0; i < kiln_kernel_num_params(h_); ++i) {
      const char *n = nullptr;
      kiln_dtype d = KILN_DTYPE_NONE;
      int ptr = 0;
      detail::check(kiln_kernel_param(h_, i, &n, &d, &ptr));
      out.push_back(KernelParam{n, d, ptr != 0});
    }
    return out;
  }
  /// The block_mask parameters; params() lists each as its five runtime parameters.
  std::vector<KernelBlockMask> block_masks() const {
    return detail::blockMasks(h_, kiln_kernel_num_block_masks, kiln_kernel_block_mask);
  }
  std::vector<KernelConst> consts() const {
    std::vector<KernelConst> out;
    for (size_t i = 0; i < kiln_kernel_num_consts(h_); ++i) {
      const char *n = nullptr;
      kiln_arg v{};
      detail::check(kiln_kernel_const(h_, i, &n, &v));
      if (v.kind == KILN_ARG_INT)
        out.push_back(KernelConst{n, v.value.i});
      else if (v.kind == KILN_ARG_FLOAT)
        out.push_back(KernelConst{n, v.value.f});
      else
        out.push_back(KernelConst{n, v.value.b != 0});
    }
    return out;
  }
  /// The integer const `name` (`const BLOCK: i32`). Throws RuntimeError naming the
  /// kernel and the const when there is no such const or it is not an integer.
  int64_t const_int(const std::string &name) const {
    int64_t v = 0;
    detail::check(kiln_kernel_const_int(h_, name.c_str(), &v));
    return v;
  }
  uint32_t block_size() const { return kiln_kernel_block_size(h_); }
  uint32_t shared_bytes() const { return kiln_kernel_shared_bytes(h_); }
  /// Programs the device runs at once (occupancy times multiprocessors).
  uint32_t resident_programs() const {
    uint32_t n = 0;
    detail::check(kiln_kernel_resident_programs(h_, &n));
    return n;
  }
  const kiln_kernel *handle() const { return h_; }

private:
  const kiln_kernel *h_;
};

/// A loaded kernel: its signature and launch.
class Kernel {
public:
  using Param = KernelParam;

  Kernel() = default;
  explicit Kernel(kiln_kernel *handle) : h_(handle) {}
  ~Kernel() { kiln_kernel_destroy(h_); }
  Kernel(Kernel &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Kernel &operator=(Kernel &&o) noexcept {
    if (this != &o) {
      kiln_kernel_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;

  /// Launches `grid` programs; `args` follow the kernel's parameters in order. Pointer
  /// parameters take Buffers (or BufferViews), scalar ones C++ scalars whose value the
  /// parameter's dtype holds exactly, a block_mask parameter a BlockMask (or its five
  /// parts). A mismatch throws, naming the parameter.
  template <typename... Args> void launch(Grid grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    launch_args(grid, a);
  }
  /// The same with arguments built at run time.
  void launch_args(Grid grid, std::span<const kiln_arg> args) {
    detail::check(kiln_launch(h_, kiln_grid{grid.x, grid.y, grid.z}, args.data(), args.size()));
  }
  /// launch on `stream` (CUDA: a CUstream; nullptr: the runtime's own) for this launch.
  template <typename... Args> void launch_on(void *stream, Grid grid, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    detail::check(kiln_launch_on_stream(h_, kiln_grid{grid.x, grid.y, grid.z}, a.data(), a.size(), stream));
  }

  kiln_kernel *handle() const { return h_; }
  KernelInfo info() const { return KernelInfo(h_); }
  std::string name() const { return info().name(); }
  std::vector<Param> params() const { return info().params(); }
  std::vector<KernelBlockMask> block_masks() const { return info().block_masks(); }
  std::vector<KernelConst> consts() const { return info().consts(); }
  int64_t const_int(const std::string &name) const { return info().const_int(name); }
  uint32_t block_size() const { return info().block_size(); }
  uint32_t shared_bytes() const { return info().shared_bytes(); }
  std::string jit_log() const { return kiln_kernel_jit_log(h_); }

private:
  kiln_kernel *h_ = nullptr;
};

/// A device timestamp for measuring kernels.
class Event {
public:
  Event() = default;
  explicit Event(kiln_event *handle) : h_(handle) {}
  ~Event() { kiln_event_destroy(h_); }
  Event(Event &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Event &operator=(Event &&o) noexcept {
    if (this != &o) {
      kiln_event_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  void record() { detail::check(kiln_event_record(h_)); }
  void synchronize() { detail::check(kiln_event_synchronize(h_)); }
  /// Device milliseconds from `start` to `end`, both recorded.
  static float elapsed_ms(const Event &start, const Event &end) {
    float ms = 0;
    detail::check(kiln_event_elapsed_ms(start.h_, end.h_, &ms));
    return ms;
  }
  kiln_event *handle() const { return h_; }

private:
  kiln_event *h_ = nullptr;
};

/// Launches recorded once (Runtime::begin_recording / end_recording) and replayed with
/// one call: a CUDA graph.
class Recording {
public:
  Recording() = default;
  explicit Recording(kiln_recording *handle) : h_(handle) {}
  ~Recording() { kiln_recording_destroy(h_); }
  Recording(Recording &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Recording &operator=(Recording &&o) noexcept {
    if (this != &o) {
      kiln_recording_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Recording(const Recording &) = delete;
  Recording &operator=(const Recording &) = delete;

  void replay() { detail::check(kiln_recording_replay(h_)); }
  kiln_recording *handle() const { return h_; }

private:
  kiln_recording *h_ = nullptr;
};

/// How a graph's launches run (kiln_graph_mode).
enum class GraphMode {
  Auto = KILN_GRAPH_MODE_AUTO,
  Persistent = KILN_GRAPH_MODE_PERSISTENT,
  CudaGraph = KILN_GRAPH_MODE_CUDA_GRAPH,
  Launches = KILN_GRAPH_MODE_LAUNCHES
};

/// What the last run of a graph was.
struct GraphRunInfo {
  GraphMode mode = GraphMode::Auto;
  uint32_t launches = 0;
  uint64_t tasks = 0;
  uint32_t workers = 0; ///< the persistent mode's
};

/// A graph bundle (.kgraph) loaded for one runtime: launched with one call on the
/// graph's own arguments (docs/graphs.md).
class Graph {
public:
  Graph() = default;
  explicit Graph(kiln_graph *handle) : h_(handle) {}
  ~Graph() { kiln_graph_destroy(h_); }
  Graph(Graph &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Graph &operator=(Graph &&o) noexcept {
    if (this != &o) {
      kiln_graph_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  /// Enqueues one run; `args` follow the graph's parameters as a kernel's launch would.
  template <typename... Args> void launch(GraphMode mode, const Args &...args) {
    std::array<kiln_arg, sizeof...(Args)> a{detail::toArg(args)...};
    launch_args(a, mode);
  }
  void launch_args(std::span<const kiln_arg> args, GraphMode mode = GraphMode::Auto) {
    detail::check(kiln_graph_launch(h_, args.data(), args.size(), static_cast<kiln_graph_mode>(mode)));
  }
  /// After Runtime::synchronize: throws when the last persistent run stopped on its
  /// watchdog, naming the task and the launch it waited for.
  void check() { detail::check(kiln_graph_check(h_)); }

  void set_workers(uint32_t workers) { detail::check(kiln_graph_set_workers(h_, workers)); }
  void set_wait_timeout_ns(uint64_t ns) { detail::check(kiln_graph_set_wait_timeout(h_, ns)); }
  void set_trace(bool enabled) { detail::check(kiln_graph_set_trace(h_, enabled ? 1 : 0)); }
  /// The last persistent run's trace (kiln_graph_trace): 4 words per task.
  std::vector<uint64_t> trace() {
    size_t n = 0;
    detail::check(kiln_graph_trace(h_, nullptr, 0, &n));
    std::vector<uint64_t> words(n);
    detail::check(kiln_graph_trace(h_, words.data(), words.size(), nullptr));
    return words;
  }
  GraphRunInfo last_run() const {
    GraphRunInfo info;
    kiln_graph_mode mode = KILN_GRAPH_MODE_AUTO;
    detail::check(kiln_graph_last_run(h_, &mode, &info.launches, &info.tasks, &info.workers));
    info.mode = static_cast<GraphMode>(mode);
    return info;
  }

  std::string name() const { return kiln_graph_name(h_); }
  bool has_persistent() const { return kiln_graph_has_persistent(h_) != 0; }
  std::vector<KernelParam> params() const {
    std::vector<KernelParam> out;
    for (size_t i = 0; i < kiln_graph_num_params(h_); ++i) {
      const char *name = nullptr;
      kiln_dtype dtype = KILN_DTYPE_NONE;
      int pointer = 0;
      detail::check(kiln_graph_param(h_, i, &name, &dtype, &pointer));
      out.push_back(KernelParam{name, dtype, pointer != 0});
    }
    return out;
  }
  /// The block_mask parameters; params() lists each as its five runtime parameters.
  std::vector<KernelBlockMask> block_masks() const {
    return detail::blockMasks(h_, kiln_graph_num_block_masks, kiln_graph_block_mask);
  }
  kiln_graph *handle() const { return h_; }

private:
  kiln_graph *h_ = nullptr;
};

class Runtime {
public:
  struct Options {
    Backend backend = Backend::Auto;
    int device = 0;
  };

  Runtime() : Runtime(Options{}) {}
  explicit Runtime(Options options) {
    kiln_runtime_options o{static_cast<kiln_backend>(options.backend), options.device};
    detail::check(kiln_runtime_create(&o, &h_));
  }
  ~Runtime() { kiln_runtime_destroy(h_); }
  Runtime(Runtime &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Runtime &operator=(Runtime &&o) noexcept {
    if (this != &o) {
      kiln_runtime_destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;

  Backend backend() const { return static_cast<Backend>(kiln_runtime_backend(h_)); }
  std::string device_name() const { return kiln_runtime_device_name(h_); }
  /// "sm_90", "spirv64", ...
  std::string target() const { return kiln_runtime_target(h_); }
  /// CUDA: later launches go on `stream` (a CUstream); nullptr: the runtime's own
  /// (kiln_runtime_set_stream).
  void set_stream(void *stream) { detail::check(kiln_runtime_set_stream(h_, stream)); }
  kiln_runtime *handle() const { return h_; }

  Kernel load_bundle(const std::string &path) {
    kiln_kernel *k = nullptr;
    detail::check(kiln_kernel_load_file(h_, path.c_str(), &k));
    return Kernel(k);
  }
  Kernel load_bundle_bytes(std::span<const uint8_t> bytes) {
    kiln_kernel *k = nullptr;
    detail::check(kiln_kernel_load_memory(h_, bytes.data(), bytes.size(), &k));
    return Kernel(k);
  }

  Graph load_graph(const std::string &path) {
    kiln_graph *g = nullptr;
    detail::check(kiln_graph_load_file(h_, path.c_str(), &g));
    return Graph(g);
  }
  Graph load_graph_bytes(std::span<const uint8_t> bytes) {
    kiln_graph *g = nullptr;
    detail::check(kiln_graph_load_memory(h_, bytes.data(), bytes.size(), &g));
    return Graph(g);
  }

  /// `bytes` of untyped device memory, or memory holding `element`s.
  Buffer alloc(size_t bytes, kiln_dtype element = KILN_DTYPE_NONE) {
    kiln_buffer *b = nullptr;
    detail::check(kiln_buffer_alloc(h_, bytes, element, &b));
    return Buffer(b);
  }
  /// A buffer over device memory the caller owns (kiln_buffer_wrap): `bytes` from
  /// `device_address`, checked with the driver to lie in one allocation of this device.
  Buffer wrap(uint64_t device_address, size_t bytes, kiln_dtype element = KILN_DTYPE_NONE) {
    kiln_buffer *b = nullptr;
    detail::check(kiln_buffer_wrap(h_, device_address, bytes, element, &b));
    return Buffer(b);
  }
  /// `count` elements of T at `device_address`, typed when T is a Kiln dtype.
  template <typename T> Buffer wrap(uint64_t device_address, size_t count) {
    if (count > SIZE_MAX / sizeof(T))
      throw RuntimeError(KILN_ERROR_INVALID_VALUE, "wrap: element count too large");
    return wrap(device_address, count * sizeof(T), detail::dtypeOf<T>());
  }
  /// `count` elements of T; the buffer is typed when T is a Kiln dtype.
  template <typename T> Buffer alloc(size_t count) {
    if (count > SIZE_MAX / sizeof(T))
      throw RuntimeError(KILN_ERROR_INVALID_VALUE, "alloc: element count too large");
    return alloc(count * sizeof(T), detail::dtypeOf<T>());
  }
  /// A typed buffer holding a copy of `data`.
  template <typename T> Buffer upload(std::span<const T> data) {
    Buffer b = alloc<T>(data.size());
    b.upload(data);
    return b;
  }
  template <typename T> Buffer upload(const std::vector<T> &data) { return upload(std::span<const T>(data)); }

  /// A block mask from a dense row-major [rows, cols] array of element flags (nonzero =
  /// kept), cut into block_rows x block_cols blocks and uploaded. Throws RuntimeError
  /// (KILN_ERROR_INVALID_VALUE) saying what is wrong with the input.
  BlockMask block_mask_from_dense(std::span<const uint8_t> kept, int64_t rows, int64_t cols, int64_t block_rows,
                                  int64_t block_cols) {
    // The C API reads rows * cols flags, so the span must hold that many.
    if (rows > 0 && cols > 0 && rows <= (int64_t(1) << 30) && cols <= (int64_t(1) << 30) &&
        kept.size() != uint64_t(rows * cols))
      throw RuntimeError(KILN_ERROR_INVALID_VALUE, "block_mask_from_dense: the dense mask has " +
                                                       std::to_string(kept.size()) + " elements; a " +
                                                       std::to_string(rows) + " x " + std::to_string(cols) +
                                                       " grid needs " + std::to_string(rows * cols));
    kiln_block_mask *m = nullptr;
    detail::check(kiln_block_mask_from_dense(h_, kept.data(), rows, cols, block_rows, block_cols, &m));
    return BlockMask(m);
  }
  /// The same from flags held as bools.
  BlockMask block_mask_from_dense(std::span<const bool> kept, int64_t rows, int64_t cols, int64_t block_rows,
                                  int64_t block_cols) {
    static_assert(sizeof(bool) == 1, "a bool flag is one byte");
    return block_mask_from_dense(std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(kept.data()), kept.size()),
                                 rows, cols, block_rows, block_cols);
  }
  /// A block mask from BSR arrays (kiln_block_mask_from_bsr): `row_ptr` of
  /// ceil(rows / block_rows) + 1 offsets, `col_indices` ascending within each block row,
  /// and `block_data` of col_indices.size() row-major block_rows x block_cols flag arrays,
  /// or nullopt to keep every listed block whole.
  BlockMask block_mask_from_bsr(std::span<const int64_t> row_ptr, std::span<const int64_t> col_indices,
                                std::optional<std::span<const uint8_t>> block_data, int64_t rows, int64_t cols,
                                int64_t block_rows, int64_t block_cols) {
    // The C API reads col_indices.size() blocks of data, so the span must hold exactly
    // those (checked where the block sizes are valid; the C API names invalid ones).
    auto validBlock = [](int64_t b) { return b >= 1 && b <= 256 && (b & (b - 1)) == 0; };
    if (block_data && validBlock(block_rows) && validBlock(block_cols)) {
      const uint64_t perBlock = uint64_t(block_rows * block_cols);
      if (block_data->size() % perBlock != 0 || block_data->size() / perBlock != col_indices.size())
        throw RuntimeError(KILN_ERROR_INVALID_VALUE,
                           "block_mask_from_bsr: block_data has " + std::to_string(block_data->size()) +
                               " elements; " + std::to_string(col_indices.size()) + " blocks of " +
                               std::to_string(block_rows) + " x " + std::to_string(block_cols) + " need " +
                               std::to_string(col_indices.size() * perBlock));
    }
    kiln_block_mask *m = nullptr;
    detail::check(kiln_block_mask_from_bsr(h_, row_ptr.data(), row_ptr.size(), col_indices.data(), col_indices.size(),
                                           block_data ? block_data->data() : nullptr, rows, cols, block_rows,
                                           block_cols, &m));
    return BlockMask(m);
  }

  /// A block mask from its three arrays built on the device, by the passes of
  /// stdlib/block_masks.kiln (kiln_block_mask_from_buffers): the block level is read back
  /// and checked, and the mask keeps copies of the arrays.
  BlockMask block_mask_from_buffers(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols,
                                    const Buffer &row_start, const Buffer &blocks, const Buffer &bitmaps) {
    kiln_block_mask *m = nullptr;
    detail::check(kiln_block_mask_from_buffers(h_, rows, cols, block_rows, block_cols, row_start.handle(),
                                               blocks.handle(), bitmaps.handle(), &m));
    return BlockMask(m);
  }

  /// Waits for all launches and copies issued so far.
  void synchronize() { detail::check(kiln_runtime_synchronize(h_)); }

  Event create_event() {
    kiln_event *e = nullptr;
    detail::check(kiln_event_create(h_, &e));
    return Event(e);
  }
  /// Until end_recording, launches are recorded instead of run (CUDA only).
  void begin_recording() { detail::check(kiln_runtime_begin_recording(h_)); }
  Recording end_recording() {
    kiln_recording *r = nullptr;
    detail::check(kiln_runtime_end_recording(h_, &r));
    return Recording(r);
  }

private:
  kiln_runtime *h_ = nullptr;
};

} // namespace kiln
