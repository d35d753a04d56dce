//===- kiln-run.cpp - Launch a compiled Kiln kernel from the command line -===//
//
//   kiln-run BUNDLE.kbin --grid X[,Y[,Z]] [--arg NAME=VALUE]... [--device auto|cuda|ze]
//            [--repeat N] [--time] [--diagnostics=text|json]
//   kiln-run GRAPH.kgraph [--arg NAME=VALUE]... [--graph-mode=persistent|cuda-graph|launches]
//            [--trace FILE.json] [--repeat N] [--time]
//   kiln-run --describe BUNDLE.kbin|GRAPH.kgraph
//
// The runtime-only counterpart of `dslc run`: no compiler, no LLVM, linked statically
// against libstdc++/libgcc, so one binary runs on any machine that has a GPU driver.
// It shares the --grid/--arg contract with `dslc run` (tools/launch/): pointer
// parameters take .npy files whose dtype is exactly the pointee type, scalars take
// literals, and after a successful run the buffers the kernel changed are written back
// to their files, each atomically. A failed run leaves every file as it was.
//
//===----------------------------------------------------------------------===//
#include "runtime/Bundle.h"
#include "runtime/DTypes.h"
#include "runtime/GraphBundle.h"
#include "support/BlockMask.h"
#include "support/Location.h"
#include "support/ToolOutput.h"
#include "support/TerminalText.h"
#include "tools/launch/DeviceLaunch.h"
#include "tools/launch/GraphRun.h"
#include "tools/launch/HostArguments.h"

#include <charconv>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

using namespace kiln;

namespace {

enum ExitCode : int { ExitSuccess = 0, ExitUserError = 1, ExitInternalError = 70 };

const char *const kHelp =
    "kiln-run — launch a compiled Kiln kernel or graph (a .kbin or .kgraph bundle from\n"
    "`dslc --emit=bundle`)\n"
    "\n"
    "  kiln-run BUNDLE.kbin --grid X[,Y[,Z]] [--arg NAME=VALUE]... [--device auto|cuda|ze]\n"
    "           [--repeat N] [--time] [--diagnostics=text|json]\n"
    "  kiln-run GRAPH.kgraph [--arg NAME=VALUE]... [--graph-mode=persistent|cuda-graph|launches]\n"
    "           [--trace FILE.json] [--device auto|cuda|ze] [--repeat N] [--time]\n"
    "  kiln-run --describe BUNDLE.kbin|GRAPH.kgraph\n"
    "\n"
    "Each --arg binds one runtime parameter of the kernel: a pointer parameter takes a .npy\n"
    "file whose dtype is exactly the pointee type, a scalar takes a literal (42, 0x10, 1.5e-3,\n"
    "inf, true). After a successful run the buffers the kernel changed are written back to\n"
    "their .npy files, each atomically; a failed run leaves every file as it was.\n"
    "\n"
    "OPTIONS:\n"
    "  --grid X[,Y[,Z]]         Programs per grid axis (each 1 .. 2147483647); a graph computes\n"
    "                           its launches' grids and takes none\n"
    "  --arg NAME=VALUE         A kernel argument: FILE.npy for a pointer, a literal for a scalar\n"
    "  --device auto|cuda|ze    The GPU API: auto (default) is CUDA, else Level Zero\n"
    "  --repeat N               Launch N times (default 1); the files get the first launch's\n"
    "                           results, the others run on the same buffers\n"
    "  --time                   Time every launch with device events; print min/median/mean/max\n"
    "                           to stdout\n"
    "  --graph-mode MODE        How a graph runs: persistent (one kernel whose workers run the\n"
    "                           launches' programs as tasks; the default on CUDA), cuda-graph\n"
    "                           (its launches recorded once as a CUDA graph), launches (one by\n"
    "                           one; the only mode on Level Zero)\n"
    "  --trace FILE.json        A graph run as one persistent kernel: write its last run's tasks\n"
    "                           as a Chrome / Perfetto trace, one row per worker\n"
    "  --describe               Print the bundle's kernel, signature, assumptions and code, and\n"
    "                           run nothing (needs no GPU)\n"
    "  --diagnostics=text|json  How to print errors: text (default) or one JSON object per line\n"
    "  --help, -h               Show this help\n"
    "  --version                Show the version\n"
    "\n"
    "ENVIRONMENT:\n"
    "  KILN_CUDA_LIBRARY        The CUDA driver library to load (default libcuda.so.1)\n"
    "  KILN_ZE_LIBRARY          The Level Zero loader to load (default libze_loader.so.1)\n"
    "\n"
    "EXIT STATUS:\n"
    "  0 success, 1 an error in the arguments, the files or on the device, 70 an internal error\n"
    "\n"
    "docs/kiln-run.md has examples.\n";

/// What the command line asked for.
struct Options {
  std::vector<std::string> positional;
  std::optional<std::string> grid;
  std::vector<std::string> args;
  std::string device = "auto";
  std::optional<std::string> repeat;
  bool time = false;
  bool describe = false;
  std::optional<std::string> graphMode;
  std::optional<std::string> trace;
};

/// A small argument parser: `--name value`, `--name=value`, flags, `--` ending the
/// options. Every problem is a coded diagnostic (E0900) naming the argument. (--help and
/// --version are answered before it runs.)
class ArgParser {
public:
  ArgParser(DiagnosticEngine &diags) : diags_(diags) {}

