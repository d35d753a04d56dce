//===- Driver.cpp - Loading inputs, writing outputs -----------------------===//
#include "tools/driver/Driver.h"

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "support/ReadFile.h"

#include <iostream>

namespace kiln::driver {

bool isTirFile(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".tir") == 0;
}

std::unique_ptr<ir::Module> loadModule(const std::string &path, const SemaOptions &options,
                                       std::shared_ptr<SourceManager> sources,
                                       DiagnosticEngine &diags, TimingReport *timing) {
  if (!isTirFile(path)) {
    TimingReport::Scope timer(timing, "frontend: parse, check and lower to Tile IR");
    return compileFileToTileIR(path, diags, options, std::move(sources));
  }
  std::string why;
  std::optional<std::string> text = readWholeFile(path, why);
  if (!text) {
    diags.error(Location::commandLine(), DiagCode::FileNotReadable) << "cannot read '" << path << "': " << why;
    return nullptr;
  }
  uint32_t file = sources->addBuffer(path, std::move(*text));
  std::unique_ptr<ir::Module> module;
  {
    TimingReport::Scope timer(timing, "tir: parse");
    module = ir::parseTir(sources, file, diags);
  }
  if (!module)
    return nullptr;
  TimingReport::Scope timer(timing, "tir: verify");
  if (!ir::verifyModule(*module, diags))
    return nullptr;
  if (options.kernel) {
    // Keep only the requested kernel, as for Kiln source.
    auto &ks = module->kernels;
    std::erase_if(ks, [&](const std::unique_ptr<ir::Kernel> &k) { return k->name != *options.kernel; });
    if (ks.empty()) {
      diags.error(Location::commandLine(), DiagCode::UnknownKernel)
          << "no kernel named '" << *options.kernel << "' in '" << path << "'";
      return nullptr;
    }
  }
  return module;
}

bool parseDefines(const std::vector<std::string> &raw,
                  std::vector<std::pair<std::string, std::string>> &out, DiagnosticEngine &diags) {
  bool ok = true;
  for (const std::string &d : raw) {
    size_t eq = d.find('=');
    std::string name = d.substr(0, eq);
    bool validName = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name)
      validName &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (eq == std::string::npos || !validName || eq + 1 == d.size()) {
      diags.error(Location::commandLine(), DiagCode::BadConstOverride)
              .hint("write -D NAME=VALUE, e.g. -D BLOCK=256")
          << "malformed -D '" << d << "'";
      ok = false;
      continue;
    }
    out.emplace_back(name, d.substr(eq + 1));
  }
  return ok;
}

int reportInternalCompilerError(const InternalCompilerError &error, const char *tool) {
  std::cerr << tool << ": internal compiler error: " << error.what() << "\n"
            << "  (raised at " << error.file << ":" << error.line
            << ") — this is a bug in Kiln, not in your program; please report it with the input.\n";
  return ExitInternalError;
}

} // namespace kiln::driver
