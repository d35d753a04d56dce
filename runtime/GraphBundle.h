//===- GraphBundle.h - The .kgraph file: a compiled graph --------*- C++ -*-===//
//
// What `dslc --emit=bundle --kernel GRAPH` writes and kiln-run, the C/C++ runtime API and
// the Python bindings launch with one call (docs/graphs.md). It holds everything a run
// needs where no compiler is installed:
//
//   * the graph's signature, as a kernel bundle's (BundleParam, BundleBlockMask);
//   * its body as a scalar program: the values the body computes from its parameters
//     (grids, scalar arguments, views `p + offset`), in order, and its launches, each
//     with the kernel it runs, its grid and arguments as values of the program, and,
//     under an `if`, the bool value that decides whether it runs;
//   * the dependencies between launches (ir/GraphDependencies.h), the ones that hold
//     only when two pointer parameters are one buffer marked with those parameters;
//   * what each program of each kernel touches (ir/TaskFootprints.h): per access, its
//     pointer parameter and range of elements as polynomials in the program id and the
//     kernel's integer parameters, from which the host finds, per run, the tasks each
//     task must wait for (TaskEvents.h);
//   * one kernel bundle per kernel the graph launches and, for the persistent mode, the
//     bundle of the persistent kernel (codegen/Megakernel.cpp).
//
// The file is the container of Container.h with the magic "KILNGRPH": the metadata is
// text, one `key value` line per field, and each section a complete kernel bundle.
// parseGraphBundle() checks the container, then every field's meaning, then each kernel
// bundle as parseBundle() does: a damaged file is an error, never a wrong launch.
//
// planGraph() evaluates the program on one call's arguments: the launches one run
// makes, with grids and arguments resolved and, for each, the earlier launches it must
// follow. Its arithmetic is the interpreter's (support/ScalarArithmetic.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Bundle.h"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::rt {

/// What one value of a graph's program computes.
enum class GraphOp : uint8_t {
  Param,  ///< graph parameter `imm`
  Const,  ///< `imm` (integers, bool) or `fimm` (floats)
  Add, Sub, Mul, Div, Rem, Min, Max, And, Or, Xor, Shl, Shr, ///< two operands of `dtype`
  Neg, Not,                                                  ///< one operand
  Cmp,    ///< predicate `imm` (GraphPredicate) of two operands; dtype bool
  Select, ///< operand 0 (bool) ? operand 1 : operand 2
  Cast,   ///< operand 0 converted to `dtype`
  PtrAdd, ///< pointer operand 0 plus integer operand 1 elements
};

enum class GraphPredicate : uint8_t { EQ, NE, LT, LE, GT, GE };

struct GraphValue {
  GraphOp op = GraphOp::Const;
  DType dtype = DType::I32; ///< the result's dtype; a pointer's pointee
  bool pointer = false;
  std::vector<uint32_t> operands; ///< indices of earlier values
  int64_t imm = 0;
  double fimm = 0;

  bool operator==(const GraphValue &) const = default;
};

/// One `launch` of the body, in program order.
struct GraphLaunchStep {
  uint32_t kernel = 0;                   ///< index into GraphBundle::kernels
  std::array<uint32_t, 3> grid = {0, 0, 0}; ///< values, each an integer
  std::vector<uint32_t> args;            ///< values, in the kernel's parameter order
  std::optional<uint32_t> guard;         ///< a bool value: the launch runs when it is true
  std::string where;                     ///< "g.kiln:8:5", for messages; may be empty

  bool operator==(const GraphLaunchStep &) const = default;
};

/// Launch `to` must follow launch `from` (from < to). With `aliasParams`, only when
/// those two pointer parameters of the graph are one buffer.
struct GraphEdge {
  uint32_t from = 0, to = 0;
  std::optional<std::array<uint32_t, 2>> aliasParams;

  bool operator==(const GraphEdge &) const = default;
};

/// Σ coefficient · Π symbols; a symbol is program_id(0..2) (kPid + axis) or the
/// kernel's integer parameter k (kParam + k). No symbols: the constant term.
struct GraphPolyTerm {
  static constexpr uint32_t kPid = 0, kParam = 3;
  int64_t coefficient = 0;
  std::vector<uint32_t> symbols;

