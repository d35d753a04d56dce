//===- Interpreter.cpp - Running a kernel over its grid -------------------===//
//
// runKernel checks the grid and the arguments, prepares the kernel (Prepare.cpp),
// copies the argument buffers, and runs the programs one after another, x fastest. A
// kernel whose reduction is split over programs (ir::GridSplit) is launched as its
// contract says: S programs per program of the grid, and a zeroed workspace passed
// after the caller's arguments, or, split over clusters, the S programs of each
// cluster run together (Cluster.cpp).
// Only when every program finished without error are the copies of the buffers that
// were stored to handed back; any error leaves the caller's buffers as they were.
//
// The dispatch below is the one switch over every op kind; the handlers live in one
// file per concept (Arithmetic, Convert, Memory, Shape, Reductions, Sorting, Dot,
// ControlFlow, Print).
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Interpreter.h"

#include "ir/interp/Scalar.h"

#include <algorithm>
#include <limits>
#include <new>
#include <sstream>

namespace kiln::interp {

namespace detail {

using ir::OpKind;

//===--------------------------------------------------------------------===//
// Machine
//===--------------------------------------------------------------------===//

const PreparedOp *Machine::run(const PreparedBlock &block) {
  for (const PreparedOp &op : block.ops) {
    step(op.op->loc(), op.work);
    if (ir::isTerminator(op.kind))
      return &op;
    exec(op);
  }
  return nullptr;
}

Slot Machine::combine(const PreparedBlock &region, Slot acc, Slot x) {
  env[region.args[0]].assign(1, acc);
  env[region.args[1]].assign(1, x);
  const PreparedOp *term = run(region);
  return env[term->operands[0]][0];
}

void Machine::fail(Location loc, DiagCode code, const std::string &message) {
  diags.error(loc, code) << message;
  throw RunFailed{};
}

std::string Machine::programString() const {
  return "(" + std::to_string(pid[0]) + ", " + std::to_string(pid[1]) + ", " +
         std::to_string(pid[2]) + ")";
}

void Machine::stepLimitExceeded(Location loc) {
  fail(loc, DiagCode::StepLimit,
       "interpreter step limit of " + std::to_string(options.maxSteps) +
           " exceeded; the kernel may loop forever");
}

void Machine::exec(const PreparedOp &op) {
  switch (op.kind) {
  case OpKind::Constant: {
    TileData &out = this->out(op);
    std::fill(out.begin(), out.end(), op.value);
    return;
  }
  case OpKind::ProgramId:
    out(op)[0] = intSlot(pid[op.axis]);
    return;
  case OpKind::NumPrograms:
    out(op)[0] = intSlot(grid[op.axis]);
    return;
  case OpKind::Arange:
    return execArange(*this, op);
  case OpKind::Splat:
    return execSplat(*this, op);
  case OpKind::Broadcast:
    return execBroadcast(*this, op);
  case OpKind::ExpandDims:
  case OpKind::Reshape:
    return execSameOrder(*this, op);
  case OpKind::Permute:
    return execPermute(*this, op);
  case OpKind::Join:
    return execJoin(*this, op);
  case OpKind::Split:
    return execSplit(*this, op);
  case OpKind::Cat:
    return execCat(*this, op);
  case OpKind::Gather:
    return execGather(*this, op);
  case OpKind::BlockElements:
    return execBlockElements(*this, op);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Rem:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Shl:
  case OpKind::Shr:
  case OpKind::Minimum:
  case OpKind::Maximum:
  case OpKind::Pow:
    return execBinary(*this, op);
  case OpKind::Neg:
  case OpKind::Not:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Exp2:
  case OpKind::Log:
  case OpKind::Log2:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Sigmoid:
  case OpKind::Floor:
  case OpKind::Ceil:
    return execUnary(*this, op);
  case OpKind::Fma:
    return execFma(*this, op);
  case OpKind::PtrAdd:
    return execPtrAdd(*this, op);
  case OpKind::Cmp:
    return execCmp(*this, op);
  case OpKind::Select:
    return execSelect(*this, op);
  case OpKind::Cast:
    return execCast(*this, op);
  case OpKind::Bitcast:
    return execBitcast(*this, op);
  case OpKind::Load:
    return execLoad(*this, op);
  case OpKind::Store:
    noteWrite();
    return execStore(*this, op);
  case OpKind::AtomicRMW:
    noteWrite();
    return execAtomicRMW(*this, op);
  case OpKind::AtomicCas:
    noteWrite();
    return execAtomicCas(*this, op);
  case OpKind::Fence:
    return; // programs run one after another: their accesses are already ordered
  case OpKind::ClusterExchange:
    return execClusterExchange(*this, op);
  case OpKind::Reduce:
    return execReduce(*this, op);
  case OpKind::Scan:
    return execScan(*this, op);
  case OpKind::Argmax:
    return execArgReduce(*this, op, /*wantMax=*/true);
  case OpKind::Argmin:
    return execArgReduce(*this, op, /*wantMax=*/false);
  case OpKind::Sort:
    return execSort(*this, op);
  case OpKind::TopK:
    return execTopK(*this, op, /*indices=*/false);
  case OpKind::ArgTopK:
    return execTopK(*this, op, /*indices=*/true);
  case OpKind::Dot:
    return execDot(*this, op);
  case OpKind::For:
    return execFor(*this, op);
  case OpKind::If:
    return execIf(*this, op);
  case OpKind::While:
    return execWhile(*this, op);
  case OpKind::Assert:
    return execAssert(*this, op);
  case OpKind::Print:
    noteWrite();
    return execPrint(*this, op);
  case OpKind::Launch:
    if (!launch)
      KILN_ICE("interpreter: a launch outside a graph");
    noteWrite();
    return launch(op);
  case OpKind::Yield:
  case OpKind::Condition:
  case OpKind::Return:
    break; // run() stops at terminators; they never get here
  }
  KILN_ICE(std::string("interpreter: cannot execute '") + op.op->mnemonic() + "' here");
}

} // namespace detail

//===--------------------------------------------------------------------===//
// Arguments
//===--------------------------------------------------------------------===//

using detail::Slot;

static std::string describeParam(const ir::Kernel &kernel, size_t i) {
  const std::string &name = kernel.params()[i]->nameHint;
  return "argument " + std::to_string(i + 1) + (name.empty() ? "" : " ('" + name + "')") +
         " of kernel '" + kernel.name + "'";
}

static const char *describeArg(const KernelArg &a) {
  switch (a.kind) {
  case KernelArg::Kind::Buffer:
    return "a buffer";
  case KernelArg::Kind::Int:
    return "an integer";
  case KernelArg::Kind::Float:
    return "a float";
  }
  return "an argument";
}

/// Checks one argument against its parameter; on success stores the parameter's value
/// in `value` and returns an empty string, otherwise returns the problem.
std::string detail::bindArgument(const ir::Kernel &kernel, size_t i, const KernelArg &arg,
                                 const std::vector<Buffer> &buffers, Slot &value) {
  const Type &t = kernel.params()[i]->type;
  const std::string what = describeParam(kernel, i);
  if (!t.isScalar())
    return what + " has tile type " + t.str() + ", which cannot be passed to a kernel";
  if (t.pointer) {
    if (arg.kind != KernelArg::Kind::Buffer)
      return what + " must be a buffer of " + std::string(dtypeName(t.dtype)) + ", got " +
             describeArg(arg);
    if (arg.buffer >= buffers.size())
      return what + " names buffer #" + std::to_string(arg.buffer) + " but there " +
             (buffers.size() == 1 ? "is 1 buffer"
                                  : "are " + std::to_string(buffers.size()) + " buffers");
    if (arg.buffer >= detail::kMaxBuffers)
      return what + " names buffer #" + std::to_string(arg.buffer) +
             "; the interpreter supports at most " + std::to_string(detail::kMaxBuffers);
    const Buffer &b = buffers[arg.buffer];
    if (b.dtype != t.dtype)
      return what + " expects a buffer of " + std::string(dtypeName(t.dtype)) + " but '" + b.name +
             "' holds " + std::string(dtypeName(b.dtype));
    if (b.data.size() % dtypeBytes(b.dtype) != 0)
      return "buffer '" + b.name + "' has " + std::to_string(b.data.size()) +
             " bytes, not a whole number of " + std::string(dtypeName(b.dtype)) + " elements";
    if (arg.i < -detail::kMaxPointerOffset || arg.i > detail::kMaxPointerOffset)
      return what + " points " + std::to_string(arg.i) + " elements into '" + b.name +
             "', beyond what the interpreter can address";
    value = detail::intSlot(detail::makePointer(arg.buffer, arg.i));
    return "";
  }
  const DType d = t.dtype;
  switch (arg.kind) {
  case KernelArg::Kind::Buffer:
    return what + " is a scalar " + std::string(dtypeName(d)) + ", got a buffer";
  case KernelArg::Kind::Int:
    value = detail::convertSlot(DType::I64, d, detail::intSlot(arg.i));
    return "";
  case KernelArg::Kind::Float:
    value = detail::convertSlot(DType::F64, d, detail::floatSlot(arg.f));
    return "";
  }
  return what + " is malformed";
}

//===--------------------------------------------------------------------===//
// runKernel
//===--------------------------------------------------------------------===//

bool runKernel(const ir::Kernel &kernel, const std::vector<KernelArg> &args,
               std::vector<Buffer> &buffers, const RunOptions &options, DiagnosticEngine &diags) {
  for (int d = 0; d < 3; ++d) {
    int64_t g = options.grid[d];
    if (g < 1 || g > std::numeric_limits<int32_t>::max()) {
      diags.error(kernel.loc, DiagCode::BadGrid)
          << "grid dimension " << d << " is " << g
          << "; every dimension must be between 1 and 2147483647";
      return false;
    }
  }

  const auto &params = kernel.params();
  const size_t given = kernel.numLaunchParams();
  if (args.size() != given) {
    diags.error(kernel.loc, DiagCode::RunArgument)
        << "kernel '" << kernel.name << "' takes " << given << " argument"
        << (given == 1 ? "" : "s") << " but " << args.size()
        << (args.size() == 1 ? " was" : " were") << " given";
    return false;
  }
  const ir::GridSplit &split = kernel.gridSplit;
  std::array<int64_t, 3> grid = options.grid;
  if (split.active() && grid[0] > std::numeric_limits<int32_t>::max() / split.segments) {
    diags.error(kernel.loc, DiagCode::BadGrid)
        << "grid dimension 0 is " << grid[0] << ", and the kernel runs " << split.segments
        << " programs for each: more than 2147483647";
    return false;
  }
  std::vector<Slot> values(params.size());
  bool argsOk = true;
  for (size_t i = 0; i < given; ++i) {
    std::string problem = detail::bindArgument(kernel, i, args[i], buffers, values[i]);
    if (!problem.empty()) {
      diags.error(kernel.loc, DiagCode::RunArgument) << problem;
      argsOk = false;
    }
  }
  if (!argsOk)
    return false;

  // Private copies of the argument buffers (others stay empty and unreachable), and the
  // workspace of a split kernel, zeroed, after them.
  std::vector<Buffer> memory(buffers.size() + (split.usesWorkspace() ? 1 : 0));
  if (split.active())
    grid[0] *= split.segments;
  if (split.usesWorkspace()) {
    int64_t bytes = split.workspaceBytes;
    bool tooLarge = buffers.size() >= detail::kMaxBuffers;
    for (int64_t g : options.grid)
      tooLarge = tooLarge || __builtin_mul_overflow(bytes, g, &bytes);
    try {
      if (tooLarge)
        throw std::bad_alloc();
      memory.back().data.assign(static_cast<size_t>(bytes), std::byte{0});
    } catch (const std::bad_alloc &) {
      diags.error(kernel.loc, DiagCode::InputTooLarge)
          << "the interpreter cannot hold the workspace of kernel '" << kernel.name << "' ("
          << split.workspaceBytes << " bytes for each of the grid's programs)";
      return false;
    }
    memory.back().name = "the workspace of the split reduction";
    memory.back().dtype = DType::I32;
    values.back() = detail::intSlot(detail::makePointer(buffers.size(), 0));
  }
  detail::Machine m(options, diags, memory);
  m.bound.assign(memory.size(), 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    memory[i].name = buffers[i].name;
    memory[i].dtype = buffers[i].dtype;
  }
  for (const KernelArg &a : args)
    if (a.kind == KernelArg::Kind::Buffer && !m.bound[a.buffer]) {
      m.bound[a.buffer] = 1;
      memory[a.buffer].data = buffers[a.buffer].data;
    }
  if (split.usesWorkspace())
    m.bound.back() = 1;
  m.grid = grid;
  m.stepLimit = options.maxSteps ? options.maxSteps : std::numeric_limits<uint64_t>::max();

  try {
    detail::PreparedBlock body = detail::prepareKernel(kernel, m);
    for (size_t i = 0; i < params.size(); ++i)
      m.env[body.args[i]].assign(1, values[i]);
    const int64_t clusterSize = split.cluster ? split.segments : 1;
    for (int64_t z = 0; z < grid[2]; ++z)
      for (int64_t y = 0; y < grid[1]; ++y)
        for (int64_t x = 0; x < grid[0]; x += clusterSize) {
          if (split.cluster) {
            detail::runCluster(m, body, {x, y, z}, clusterSize);
            continue;
          }
          m.pid = {x, y, z};
          m.run(body);
        }
  } catch (const detail::RunFailed &) {
    return false;
  } catch (const std::bad_alloc &) {
    diags.error(kernel.loc, DiagCode::InputTooLarge)
        << "the interpreter ran out of memory running kernel '" << kernel.name << "'";
    return false;
  }

  for (size_t i = 0; i < buffers.size(); ++i)
    if (m.written[i]) {
      buffers[i].data = std::move(memory[i].data);
      buffers[i].written = true;
    }
  return true;
}

} // namespace kiln::interp