  bool parse(int argc, char **argv, Options &o) {
    bool ok = true;
    bool onlyPositional = false;
    std::map<std::string, int> seen;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      if (onlyPositional || arg.size() < 2 || arg[0] != '-') {
        o.positional.push_back(arg);
        continue;
      }
      if (arg == "--") {
        onlyPositional = true;
        continue;
      }
      std::string name = arg, value;
      bool hasValue = false;
      if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        hasValue = true;
      }
      enum Kind { Flag, Value, ListValue };
      static const std::map<std::string, Kind> kinds = {
          {"--grid", Value},      {"--arg", ListValue}, {"--device", Value},   {"--repeat", Value},
          {"--time", Flag},       {"--describe", Flag}, {"--diagnostics", Value},
          {"--graph-mode", Value}, {"--trace", Value},
      };
      auto kind = kinds.find(name);
      if (kind == kinds.end()) {
        error("unknown option '" + name + "'", "kiln-run --help lists the options");
        ok = false;
        continue;
      }
      if (kind->second == Flag) {
        if (hasValue) {
          error("option '" + name + "' takes no value", "write " + name + " alone");
          ok = false;
          continue;
        }
      } else if (!hasValue) {
        if (i + 1 >= argc) {
          error("option '" + name + "' needs a value", "kiln-run --help shows its form");
          ok = false;
          continue;
        }
        value = argv[++i];
      }
      // Only --arg repeats: a later value silently replacing an earlier one hides mistakes.
      // (A repeated --diagnostics is reported in the last format given, which scanFormat reads.)
      if (kind->second != ListValue && ++seen[name] == 2) {
        error("option '" + name + "' is given more than once", "give " + name + " once");
        ok = false;
        continue;
      }
      if (name == "--grid")
        o.grid = value;
      else if (name == "--arg")
        o.args.push_back(value);
      else if (name == "--device")
        o.device = value;
      else if (name == "--repeat")
        o.repeat = value;
      else if (name == "--time")
        o.time = true;
      else if (name == "--describe")
        o.describe = true;
      else if (name == "--graph-mode")
        o.graphMode = value;
      else if (name == "--trace")
        o.trace = value;
      else if (name == "--diagnostics") {
        if (value != "text" && value != "json") {
          error("unknown --diagnostics format '" + value + "'", "write --diagnostics=text or --diagnostics=json");
          ok = false;
        }
      }
    }
    return ok;
  }

private:
  void error(const std::string &message, const std::string &hint) {
    auto d = diags_.error(Location::commandLine(), DiagCode::BadOption);
    d << message;
    if (!hint.empty())
      d.hint(hint);
  }
  DiagnosticEngine &diags_;
};

/// The --diagnostics format, found before anything is reported. The last valid one
/// given wins; the parse reports an invalid one.
DiagFormat scanFormat(int argc, char **argv) {
  DiagFormat f = DiagFormat::Text;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--")
      break;
    std::string v;
    if (a.rfind("--diagnostics=", 0) == 0)
      v = a.substr(14);
    else if (a == "--diagnostics" && i + 1 < argc)
      v = argv[++i];
    else
      continue;
    if (v == "json")
      f = DiagFormat::Json;
    else if (v == "text")
      f = DiagFormat::Text;
  }
  return f;
}