  bool operator==(const GraphPolyTerm &) const = default;
};
using GraphPoly = std::vector<GraphPolyTerm>;

/// One access of a kernel's programs: elements [lo, hi] of pointer parameter `param`,
/// both inclusive; where `known` is false, the whole buffer.
struct GraphFootprint {
  uint32_t kernel = 0; ///< index into GraphBundle::kernels
  uint32_t param = 0;
  bool reads = false, writes = false;
  bool known = false;
  GraphPoly lo, hi;

  bool operator==(const GraphFootprint &) const = default;
};

struct GraphBundle {
  std::string name;
  std::vector<BundleParam> params;
  /// The block masks among `params`, each covering five of them as a kernel's do
  /// (BundleBlockMask): kiln_graph_launch takes one mask argument for them.
  std::vector<BundleBlockMask> blockMasks;
  std::vector<GraphValue> values;
  std::vector<GraphLaunchStep> launches;
  std::vector<GraphEdge> edges;
  /// Every global access of every kernel; a kernel without any touches no memory.
  std::vector<GraphFootprint> footprints;
  std::vector<Bundle> kernels;
  /// The persistent kernel, whose consts hold RECORD_WORDS (support/TaskTable.h); absent
  /// where the graph runs launch by launch only (SPIR-V).
  std::optional<Bundle> persistent;
  Target target = Target::SM90;
  std::string compilerVersion;
  std::string sourceHash;
  std::string sourceFile;
  uint32_t sourceLine = 0, sourceColumn = 0;

  bool operator==(const GraphBundle &) const = default;
};

/// Format version written by this runtime and the only one it reads.
inline constexpr uint32_t kGraphBundleFormatVersion = 2;

/// "" when every field means something (values use only earlier values of the right
/// kinds, launches match their kernels' signatures, ...), else the first problem.
std::string validateGraphBundle(const GraphBundle &graph);

/// The file bytes; empty with `error` set for an invalid graph bundle.
std::vector<uint8_t> serializeGraphBundle(const GraphBundle &graph, std::string &error);
/// Parses and validates file bytes; nullopt with `error` on any problem.
std::optional<GraphBundle> parseGraphBundle(std::span<const uint8_t> bytes, std::string &error);
/// Reads and parses `path` (errors are prefixed with the path). `ioError`, when given,
/// says whether the file could not be read at all (as readBundle's).
std::optional<GraphBundle> readGraphBundle(const std::string &path, std::string &error, bool *ioError = nullptr);
/// Writes atomically, as writeBundleAtomic does.
bool writeGraphBundleAtomic(const std::string &path, const GraphBundle &graph, std::string &error);
/// Whether `bytes` start as a graph bundle does (nothing else is checked).
bool isGraphBundle(std::span<const uint8_t> bytes);

//===----------------------------------------------------------------------===//
// One call's launches
//===----------------------------------------------------------------------===//

/// A graph argument or a launch argument: an integer or bool, a float, or a view of the
/// buffer passed for a pointer parameter of the graph.
struct GraphArgValue {
  enum class Kind { Int, Float, Buffer } kind = Kind::Int;
  int64_t i = 0;  ///< Int: the value; Buffer: the view's offset, in elements of `dtype`
  double f = 0;
  uint32_t param = 0;        ///< Buffer: the graph parameter whose buffer it views
  uint64_t bufferId = 0;     ///< Buffer, given by the caller: equal ids are one buffer
};

struct PlannedGraphLaunch {
  uint32_t step = 0; ///< index into GraphBundle::launches
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::vector<GraphArgValue> args;
  std::vector<uint32_t> after; ///< indices of earlier planned launches it must follow
};

/// Why a call's launches could not be planned.
struct GraphPlanError {
  enum class Kind { Argument, Grid } kind = Kind::Argument;
  std::string message;
  std::optional<uint32_t> step; ///< Grid: the launch whose grid is out of range
};

/// The launches one run makes with `args` (one per graph parameter: Int for integer and
/// bool parameters, Float for floats, Buffer with offset 0 for pointers). nullopt with
/// `error` when an argument is of the wrong kind or a grid is out of range.
std::optional<std::vector<PlannedGraphLaunch>> planGraph(const GraphBundle &graph, std::span<const GraphArgValue> args,
                                                         GraphPlanError &error);

} // namespace kiln::rt
