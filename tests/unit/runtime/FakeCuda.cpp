//===- FakeCuda.cpp - A stand-in CUDA driver library for runtime tests ----===//
//
// Built as a shared library that exports the driver entry points the runtime resolves
// (with the same versioned names, since it includes the same cuda.h), so the tests can
// point KILN_CUDA_LIBRARY at it and drive the whole CUDA backend on a machine without a
// GPU. "Device memory" is host memory; a launch runs nothing but is recorded (grid,
// block, shared memory, the bytes of every parameter, sized from the PTX entry's
// `.param` list; the grid and block of every launch since the reset) so tests can check
// exactly what the backend handed to the driver.
// A launch takes fake device time that tests can set per kernel (fake_cuda_set_launch_ms,
// matched on the PTX text), and it can leave a mark in the memory its pointer arguments
// point at (fake_cuda_mark_memory), so that tests of the autotuner see which config was
// fastest and whether the timing runs changed the caller's data.
//
// The fake behaves like the real driver where the backend depends on it: unknown
// pointers and handles are errors, copies must stay inside one allocation, dynamic
// shared memory above 48 KiB needs the function attribute, the JIT fills the log
// buffers it is given. Tests steer it through the fake_cuda_* functions below.
//
//===----------------------------------------------------------------------===//
#include <cuda.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

struct CUctx_st {
  int dummy;
};
struct CUmod_st {
  std::string ptx;
};
struct CUfunc_st {
  std::string name;
  std::vector<size_t> paramSizes;
  int maxDynamicShared = 48 * 1024;
};
struct CUstream_st {
  int dummy;
};
struct CUevent_st {
  double timeMs = -1; ///< fake device time when recorded
};
/// A captured stream: the fake device time of each launch it holds.
struct CUgraph_st {
  std::vector<double> launchMs;
};
struct CUgraphExec_st {
  std::vector<double> launchMs;
};

namespace {

struct LastLaunch {
  std::string function;
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned sharedBytes = 0;
  CUstream stream = nullptr;
  std::vector<std::vector<unsigned char>> params;
};

struct LaunchShape {
  unsigned grid[3];
  unsigned block[3];
};

struct State {
  bool initialized = false;
  int deviceCount = 1;
  int ccMajor = 9, ccMinor = 0;
  std::string name = "Fake H200";
  int maxThreadsPerFunction = 1024;
  std::map<std::string, CUresult> failNext; ///< entry point -> result of its next call
  std::map<CUdeviceptr, std::vector<unsigned char>> memory;
  /// With fake_cuda_pack_allocations: allocations carved back to back out of `arena`,
  /// as the real driver places large ones, so that one buffer ends where the next begins.
  bool packAllocations = false;
  std::vector<unsigned char> arena;
  size_t arenaUsed = 0;
  std::map<CUdeviceptr, size_t> packed;
  std::set<CUmod_st *> modules;
  std::map<CUfunc_st *, CUmod_st *> functions;
  std::set<CUstream_st *> streams;
  std::set<CUevent_st *> events;
  int contextRefs = 0;
  double nowMs = 0;
  int launches = 0;
  int streamQueries = 0;
  CUstream_st *capturing = nullptr;   ///< the stream being captured, if any
  std::vector<double> captured;       ///< its launches so far
  std::set<CUgraph_st *> graphs;
  std::set<CUgraphExec_st *> execs;
  LastLaunch last;
  std::vector<LaunchShape> shapes; ///< every launch's grid and block, in order
  /// (text in the PTX, milliseconds): a launch of a kernel whose module's PTX contains
  /// the text takes that long; the first match counts, else 0.25 ms.
  std::vector<std::pair<std::string, double>> launchMs;
  bool markMemory = false; ///< each launch adds 1 to the u32 each pointer argument points at
};

std::mutex mutex;
State state;
CUctx_st theContext;

// Returns a pending injected failure for `fn`, consuming it.
CUresult injected(const char *fn) {
  auto it = state.failNext.find(fn);
  if (it == state.failNext.end())
    return CUDA_SUCCESS;
  CUresult r = it->second;
  state.failNext.erase(it);
  return r;
}

// The allocation holding [p, p + n), or nullptr.
unsigned char *deviceRange(CUdeviceptr p, size_t n) {
  if (auto pk = state.packed.upper_bound(p); pk != state.packed.begin()) {
    --pk;
    if (p - pk->first < pk->second && n <= pk->second - (p - pk->first))
      return reinterpret_cast<unsigned char *>(p);
  }
  auto it = state.memory.upper_bound(p);
  if (it == state.memory.begin())
    return nullptr;
  --it;
  CUdeviceptr base = it->first;
  if (p - base > it->second.size() || n > it->second.size() - (p - base))
    return nullptr;
  return it->second.data() + (p - base);
}

// Sizes of the parameters of `.entry name(...)` in the PTX, from their `.param .<type>`.
bool entryParams(const std::string &ptx, const std::string &name, std::vector<size_t> &sizes) {
  size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos)
    return false;
  size_t open = ptx.find('(', at), close = ptx.find(')', open);
  std::string list = ptx.substr(open + 1, close - open - 1);
  size_t pos = 0;
  while ((pos = list.find(".param", pos)) != std::string::npos) {
    pos += 6;
    size_t dot = list.find('.', pos);
    size_t bits = 0;
    size_t i = dot + 2; // skip ".u" / ".s" / ".f" / ".b"
    while (i < list.size() && list[i] >= '0' && list[i] <= '9')
      bits = bits * 10 + static_cast<size_t>(list[i++] - '0');
    sizes.push_back(bits / 8);
  }
  return true;
}