std::string formatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) // "inf", "nan" and exponents stay
    s += ".0";
  return s;
}

/// `kiln-run --describe`: everything a caller needs to launch the bundle. Every value
/// is printed escaped: a bundle is untrusted input, and its text (a source path, the
/// compiler string) must not reach the terminal as control sequences.
void describe(const std::string &path, const rt::Bundle &b, std::ostream &os) {
  auto row = [&](const std::string &key, const std::string &value) {
    os << key << std::string(key.size() < 12 ? 12 - key.size() : 1, ' ') << escapeForTerminal(value) << "\n";
  };
  std::vector<rt::BundleParam> params = b.params;
  // A block mask is one argument of the launchers standing for five parameters.
  auto maskAt = [&](size_t i) -> const rt::BundleBlockMask * {
    for (const rt::BundleBlockMask &m : b.blockMasks)
      if (i >= m.firstParam && i < m.firstParam + kBlockMaskParams)
        return &m;
    return nullptr;
  };
  std::vector<launch::ParamSpec> specs;
  for (const rt::BundleParam &p : params)
    specs.push_back(launch::ParamSpec{p.name, p.dtype, p.pointer});
  auto maskType = [&](const rt::BundleBlockMask &m) {
    return "block_mask<" + std::to_string(m.blockRows) + ", " + std::to_string(m.blockCols) +
           launch::extentsSpelling(m.extents, specs) + ">";
  };
  std::string signature = b.kernelName + "(";
  bool firstParam = true;
  for (size_t i = 0; i < params.size(); ++i) {
    const rt::BundleBlockMask *m = maskAt(i);
    if (m && i != m->firstParam)
      continue;
    signature += (firstParam ? "" : ", ") +
                 (m ? m->name + ": " + maskType(*m)
                    : params[i].name + ": " + rt::paramTypeSpelling(params[i].dtype, params[i].pointer));
    firstParam = false;
  }
  row("kernel", b.kernelName);
  row("entry", b.entry);
  row("signature", signature + ")");
  for (const rt::BundleParam &p : params) {
    std::string text = p.name + ": " + rt::paramTypeSpelling(p.dtype, p.pointer);
    if (p.divisibility > 1)
      text += p.pointer ? "  (address a multiple of " + std::to_string(p.divisibility) + " bytes)"
                        : "  (assumed a multiple of " + std::to_string(p.divisibility) + ")";
    row("param", text);
  }
  for (const rt::BundleBlockMask &m : b.blockMasks)
    row("block_mask", m.name + ": " + maskType(m) + " = parameters " + std::to_string(m.firstParam) + ".." +
                          std::to_string(m.firstParam + kBlockMaskParams - 1) +
                          " (a [rows, cols] bool .npy builds them)");
  for (const rt::ConstValue &c : b.consts) {
    std::string value;
    if (auto *i = std::get_if<int64_t>(&c.value))
      value = std::to_string(*i);
    else if (auto *d = std::get_if<double>(&c.value))
      value = formatDouble(*d);
    else
      value = std::get<bool>(c.value) ? "true" : "false";
    row("const", c.name + " = " + value);
  }
  row("num_warps", std::to_string(b.numWarps) + " (" + std::to_string(b.numWarps * 32) + " threads per program)");
  row("shared", std::to_string(b.sharedBytes) + " bytes per program");
  if (b.gridSplit > 1 && b.clusterSplit)
    row("grid_split", std::to_string(b.gridSplit) + " programs per program of the grid (its reduction is split over "
                      "them), each group one thread-block cluster");
  else if (b.gridSplit > 1)
    row("grid_split", std::to_string(b.gridSplit) + " programs per program of the grid (its reduction is split over "
                      "them), with a workspace of " + std::to_string(b.workspaceBytes) + " bytes per program of the "
                      "grid, which the runtime passes");
  row("target", std::string(rt::targetName(b.target)));
  for (const rt::CodeSection &s : b.sections)
    row("section", std::string(rt::sectionKindName(s.kind)) + " for " + std::string(rt::targetName(s.target)) + ", " +
                       std::to_string(s.bytes.size()) + " bytes");
  row("compiler", b.compilerVersion);
  if (!b.sourceLocation().empty())
    row("source", b.sourceLocation());
  row("source_hash", b.sourceHash);
  std::string usage = "kiln-run " + path + " --grid X[,Y[,Z]]";
  for (size_t i = 0; i < params.size(); ++i) {
    const rt::BundleBlockMask *m = maskAt(i);
    if (m && i == m->firstParam)
      usage += " --arg " + m->name + "=MASK.npy";
    else if (!m)
      usage += " --arg " + params[i].name + "=" + (params[i].pointer ? "FILE.npy" : "VALUE");
  }
  row("usage", usage);
}

