//===- OpenCLRunner.cpp - Running generated SPIR-V on an OpenCL CPU device ===//
//
// See OpenCLRunner.h for the route a module takes. The translator runs as a separate
// process: it is built on LLVM 15, which cannot share a process with the LLVM 22 the
// code generator links.
//
//===----------------------------------------------------------------------===//
#include "tests/spirv/OpenCLRunner.h"

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sys/wait.h>
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

extern char **environ;

namespace kiln::spirvtest {

//===--------------------------------------------------------------------===//
// SPIR-V rewriting
//===--------------------------------------------------------------------===//

namespace {
enum : uint32_t {
  OpTypeBool = 20,
  OpTypeInt = 21,
  OpTypeFloat = 22,
  OpConstantFalse = 42,
  OpConstant = 43,
  OpConstantNull = 46,
  OpControlBarrier = 224,
  OpMemoryBarrier = 225,
};
} // namespace

std::optional<std::vector<uint8_t>> rewriteScalarConstantNull(const std::vector<uint8_t> &spirv,
                                                              std::string &error) {
  if (spirv.size() % 4 != 0 || spirv.size() < 20) {
    error = "SPIR-V module size is not a whole number of words";
    return std::nullopt;
  }
  std::vector<uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  if (words[0] != 0x07230203u) {
    error = "not a little-endian SPIR-V module";
    return std::nullopt;
  }
  std::map<uint32_t, uint32_t> scalarBits; // type id -> width (0 for bool)
  // The scope operand of the module's first work-group barrier (the code generator puts
  // one before every fence), for the barriers that replace fences.
  std::optional<uint32_t> workgroupScope;
  for (size_t i = 5; i < words.size() && !workgroupScope;) {
    const uint32_t count = words[i] >> 16;
    if ((words[i] & 0xFFFF) == OpControlBarrier && count == 4 && i + count <= words.size())
      workgroupScope = words[i + 1];
    i += count ? count : words.size();
  }
  std::vector<uint32_t> out(words.begin(), words.begin() + 5);
  for (size_t i = 5; i < words.size();) {
    const uint32_t count = words[i] >> 16, opcode = words[i] & 0xFFFF;
    if (count == 0 || i + count > words.size()) {
      error = "malformed instruction at word " + std::to_string(i);
      return std::nullopt;
    }
    if ((opcode == OpTypeInt || opcode == OpTypeFloat) && count >= 3)
      scalarBits[words[i + 1]] = words[i + 2];
    else if (opcode == OpTypeBool && count >= 2)
      scalarBits[words[i + 1]] = 0;
    auto type = count == 3 && opcode == OpConstantNull ? scalarBits.find(words[i + 1])
                                                       : scalarBits.end();
    if (opcode == OpMemoryBarrier && count == 3) {
      if (!workgroupScope) {
        error = "an OpMemoryBarrier without a work-group barrier in the module";
        return std::nullopt;
      }
      out.insert(out.end(), {(4u << 16) | OpControlBarrier, *workgroupScope, *workgroupScope, words[i + 2]});
    } else if (type != scalarBits.end()) {
      const uint32_t resultType = words[i + 1], id = words[i + 2];
      if (type->second == 0) {
        out.insert(out.end(), {(3u << 16) | OpConstantFalse, resultType, id});
      } else if (type->second > 32) {
        out.insert(out.end(), {(5u << 16) | OpConstant, resultType, id, 0u, 0u});
      } else {
        out.insert(out.end(), {(4u << 16) | OpConstant, resultType, id, 0u});
      }
    } else {
      out.insert(out.end(), words.begin() + i, words.begin() + i + count);
    }
    i += count;
  }
  std::vector<uint8_t> bytes(out.size() * 4);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return bytes;
}

//===--------------------------------------------------------------------===//
// The translator
//===--------------------------------------------------------------------===//

static bool writeFile(const std::string &path, const std::vector<uint8_t> &data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(f);
}

static std::optional<std::vector<uint8_t>> readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return std::nullopt;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::optional<std::vector<uint8_t>> spirvToSpirBitcode(const std::vector<uint8_t> &spirv,
                                                       std::string &error) {
  auto fixed = rewriteScalarConstantNull(spirv, error);
  if (!fixed)
    return std::nullopt;
  char dirTemplate[] = "/tmp/kiln-spirv-XXXXXX";
  const char *dir = mkdtemp(dirTemplate);
  if (!dir) {
    error = "cannot create a temporary directory";
    return std::nullopt;
  }
  const std::string in = std::string(dir) + "/k.spv", out = std::string(dir) + "/k.bc";
  const std::string log = std::string(dir) + "/log.txt";
  std::optional<std::vector<uint8_t>> result;
  if (writeFile(in, *fixed)) {
    // posix_spawn with the output redirected: no shell involved.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
    std::vector<std::string> argv = {"llvm-spirv-15", "-r", in, "-o", out};
    std::vector<char *> cargv;
    for (auto &a : argv)
      cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_t pid;
    int rc = posix_spawnp(&pid, "llvm-spirv-15", &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    if (rc != 0) {
      error = "cannot run llvm-spirv-15: " + std::string(std::strerror(rc));
    } else if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      auto text = readFile(log);
      error = "llvm-spirv-15 -r failed: " + (text ? std::string(text->begin(), text->end()) : "");
    } else {
      result = readFile(out);
      if (!result)
        error = "llvm-spirv-15 wrote no output";
    }
  } else {
    error = "cannot write " + in;
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove(log.c_str());
  rmdir(dir);
  return result;
}

//===--------------------------------------------------------------------===//
// OpenCL
//===--------------------------------------------------------------------===//

namespace {
/// The guard after every buffer: its size and the byte it is filled with.
constexpr size_t kGuardBytes = 256;
constexpr std::byte kGuardByte{0xA5};
} // namespace

struct OpenCLDevice::Impl {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

std::unique_ptr<OpenCLDevice> OpenCLDevice::open(std::string &error) {
  std::unique_ptr<OpenCLDevice> d(new OpenCLDevice());
  d->impl_ = std::make_unique<Impl>();
  Impl &m = *d->impl_;
  cl_uint n = 0;
  if (clGetPlatformIDs(1, &m.platform, &n) != CL_SUCCESS || n == 0) {
    error = "no OpenCL platform";
    return nullptr;
  }
  if (clGetDeviceIDs(m.platform, CL_DEVICE_TYPE_ALL, 1, &m.device, &n) != CL_SUCCESS || n == 0) {
    error = "no OpenCL device";
    return nullptr;
  }
  cl_int err = CL_SUCCESS;
  m.context = clCreateContext(nullptr, 1, &m.device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) {
    error = "clCreateContext failed: " + std::to_string(err);
    return nullptr;
  }
  m.queue = clCreateCommandQueue(m.context, m.device, 0, &err);
  if (err != CL_SUCCESS) {
    error = "clCreateCommandQueue failed: " + std::to_string(err);
    return nullptr;
  }
  return d;
}

OpenCLDevice::~OpenCLDevice() {
  if (!impl_)
    return;
  if (impl_->queue)
    clReleaseCommandQueue(impl_->queue);
  if (impl_->context)
    clReleaseContext(impl_->context);
}

std::string OpenCLDevice::deviceName() const {
  char name[256] = {0};
  clGetDeviceInfo(impl_->device, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
  return name;
}

bool OpenCLDevice::run(const std::vector<uint8_t> &spirBitcode, const std::string &entry,
                       std::vector<DeviceArg> &args, std::array<int64_t, 3> grid,
                       int64_t numThreads, int64_t localBytes, std::string &error) {
  cl_int err = CL_SUCCESS, status = CL_SUCCESS;
  const size_t size = spirBitcode.size();
  const unsigned char *bin = spirBitcode.data();
  cl_program program = clCreateProgramWithBinary(impl_->context, 1, &impl_->device, &size, &bin, &status, &err);
  if (err != CL_SUCCESS) {
    error = "clCreateProgramWithBinary failed: " + std::to_string(err);
    return false;
  }
  return launch(program, "-x spir -spir-std=1.2", entry, args, grid, numThreads, localBytes, error);
}

bool OpenCLDevice::runSource(const std::string &source, const std::string &entry, std::vector<DeviceArg> &args,
                             std::array<int64_t, 3> grid, int64_t numThreads, std::string &error) {
  cl_int err = CL_SUCCESS;
  const char *text = source.c_str();
  const size_t size = source.size();
  cl_program program = clCreateProgramWithSource(impl_->context, 1, &text, &size, &err);
  if (err != CL_SUCCESS) {
    error = "clCreateProgramWithSource failed: " + std::to_string(err);
    return false;
  }
  // Correctly rounded division and square root, as the interpreter computes them.
  return launch(program, "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt", entry, args, grid, numThreads, 0,
                error);
}

bool OpenCLDevice::launch(void *builtProgram, const char *buildOptions, const std::string &entry,
                          std::vector<DeviceArg> &args, std::array<int64_t, 3> grid, int64_t numThreads,
                          int64_t localBytes, std::string &error) {
  Impl &m = *impl_;
  cl_int err = CL_SUCCESS;
  cl_program program = static_cast<cl_program>(builtProgram);
  struct Cleanup {
    std::vector<cl_mem> mems;
    cl_program program = nullptr;
    cl_kernel kernel = nullptr;
    ~Cleanup() {
      for (cl_mem b : mems)
        clReleaseMemObject(b);
      if (kernel)
        clReleaseKernel(kernel);
      if (program)
        clReleaseProgram(program);
    }
  } cleanup;
  cleanup.program = program;
  err = clBuildProgram(program, 1, &m.device, buildOptions, nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log(1 << 16, '\0');
    clGetProgramBuildInfo(program, m.device, CL_PROGRAM_BUILD_LOG, log.size() - 1, log.data(), nullptr);
    error = "clBuildProgram failed (" + std::to_string(err) + "): " + log.c_str();
    return false;
  }
  cl_kernel kernel = clCreateKernel(program, entry.c_str(), &err);
  if (err != CL_SUCCESS) {
    error = "clCreateKernel(" + entry + ") failed: " + std::to_string(err);
    return false;
  }
  cleanup.kernel = kernel;
  std::vector<cl_mem> &mems = cleanup.mems;
  for (size_t i = 0; i < args.size(); ++i) {
    DeviceArg &a = args[i];
    if (a.isBuffer) {
      // Every buffer is followed by a guard of known bytes, checked after the run, so a
      // store past the end fails the test instead of going unseen (or corrupting the
      // heap). Zero-sized buffers are not allowed: they get the guard alone.
      std::vector<std::byte> contents(*a.buffer);
      contents.resize(a.buffer->size() + kGuardBytes, kGuardByte);
      cl_mem mem = clCreateBuffer(m.context, CL_MEM_READ_WRITE, contents.size(), nullptr, &err);
      if (err != CL_SUCCESS) {
        error = "clCreateBuffer failed: " + std::to_string(err);
        return false;
      }
      mems.push_back(mem);
      clEnqueueWriteBuffer(m.queue, mem, CL_TRUE, 0, contents.size(), contents.data(), 0, nullptr, nullptr);
      err = clSetKernelArg(kernel, static_cast<cl_uint>(i), sizeof(cl_mem), &mem);
    } else {
      mems.push_back(nullptr);
      err = clSetKernelArg(kernel, static_cast<cl_uint>(i), a.scalar.size(), a.scalar.data());
    }
    if (err != CL_SUCCESS) {
      error = "clSetKernelArg(" + std::to_string(i) + ") failed: " + std::to_string(err);
      return false;
    }
  }
  if (localBytes > 0) {
    err = clSetKernelArg(kernel, static_cast<cl_uint>(args.size()), static_cast<size_t>(localBytes),
                         nullptr);
    if (err != CL_SUCCESS) {
      error = "clSetKernelArg(local memory) failed: " + std::to_string(err);
      return false;
    }
  }
  size_t global[3] = {static_cast<size_t>(grid[0] * numThreads), static_cast<size_t>(grid[1]),
                      static_cast<size_t>(grid[2])};
  size_t local[3] = {static_cast<size_t>(numThreads), 1, 1};
  err = clEnqueueNDRangeKernel(m.queue, kernel, 3, nullptr, global, local, 0, nullptr, nullptr);
  if (err != CL_SUCCESS) {
    error = "clEnqueueNDRangeKernel failed: " + std::to_string(err);
    return false;
  }
  std::string overruns;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].isBuffer)
      continue;
    std::vector<std::byte> contents(args[i].buffer->size() + kGuardBytes);
    clEnqueueReadBuffer(m.queue, mems[i], CL_TRUE, 0, contents.size(), contents.data(), 0, nullptr, nullptr);
    std::copy_n(contents.begin(), args[i].buffer->size(), args[i].buffer->begin());
    auto guard = contents.begin() + static_cast<std::ptrdiff_t>(args[i].buffer->size());
    if (auto bad = std::find_if(guard, contents.end(), [](std::byte b) { return b != kGuardByte; });
        bad != contents.end())
      overruns += " argument " + std::to_string(i) + " (" + std::to_string(args[i].buffer->size()) +
                  " bytes) at byte " + std::to_string(bad - contents.begin()) + ";";
  }
  err = clFinish(m.queue);
  if (err != CL_SUCCESS) {
    error = "clFinish failed: " + std::to_string(err);
    return false;
  }
  if (!overruns.empty()) {
    error = "the kernel wrote past the end of" + overruns;
    return false;
  }
  return true;
}

} // namespace kiln::spirvtest