void writeLog(char *buffer, size_t size, const std::string &text) {
  if (!buffer || size == 0)
    return;
  size_t n = std::min(size - 1, text.size());
  std::memcpy(buffer, text.data(), n);
  buffer[n] = '\0';
}

} // namespace

#define FAKE_ENTER(name)                                                                                               \
  std::lock_guard<std::mutex> lock(mutex);                                                                             \
  if (CUresult injectedResult = injected(name))                                                                        \
    return injectedResult;

extern "C" {

// ---- test controls -----------------------------------------------------------------------

void fake_cuda_reset() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto *m : state.modules)
    delete m;
  for (auto &f : state.functions)
    delete f.first;
  for (auto *s : state.streams)
    delete s;
  for (auto *e : state.events)
    delete e;
  state = State();
}

void fake_cuda_configure(int deviceCount, int ccMajor, int ccMinor, int maxThreadsPerFunction) {
  std::lock_guard<std::mutex> lock(mutex);
  state.deviceCount = deviceCount;
  state.ccMajor = ccMajor;
  state.ccMinor = ccMinor;
  state.maxThreadsPerFunction = maxThreadsPerFunction;
}

void fake_cuda_fail_next(const char *entryPoint, int result) {
  std::lock_guard<std::mutex> lock(mutex);
  state.failNext[entryPoint] = static_cast<CUresult>(result);
}

int fake_cuda_launch_count() {
  std::lock_guard<std::mutex> lock(mutex);
  return state.launches;
}

/// Copies the last launch's shape out; returns 0 when nothing was launched.
int fake_cuda_last_launch(unsigned grid[3], unsigned block[3], unsigned *sharedBytes, char *function, size_t size) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!state.launches)
    return 0;
  std::memcpy(grid, state.last.grid, sizeof state.last.grid);
  std::memcpy(block, state.last.block, sizeof state.last.block);
  *sharedBytes = state.last.sharedBytes;
  writeLog(function, size, state.last.function);
  return 1;
}

/// Copies the grid and block of launch `index` (0: the first since the reset) out;
/// returns 0 when there was no such launch.
int fake_cuda_launch_shape(int index, unsigned grid[3], unsigned block[3]) {
  std::lock_guard<std::mutex> lock(mutex);
  if (index < 0 || static_cast<size_t>(index) >= state.shapes.size())
    return 0;
  std::memcpy(grid, state.shapes[index].grid, sizeof state.shapes[index].grid);
  std::memcpy(block, state.shapes[index].block, sizeof state.shapes[index].block);
  return 1;
}

/// How many times a stream's capture status was asked for (how the runtime checks a
/// caller's stream) since the reset.
int fake_cuda_stream_queries() {
  std::lock_guard<std::mutex> lock(mutex);
  return state.streamQueries;
}

/// The stream of the last launch.
void *fake_cuda_last_stream() {
  std::lock_guard<std::mutex> lock(mutex);
  return state.last.stream;
}

/// A stream as a caller would make one (for kiln_runtime_set_stream's tests).
void *fake_cuda_make_stream() {
  std::lock_guard<std::mutex> lock(mutex);
  auto *s = new CUstream_st{};
  state.streams.insert(s);
  return s;
}