/// False, with an error for each, when a mask is asked for as a predicate: a bundle holds
/// its kernels only, and building a mask from a predicate needs the compiler.
bool refusePredicateMasks(const launch::HostArguments &host, DiagnosticEngine &diags) {
  for (const launch::PredicateMask &request : host.predicateMasks)
    diags.error(Location::commandLine(), DiagCode::BlockMaskArgument)
            .hint("dslc run compiles the predicate with the kernel; here pass the mask as a 2-D bool .npy file")
        << "--arg " << request.mask.name << "=" << request.predicate << "(" << request.rows << "," << request.cols
        << "): kiln-run cannot build a mask from a predicate";
  return host.predicateMasks.empty();
}

/// `kiln-run --describe GRAPH.kgraph`.
void describeGraph(const std::string &path, const rt::GraphBundle &g, std::ostream &os) {
  auto row = [&](const std::string &key, const std::string &value) {
    os << key << std::string(key.size() < 12 ? 12 - key.size() : 1, ' ') << escapeForTerminal(value) << "\n";
  };
  row("graph", g.name);
  row("signature", g.name + "(" + (g.params.empty() ? "" : launch::paramList(launch::signatureOf(g))) + ")");
  size_t guarded = 0;
  for (const rt::GraphLaunchStep &l : g.launches)
    guarded += l.guard.has_value();
  row("launches", std::to_string(g.launches.size()) + (guarded ? " (" + std::to_string(guarded) + " under an `if`)" : "") +
                      ", " + std::to_string(g.edges.size()) + " dependencies between them");
  for (const rt::Bundle &k : g.kernels)
    row("kernel", k.kernelName + ": " + std::to_string(k.params.size()) + " parameters, " +
                      std::to_string(k.numWarps) + " warps");
  row("persistent", g.persistent ? "yes: one kernel can run the whole graph (--graph-mode=persistent)"
                                 : "no: the launches run one by one");
  row("target", std::string(rt::targetName(g.target)));
  row("compiler", g.compilerVersion);
  if (!g.sourceFile.empty())
    row("source", g.sourceFile + ":" + std::to_string(g.sourceLine) + ":" + std::to_string(g.sourceColumn));
  std::string usage = "kiln-run " + path;
  for (const rt::BundleParam &p : g.params)
    usage += " --arg " + p.name + "=" + (p.pointer ? "FILE.npy" : "VALUE");
  row("usage", usage);
}

