//===- KernelArguments.cpp - A Tile IR kernel as a launch signature -------===//
#include "tools/driver/KernelArguments.h"

#include <functional>

namespace kiln::driver {

launch::Signature signatureOf(const ir::Kernel &kernel) {
  launch::Signature s;
  s.kernel = kernel.name;
  // The workspace of a split kernel is the launcher's to pass, not the caller's.
  for (size_t i = 0; i < kernel.numLaunchParams(); ++i) {
    const ir::Value &p = *kernel.params()[i];
    s.params.push_back(launch::ParamSpec{p.nameHint, p.type.dtype, p.type.pointer});
  }
  for (const auto &[name, value] : kernel.constValues)
    s.consts.push_back(name);
  for (const ir::BlockMaskParam &m : kernel.blockMasks)
    s.masks.push_back(launch::MaskSpec{m.name, m.blockRows, m.blockCols, m.firstParam, m.extents,
                                       launch::extentsSpelling(m.extents, s.params)});
  return s;
}

/// Runs `run` on the interpreter's form of `host`'s arguments and buffers. The
/// interpreter works on its own copies and replaces a buffer only when the whole run
/// succeeded, so moving the data in and back out keeps `host` unchanged on failure.
static bool withInterpreterArguments(
    launch::HostArguments &host,
    const std::function<bool(const std::vector<interp::KernelArg> &, std::vector<interp::Buffer> &)> &run) {
  std::vector<interp::KernelArg> args;
  for (const launch::HostArg &a : host.args) {
    switch (a.kind) {
    case launch::HostArg::Kind::Buffer: args.push_back(interp::KernelArg::ofBuffer(a.buffer)); break;
    case launch::HostArg::Kind::Int: args.push_back(interp::KernelArg::ofInt(a.i)); break;
    case launch::HostArg::Kind::Float: args.push_back(interp::KernelArg::ofFloat(a.f)); break;
    }
  }
  std::vector<interp::Buffer> buffers;
  buffers.reserve(host.buffers.size());
  for (launch::HostBuffer &b : host.buffers) {
    interp::Buffer buffer;
    buffer.name = b.path;
    buffer.dtype = b.dtype;
    buffer.data = std::move(b.data);
    buffers.push_back(std::move(buffer));
  }
  bool ran = run(args, buffers);
  for (size_t i = 0; i < buffers.size(); ++i) {
    host.buffers[i].data = std::move(buffers[i].data);
    host.buffers[i].written = ran && buffers[i].written;
  }
  return ran;
}

bool runOnInterpreter(const ir::Kernel &kernel, launch::HostArguments &host, const interp::RunOptions &options,
                      DiagnosticEngine &diags) {
  return withInterpreterArguments(host, [&](const auto &args, auto &buffers) {
    return interp::runKernel(kernel, args, buffers, options, diags);
  });
}

bool runGraphOnInterpreter(const ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host,
                           const interp::RunOptions &options, DiagnosticEngine &diags) {
  return withInterpreterArguments(host, [&](const auto &args, auto &buffers) {
    return interp::runGraph(module, graph, args, buffers, options, diags);
  });
}

bool planGraphLaunches(const ir::Module &module, const ir::Kernel &graph, launch::HostArguments &host,
                       DiagnosticEngine &diags, std::vector<interp::GraphLaunchCall> &out) {
  return withInterpreterArguments(host, [&](const auto &args, auto &buffers) {
    return interp::planGraph(module, graph, args, buffers, diags, out);
  });
}

} // namespace kiln::driver