void fake_cuda_drop_stream(void *s) {
  std::lock_guard<std::mutex> lock(mutex);
  if (state.streams.erase(static_cast<CUstream>(s)))
    delete static_cast<CUstream>(s);
}

/// Copies parameter `index` of the last launch into `out`; returns its size (0: none).
size_t fake_cuda_last_param(size_t index, void *out, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex);
  if (index >= state.last.params.size())
    return 0;
  const auto &p = state.last.params[index];
  std::memcpy(out, p.data(), std::min(capacity, p.size()));
  return p.size();
}

void fake_cuda_set_launch_ms(const char *ptxText, double ms) {
  std::lock_guard<std::mutex> lock(mutex);
  state.launchMs.emplace_back(ptxText, ms);
}

void fake_cuda_pack_allocations(int on) {
  std::lock_guard<std::mutex> lock(mutex);
  state.packAllocations = on != 0;
  if (on && state.arena.empty())
    state.arena.assign(16u << 20, 0xcd);
}

void fake_cuda_mark_memory(int on) {
  std::lock_guard<std::mutex> lock(mutex);
  state.markMemory = on != 0;
}

/// Live objects, to check that the runtime releases everything it creates.
int fake_cuda_live(const char *what) {
  std::lock_guard<std::mutex> lock(mutex);
  std::string w = what;
  if (w == "memory")
    return static_cast<int>(state.memory.size() + state.packed.size());
  if (w == "modules")
    return static_cast<int>(state.modules.size());
  if (w == "streams")
    return static_cast<int>(state.streams.size());
  if (w == "events")
    return static_cast<int>(state.events.size());
  if (w == "contexts")
    return state.contextRefs;
  return -1;
}

// ---- driver entry points -----------------------------------------------------------------