/// `kiln-run GRAPH.kgraph --arg ...`: the graph's launches on the GPU, as one persistent
/// kernel, one CUDA graph or one by one (tools/launch/GraphRun.h).
int runGraph(const std::string &path, const Options &o, launch::GpuKind gpu, uint64_t repeat,
             DiagnosticEngine &diags) {
  std::string error;
  std::optional<rt::GraphBundle> graph = rt::readGraphBundle(path, error);
  if (!graph) {
    diags.error(Location::commandLine(), DiagCode::BadBundle)
            .hint("make the bundle again: dslc FILE.kiln --kernel GRAPH --emit=bundle -o " + path)
        << "'" << path << "' is not a usable Kiln graph bundle: " << error;
    return ExitUserError;
  }
  if (o.grid) {
    diags.error(Location::commandLine(), DiagCode::BadGrid).hint("leave out --grid")
        << "graph '" << graph->name << "' launches its kernels on the grids it computes; --grid is for kernels";
    return ExitUserError;
  }
  if (o.describe) {
    describeGraph(path, *graph, std::cout);
    std::cout.flush();
    return ExitSuccess;
  }
  launch::GraphRunOptions options;
  options.mode = graph->persistent ? launch::GraphMode::Persistent : launch::GraphMode::Launches;
  if (o.graphMode) {
    std::optional<launch::GraphMode> mode = launch::parseGraphMode(*o.graphMode);
    if (!mode) {
      diags.error(Location::commandLine(), DiagCode::BadOption)
              .hint("persistent: one kernel; cuda-graph: its launches in a CUDA graph; launches: one by one")
          << "--graph-mode takes persistent, cuda-graph or launches, got '" << *o.graphMode << "'";
      return ExitUserError;
    }
    options.mode = *mode;
  }
  if (options.mode == launch::GraphMode::Persistent && !graph->persistent) {
    diags.error(Location::commandLine(), DiagCode::Unsupported).hint("--graph-mode=launches runs it launch by launch")
        << "graph bundle '" << path << "' holds no persistent kernel (it is for " << rt::targetName(graph->target)
        << ", whose work-groups have no forward-progress guarantee)";
    return ExitUserError;
  }
  if (o.trace && options.mode != launch::GraphMode::Persistent) {
    diags.error(Location::commandLine(), DiagCode::BadOption).hint("leave out --graph-mode")
        << "--trace records the tasks of a persistent kernel, and graph '" << graph->name << "' runs "
        << (options.mode == launch::GraphMode::CudaGraph ? "as a CUDA graph" : "launch by launch");
    return ExitUserError;
  }
  options.runs = repeat;
  options.time = o.time;
  options.timeOut = &std::cout;
  options.tracePath = o.trace.value_or("");
  options.tool = "kiln-run";

  std::optional<launch::HostArguments> host = launch::bindArguments(launch::signatureOf(*graph), o.args, diags);
  if (!host || !refusePredicateMasks(*host, diags))
    return ExitUserError;
  // Every launch's grid is checked before a device is opened.
  std::vector<launch::PlannedLaunch> launches;
  if (!launch::planBundleRun(*graph, *host, diags, launches))
    return ExitUserError;
  launch::OpenedRuntime opened = launch::openRuntime(gpu);
  if (!opened.runtime) {
    launch::reportRuntimeError(diags, opened.status, opened.error,
                               gpu == launch::GpuKind::Auto
                                   ? "kiln-run needs a CUDA or Level Zero driver; `dslc run --device interp` runs a "
                                     "graph's source on the CPU"
                                   : "--device auto tries every GPU API");
    return ExitUserError;
  }
  if (options.mode != launch::GraphMode::Launches && opened.runtime->target() == "spirv64") {
    diags.error(Location::commandLine(), DiagCode::Unsupported).hint("--graph-mode=launches runs it launch by launch")
        << "graph '" << graph->name << "' cannot run "
        << (options.mode == launch::GraphMode::CudaGraph ? "as a CUDA graph" : "as one persistent kernel") << " on "
        << launch::describeDevice(*opened.runtime);
    return ExitUserError;
  }
  if (!launch::runGraphOnGpu(*opened.runtime, *graph, *host, options, diags))
    return ExitUserError;
  return launch::writeBack(*host, diags) ? ExitSuccess : ExitUserError;
}

