//===- Imports.cpp - Loading a file and everything it imports -------------===//
//
// `import "path";` is resolved against the importing file's folder, then each -I
// folder in order. Files are identified by their canonical path, so a file reached by
// two routes is loaded (and its items declared) once; a file that imports itself
// through a chain is an error naming the chain. All loaded files share one namespace
// of items: the main file's items are declared last, so a clash is reported in the
// file being compiled, with a note at the imported definition.
//
//===----------------------------------------------------------------------===//
#include "frontend/SemaInternal.h"
#include "support/ReadFile.h"

#include <filesystem>

namespace kiln::sema {

namespace fs = std::filesystem;

namespace {

/// A loaded file's identity: its canonical path when it exists on disk, else its name.
std::string canonicalKey(const std::string &name) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::path(name), ec);
  return ec ? name : p.string();
}

std::string baseName(std::string_view name) {
  std::string s(name);
  return fs::path(s).filename().string();
}

struct Loader {
  Sema &s;
  std::map<std::string, bool> loaded; ///< canonical key -> loaded (true) or failed
  std::vector<std::pair<std::string, std::string>> stack; ///< (key, display name)
  std::vector<std::unique_ptr<ast::Module>> order;        ///< post-order
  bool ok = true;

  void load(uint32_t file) {
    std::string name(s.sources.name(file));
    std::string key = canonicalKey(name);
    loaded[key] = true;
    std::unique_ptr<ast::Module> m = parseFile(s.sources, file, s.diags, s.options.limits);
    if (!m) {
      ok = false;
      return;
    }
    stack.emplace_back(key, name);
    for (const auto &item : m->items)
      if (const auto *imp = ast::dyn_cast<ast::ImportItem>(item.get()))
        importFile(name, *imp);
    stack.pop_back();
    order.push_back(std::move(m));
  }

  void importFile(const std::string &importer, const ast::ImportItem &imp) {
    fs::path rel(imp.path);
    std::vector<fs::path> candidates;
    if (rel.is_absolute()) {
      candidates.push_back(rel);
    } else {
      candidates.push_back(fs::path(importer).parent_path() / rel);
      for (const auto &dir : s.options.includeDirs)
        candidates.push_back(fs::path(dir) / rel);
    }
    std::optional<fs::path> found;
    // The first candidate that exists is the import: a folder or a device there is
    // found, and then refused by the read with the reason (E0001), not reported as
    // missing.
    for (const auto &c : candidates) {
      std::error_code ec;
      if (fs::exists(c, ec)) {
        found = c.lexically_normal();
        break;
      }
    }
    if (!found) {
      std::string where;
      for (const auto &c : candidates)
        where += (where.empty() ? "" : ", ") + c.lexically_normal().string();
      s.error(imp.pathLoc, DiagCode::ImportNotFound,
              "cannot find imported file \"" + imp.path + "\" (looked for " + where + ")",
              "import paths are relative to the importing file; add folders with -I");
      ok = false;
      return;
    }
    std::string name = found->string();
    std::string key = canonicalKey(name);
    for (size_t i = 0; i < stack.size(); ++i)
      if (stack[i].first == key) {
        std::string chain;
        for (size_t j = i; j < stack.size(); ++j)
          chain += baseName(stack[j].second) + " -> ";
        chain += baseName(name);
        s.error(imp.pathLoc, DiagCode::ImportCycle, "import cycle: " + chain,
                "move the shared items into a file that both import");
        ok = false;
        return;
      }
    if (loaded.count(key))
      return; // reached by another route: already loaded once
    std::string why;
    std::optional<std::string> text = readWholeFile(name, why);
    if (!text) {
      s.error(imp.pathLoc, DiagCode::FileNotReadable, "cannot read imported file '" + name + "': " + why);
      ok = false;
      return;
    }
    uint32_t file = s.sources.addBuffer(name, std::move(*text));
    load(file);
  }
};

} // namespace

bool Sema::loadProgram(uint32_t main) {
  Loader loader{*this, {}, {}, {}};
  loader.load(main);
  files = std::move(loader.order);
  if (!loader.ok)
    return false;

  // Declare every item; imported files come first (post-order), the main file last.
  for (const auto &m : files)
    for (const auto &item : m->items) {
      std::string name;
      Location nameLoc;
      if (const auto *c = ast::dyn_cast<ast::ConstItem>(item.get())) {
        name = c->name;
        nameLoc = c->nameLoc;
      } else if (const auto *f = ast::dyn_cast<ast::FunctionItem>(item.get())) {
        name = f->name;
        nameLoc = f->nameLoc;
      } else {
        continue; // imports
      }
      auto [it, inserted] = globals.try_emplace(name);
      if (!inserted) {
        error(nameLoc, DiagCode::DuplicateItem, "'" + name + "' is already defined",
              "rename one of them",
              {note(it->second.nameLoc, "the other definition of '" + name + "' is here")});
        continue;
      }
      it->second.item = item.get();
      it->second.kind = item->kind;
      it->second.nameLoc = nameLoc;
    }
  return true;
}

} // namespace kiln::sema