CUresult CUDAAPI cuInit(unsigned int) {
  FAKE_ENTER("cuInit");
  state.initialized = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *v) {
  FAKE_ENTER("cuDriverGetVersion");
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **str) {
  switch (error) {
  case CUDA_SUCCESS: *str = "CUDA_SUCCESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE: *str = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY: *str = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_INITIALIZED: *str = "CUDA_ERROR_NOT_INITIALIZED"; return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE: *str = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX: *str = "CUDA_ERROR_INVALID_PTX"; return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND: *str = "CUDA_ERROR_NOT_FOUND"; return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *str = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_HANDLE: *str = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: *str = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; return CUDA_SUCCESS;
  default: *str = nullptr; return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **str) {
  *str = error == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered" : "fake driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  if (!state.initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  *count = state.deviceCount;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= state.deviceCount)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice) {
  FAKE_ENTER("cuDeviceGetName");
  writeLog(name, static_cast<size_t>(len), state.name);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice) {
  FAKE_ENTER("cuDeviceGetAttribute");
  switch (attr) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = state.ccMajor; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = state.ccMinor; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 * 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *value = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *value = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *value = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  ++state.contextRefs;
  *ctx = &theContext;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease");
  if (state.contextRefs == 0)
    return CUDA_ERROR_INVALID_CONTEXT;
  --state.contextRefs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  FAKE_ENTER("cuCtxSetCurrent");
  return ctx == &theContext && state.contextRefs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  FAKE_ENTER("cuCtxSynchronize");
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                                    void **values) {
  FAKE_ENTER("cuModuleLoadDataEx");
  char *errorLog = nullptr, *infoLog = nullptr;
  size_t errorSize = 0, infoSize = 0;
  for (unsigned i = 0; i < numOptions; ++i) {
    switch (options[i]) {
    case CU_JIT_ERROR_LOG_BUFFER: errorLog = static_cast<char *>(values[i]); break;
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: errorSize = reinterpret_cast<uintptr_t>(values[i]); break;
    case CU_JIT_INFO_LOG_BUFFER: infoLog = static_cast<char *>(values[i]); break;
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: infoSize = reinterpret_cast<uintptr_t>(values[i]); break;
    default: break;
    }
  }
  std::string ptx = static_cast<const char *>(image);
  // The marker plays the part of a PTX error; the log names its line like ptxas does.
  size_t bad = ptx.find("FAKE_JIT_ERROR");
  if (bad != std::string::npos) {
    size_t line = 1;
    for (size_t i = 0; i < bad; ++i)
      line += ptx[i] == '\n';
    writeLog(errorLog, errorSize,
             "ptxas application ptx input, line " + std::to_string(line) +
                 "; error   : Unknown symbol 'FAKE_JIT_ERROR'\nptxas fatal   : Ptx assembly aborted due to errors\n");
    return CUDA_ERROR_INVALID_PTX;
  }
  writeLog(infoLog, infoSize, "ptxas info    : Used 8 registers (fake)");
  auto *m = new CUmod_st{ptx};
  state.modules.insert(m);
  *module = m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  if (!state.modules.count(module))
    return CUDA_ERROR_INVALID_HANDLE;
  auto f = std::make_unique<CUfunc_st>();
  f->name = name;
  if (!entryParams(module->ptx, name, f->paramSizes))
    return CUDA_ERROR_NOT_FOUND;
  *function = f.get();
  state.functions[f.release()] = module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  FAKE_ENTER("cuModuleUnload");
  if (!state.modules.erase(module))
    return CUDA_ERROR_INVALID_HANDLE;
  for (auto it = state.functions.begin(); it != state.functions.end();)
    if (it->second == module) {
      delete it->first;
      it = state.functions.erase(it);
    } else {
      ++it;
    }
  delete module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction f) {
  FAKE_ENTER("cuFuncGetAttribute");
  if (!state.functions.count(f))
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    return CUDA_ERROR_INVALID_VALUE;
  *value = state.maxThreadsPerFunction;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (!state.functions.count(f))
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value > 227 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  f->maxDynamicShared = value;
  return CUDA_SUCCESS;
}

/// Two programs per multiprocessor whatever the kernel: enough to test the arithmetic.
CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction f, int blockSize, size_t) {
  FAKE_ENTER("cuOccupancyMaxActiveBlocksPerMultiprocessor");
  if (!state.functions.count(f))
    return CUDA_ERROR_INVALID_HANDLE;
  if (blockSize <= 0 || blockSize > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  *blocks = 2;
  return CUDA_SUCCESS;
}

// A stream made here or by a caller, or one of the driver's two special handles for the
// default streams (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD), which torch passes as 0 and
// Kiln's Python package turns into CU_STREAM_LEGACY.
static bool knownStream(CUstream stream) {
  return stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD || state.streams.count(stream);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  if (!state.functions.count(f) || (stream && !knownStream(stream)))
    return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024 || bx * by * bz == 0 || extra)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared > static_cast<unsigned>(f->maxDynamicShared))
    return CUDA_ERROR_INVALID_VALUE;
  if (!f->paramSizes.empty() && !params)
    return CUDA_ERROR_INVALID_VALUE;
  LastLaunch l;
  l.function = f->name;
  l.stream = stream;
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  std::memcpy(l.grid, g, sizeof g);
  std::memcpy(l.block, b, sizeof b);
  l.sharedBytes = shared;
  for (size_t i = 0; i < f->paramSizes.size(); ++i) {
    auto *p = static_cast<unsigned char *>(params[i]);
    l.params.emplace_back(p, p + f->paramSizes[i]);
  }
  if (state.markMemory)
    for (const auto &p : l.params) {
      CUdeviceptr address = 0;
      if (p.size() != sizeof address)
        continue;
      std::memcpy(&address, p.data(), sizeof address);
      if (unsigned char *d = deviceRange(address, 4)) {
        uint32_t counter;
        std::memcpy(&counter, d, 4);
        ++counter;
        std::memcpy(d, &counter, 4);
      }
    }
  state.shapes.push_back(LaunchShape{{gx, gy, gz}, {bx, by, bz}});
  state.last = std::move(l);
  ++state.launches;
  double ms = 0.25; // by default a launch takes a quarter millisecond of fake device time
  const std::string &ptx = state.functions[f]->ptx;
  for (const auto &[text, cost] : state.launchMs)
    if (ptx.find(text) != std::string::npos) {
      ms = cost;
      break;
    }
  // A launch on a capturing stream is recorded, not run: no device time passes.
  if (stream && stream == state.capturing)
    state.captured.push_back(ms);
  else
    state.nowMs += ms;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode) {
  FAKE_ENTER("cuStreamBeginCapture");
  if (!stream || !state.streams.count(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (state.capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  state.capturing = stream;
  state.captured.clear();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  FAKE_ENTER("cuStreamEndCapture");
  if (!stream || stream != state.capturing)
    return CUDA_ERROR_ILLEGAL_STATE;
  auto *g = new CUgraph_st{state.captured};
  state.graphs.insert(g);
  state.capturing = nullptr;
  state.captured.clear();
  *graph = g;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *exec, CUgraph graph, unsigned long long) {
  FAKE_ENTER("cuGraphInstantiate");
  if (!state.graphs.count(graph))
    return CUDA_ERROR_INVALID_HANDLE;
  auto *e = new CUgraphExec_st{graph->launchMs};
  state.execs.insert(e);
  *exec = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  FAKE_ENTER("cuGraphLaunch");
  if (!state.execs.count(exec) || (stream && !knownStream(stream)))
    return CUDA_ERROR_INVALID_HANDLE;
  for (double ms : exec->launchMs)
    state.nowMs += ms;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  FAKE_ENTER("cuGraphExecDestroy");
  if (!state.execs.erase(exec))
    return CUDA_ERROR_INVALID_HANDLE;
  delete exec;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  FAKE_ENTER("cuGraphDestroy");
  if (!state.graphs.erase(graph))
    return CUDA_ERROR_INVALID_HANDLE;
  delete graph;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  FAKE_ENTER("cuMemAlloc");
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (state.packAllocations) {
    if (bytes > state.arena.size() - state.arenaUsed)
      return CUDA_ERROR_OUT_OF_MEMORY;
    *p = reinterpret_cast<CUdeviceptr>(state.arena.data() + state.arenaUsed);
    state.packed.emplace(*p, bytes);
    state.arenaUsed += bytes;
    return CUDA_SUCCESS;
  }
  std::vector<unsigned char> block(bytes, 0xcd);
  CUdeviceptr address = reinterpret_cast<CUdeviceptr>(block.data());
  state.memory.emplace(address, std::move(block));
  *p = address;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  FAKE_ENTER("cuMemGetAddressRange");
  if (auto pk = state.packed.upper_bound(p); pk != state.packed.begin()) {
    --pk;
    if (p - pk->first < pk->second) {
      *base = pk->first;
      *size = pk->second;
      return CUDA_SUCCESS;
    }
  }
  auto it = state.memory.upper_bound(p);
  if (it == state.memory.begin())
    return CUDA_ERROR_NOT_FOUND;
  --it;
  if (p - it->first >= it->second.size())
    return CUDA_ERROR_NOT_FOUND;
  *base = it->first;
  *size = it->second.size();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  FAKE_ENTER("cuMemFree");
  return state.memory.erase(p) || state.packed.erase(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD");
  unsigned char *d = deviceRange(dst, bytes);
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(d, src, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH");
  unsigned char *s = deviceRange(src, bytes);
  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(dst, s, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoD");
  unsigned char *d = deviceRange(dst, bytes), *s = deviceRange(src, bytes);
  if (!d || !s)
    return CUDA_ERROR_INVALID_VALUE;
  std::memmove(d, s, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, size_t bytes) {
  FAKE_ENTER("cuMemsetD8");
  unsigned char *d = deviceRange(dst, bytes);
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(d, value, bytes);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int) {
  FAKE_ENTER("cuStreamCreate");
  auto *s = new CUstream_st{};
  state.streams.insert(s);
  *stream = s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream stream) {
  FAKE_ENTER("cuStreamQuery");
  return knownStream(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus *status) {
  FAKE_ENTER("cuStreamIsCapturing");
  ++state.streamQueries;
  if (!knownStream(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  *status = stream == state.capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  FAKE_ENTER("cuStreamSynchronize");
  return knownStream(stream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  FAKE_ENTER("cuStreamDestroy");
  if (!state.streams.erase(stream))
    return CUDA_ERROR_INVALID_HANDLE;
  delete stream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int) {
  FAKE_ENTER("cuEventCreate");
  auto *e = new CUevent_st{};
  state.events.insert(e);
  *event = e;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  FAKE_ENTER("cuEventRecord");
  if (!state.events.count(event) || (stream && !knownStream(stream)))
    return CUDA_ERROR_INVALID_HANDLE;
  event->timeMs = state.nowMs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  FAKE_ENTER("cuEventSynchronize");
  return state.events.count(event) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  FAKE_ENTER("cuEventElapsedTime");
  if (!state.events.count(start) || !state.events.count(end))
    return CUDA_ERROR_INVALID_HANDLE;
  if (start->timeMs < 0 || end->timeMs < 0)
    return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(end->timeMs - start->timeMs);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  FAKE_ENTER("cuEventDestroy");
  if (!state.events.erase(event))
    return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  return CUDA_SUCCESS;
}

} // extern "C"