int run(int argc, char **argv, DiagnosticEngine &diags) {
  // --help and --version answer whatever else the command line holds.
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kHelp;
      return ExitSuccess;
    }
    if (a == "--version") {
      std::cout << "kiln-run (Kiln) " << KILN_VERSION << "\n";
      return ExitSuccess;
    }
  }
  Options o;
  ArgParser parser(diags);
  bool ok = parser.parse(argc, argv, o);
  if (o.positional.empty()) {
    diags.error(Location::commandLine(), DiagCode::BadOption)
            .hint("kiln-run BUNDLE.kbin --grid X[,Y[,Z]] --arg NAME=VALUE ...; kiln-run --help shows more")
        << "no bundle given";
    ok = false;
  }
  for (size_t i = 1; i < o.positional.size(); ++i) {
    diags.error(Location::commandLine(), DiagCode::BadOption)
            .hint("kiln-run runs one bundle; arguments go in --arg NAME=VALUE")
        << "unexpected argument '" << o.positional[i] << "'";
    ok = false;
  }
  if (o.describe && (o.grid || !o.args.empty() || o.repeat || o.time)) {
    diags.error(Location::commandLine(), DiagCode::BadOption).hint("leave out --grid, --arg, --repeat and --time")
        << "--describe prints the bundle and runs nothing";
    ok = false;
  }
  uint64_t repeat = 1;
  if (o.repeat) {
    bool overflow = false;
    auto n = launch::parseIntLiteral(*o.repeat, overflow);
    if (!n || *n < 1 || *n > 1'000'000'000) {
      diags.error(Location::commandLine(), DiagCode::BadOption).hint("e.g. --repeat 100")
          << "--repeat needs a count from 1 to 1000000000, got '" << *o.repeat << "'";
      ok = false;
    } else {
      repeat = static_cast<uint64_t>(*n);
    }
  }
  std::optional<launch::GpuKind> gpu = launch::parseGpuKind(o.device);
  if (!gpu) {
    diags.error(Location::commandLine(), DiagCode::RunArgument).hint("write --device auto, --device cuda or --device ze")
        << "unknown device '" << o.device << "'";
    ok = false;
  }
  if (o.positional.empty())
    return ExitUserError;

  // The bundle: read once, parsed here for its signature, loaded from the same bytes.
  const std::string &path = o.positional[0];
  std::string error;
  std::optional<std::vector<uint8_t>> bytes = rt::readBundleBytes(path, error);
  if (!bytes) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable) << error;
    return ExitUserError;
  }
  if (rt::isGraphBundle(*bytes))
    return ok ? runGraph(path, o, *gpu, repeat, diags) : ExitUserError;
  if (o.graphMode || o.trace) {
    diags.error(Location::commandLine(), DiagCode::BadOption).hint("leave out --graph-mode and --trace")
        << "--graph-mode and --trace are for graph bundles, and '" << path << "' is not one";
    ok = false;
  }
  std::optional<std::array<int64_t, 3>> grid;
  if (!o.describe) {
    if (!o.grid)
      diags.error(Location::commandLine(), DiagCode::BadGrid).hint("e.g. --grid 128 or --grid 16,16")
          << "kiln-run needs --grid";
    else
      grid = launch::parseGrid(*o.grid, diags);
    ok &= grid.has_value();
  }
  std::optional<rt::Bundle> bundle = rt::parseBundle(*bytes, error);
  if (!bundle) {
    diags.error(Location::commandLine(), DiagCode::BadBundle)
            .hint("make the bundle again: dslc KERNEL.kiln --kernel NAME --emit=bundle -o " + path)
        << "'" << path << "' is not a usable Kiln bundle: " << error;
    return ExitUserError;
  }
  if (!ok)
    return ExitUserError;
  if (o.describe) {
    describe(path, *bundle, std::cout);
    std::cout.flush();
    return ExitSuccess;
  }

  std::optional<launch::HostArguments> host = launch::bindArguments(launch::signatureOf(*bundle), o.args, diags);
  if (!host || !refusePredicateMasks(*host, diags))
    return ExitUserError;

  launch::OpenedRuntime opened = launch::openRuntime(*gpu);
  if (!opened.runtime) {
    launch::reportRuntimeError(diags, opened.status, opened.error,
                               *gpu == launch::GpuKind::Auto
                                   ? "kiln-run needs a CUDA or Level Zero driver; `dslc run --device interp` runs a "
                                     "kernel's source on the CPU"
                                   : "--device auto tries every GPU API");
    return ExitUserError;
  }
  launch::GpuLaunchOptions launchOptions;
  launchOptions.grid = *grid;
  launchOptions.repeat = repeat;
  launchOptions.time = o.time;
  launchOptions.timeOut = &std::cout;
  launchOptions.tool = "kiln-run";
  if (!launch::runBundle(*opened.runtime, *bytes, *host, launchOptions, diags))
    return ExitUserError;
  return launch::writeBack(*host, diags) ? ExitSuccess : ExitUserError;
}

} // namespace

int main(int argc, char **argv) {
  SourceManager sources;
  DiagnosticEngine diags(sources, std::cerr, scanFormat(argc, argv));
  diags.setToolName("kiln-run");
  try {
    int status = run(argc, argv, diags);
    if (!finishStdout(diags) && status == ExitSuccess)
      status = ExitUserError;
    return status;
  } catch (const std::bad_alloc &) {
    diags.error(Location::commandLine(), DiagCode::InputTooLarge) << "out of host memory";
    return ExitUserError;
  } catch (const std::exception &e) {
    std::cerr << "kiln-run: internal error: " << e.what() << "\n"
              << "  — this is a bug in Kiln; please report it with the command line.\n";
    return ExitInternalError;
  }
}
