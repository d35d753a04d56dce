//===- Graph.cpp - Running a graph, launch by launch -------------------------===//
//
// A graph's body is scalar arithmetic, `if`s and `launch`es (LANGUAGE.md, "Persistent
// graphs"), and its meaning is its launches run one after another, in order. That is
// what this runs: the body on one program of the machine, each launch through
// runKernel on the graph's own copies of the buffers, so each launch sees every store
// of the ones before it, and the caller's buffers change only when the whole graph ran.
// It is the reference that a graph compiled to one persistent kernel is checked against.
// planGraph is the first half alone: the launches the body makes, which is also what a
// GPU needs to run the graph.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Machine.h"

#include "support/Diagnostics.h"

#include <iostream>
#include <limits>
#include <new>
#include <sstream>

namespace kiln::interp {

using detail::Slot;

namespace {

/// The launch op's operand `i` (a grid size or an argument) as runKernel takes it.
KernelArg argOf(detail::Machine &m, const detail::PreparedOp &op, unsigned i) {
  const Type &t = m.inType(op, i);
  const Slot v = m.in(op, i)[0];
  if (t.pointer)
    return KernelArg::ofBuffer(detail::pointerBuffer(v.i), detail::pointerOffset(v.i));
  if (isFloat(t.dtype))
    return KernelArg::ofFloat(v.f);
  return KernelArg::ofInt(v.i);
}

} // namespace

bool planGraph(const ir::Module &module, const ir::Kernel &graph, const std::vector<KernelArg> &args,
               const std::vector<Buffer> &buffers, DiagnosticEngine &diags, std::vector<GraphLaunchCall> &out) {
  const auto &params = graph.params();
  if (args.size() != params.size()) {
    diags.error(graph.loc, DiagCode::RunArgument)
        << "graph '" << graph.name << "' takes " << params.size() << " argument" << (params.size() == 1 ? "" : "s")
        << " but " << args.size() << (args.size() == 1 ? " was" : " were") << " given";
    return false;
  }
  std::vector<Slot> values(params.size());
  bool argsOk = true;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string problem = detail::bindArgument(graph, i, args[i], buffers, values[i]);
    if (!problem.empty()) {
      // bindArgument speaks of kernels; a graph's parameters are passed the same way.
      if (size_t at = problem.find("of kernel '"); at != std::string::npos)
        problem.replace(at, 11, "of graph '");
      diags.error(graph.loc, DiagCode::RunArgument) << problem;
      argsOk = false;
    }
  }
  if (!argsOk)
    return false;

  // The body never touches memory: the machine gets the buffers' names and dtypes only.
  std::vector<Buffer> shadow;
  shadow.reserve(buffers.size());
  for (const Buffer &b : buffers)
    shadow.push_back(Buffer{b.name, b.dtype, {}, false});
  RunOptions options;
  detail::Machine m(options, diags, shadow);
  m.bound.assign(shadow.size(), 1);
  m.grid = {1, 1, 1};
  m.pid = {0, 0, 0};
  m.stepLimit = std::numeric_limits<uint64_t>::max();
  std::vector<GraphLaunchCall> calls;
  m.launch = [&](const detail::PreparedOp &op) {
    const std::string &name = op.op->stringAttr("kernel");
    GraphLaunchCall call;
    call.op = op.op;
    call.kernel = module.findKernel(name);
    if (!call.kernel)
      KILN_ICE("interpreter: graph '" + graph.name + "' launches '" + name + "', which the module lacks");
    for (unsigned d = 0; d < 3; ++d)
      call.grid[d] = m.in(op, d)[0].i;
    for (unsigned i = 3; i < op.operands.size(); ++i)
      call.args.push_back(argOf(m, op, i));
    calls.push_back(std::move(call));
  };
  try {
    detail::PreparedBlock body = detail::prepareKernel(graph, m);
    for (size_t i = 0; i < params.size(); ++i)
      m.env[body.args[i]].assign(1, values[i]);
    m.run(body);
  } catch (const detail::RunFailed &) {
    return false;
  }
  out = std::move(calls);
  return true;
}

bool runGraph(const ir::Module &module, const ir::Kernel &graph, const std::vector<KernelArg> &args,
              std::vector<Buffer> &buffers, const RunOptions &options, DiagnosticEngine &diags) {
  std::vector<GraphLaunchCall> calls;
  if (!planGraph(module, graph, args, buffers, diags, calls))
    return false;

  // The graph's copies of the buffers: every launch reads and writes these.
  std::vector<Buffer> memory = buffers;
  for (Buffer &b : memory)
    b.written = false;
  try {
    for (const GraphLaunchCall &call : calls) {
      RunOptions launchOptions = options;
      launchOptions.grid = call.grid;
      // The launch's own diagnostics, each passed on with a note saying which launch.
      std::vector<Diagnostic> reported;
      DiagnosticEngine local(diags.sourceManager(), std::cerr);
      local.setHandler([&](const Diagnostic &d) { reported.push_back(d); });
      const bool ok = runKernel(*call.kernel, call.args, memory, launchOptions, local);
      std::ostringstream where;
      where << "in the launch of kernel '" << call.kernel->name << "' on grid (" << call.grid[0] << ", "
            << call.grid[1] << ", " << call.grid[2] << ") by graph '" << graph.name << "'";
      for (Diagnostic &d : reported) {
        if (d.severity == Severity::Error) {
          Diagnostic note;
          note.severity = Severity::Note;
          note.code = d.code;
          note.loc = call.op->loc();
          note.message = where.str();
          d.notes.push_back(std::move(note));
        }
        diags.report(std::move(d));
      }
      if (!ok)
        return false;
    }
  } catch (const std::bad_alloc &) {
    diags.error(graph.loc, DiagCode::InputTooLarge)
        << "the interpreter ran out of memory running graph '" << graph.name << "'";
    return false;
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    if (memory[i].written) {
      buffers[i].data = std::move(memory[i].data);
      buffers[i].written = true;
    }
  return true;
}

} // namespace kiln::interp
