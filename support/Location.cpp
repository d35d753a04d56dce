//===- Location.cpp - SourceManager ---------------------------------------===//
#include "support/Location.h"

#include "support/ReadFile.h"


namespace kiln {

uint32_t SourceManager::addBuffer(std::string name, std::string text) {
  // A UTF-8 byte-order mark is not part of the program: drop it so that columns count
  // from the first real character.
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    text.erase(0, 3);
  if (auto existing = find(name)) {
    File &f = files_[*existing];
    if (!f.text) {
      f.text = std::move(text);
      f.triedLoad = true;
      f.lineStarts.clear();
      return *existing;
    }
  }
  File f;
  f.name = std::move(name);
  f.text = std::move(text);
  f.triedLoad = true;
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size() - 1);
}

uint32_t SourceManager::addName(std::string name) {
  if (auto existing = find(name))
    return *existing;
  File f;
  f.name = std::move(name);
  files_.push_back(std::move(f));
  return static_cast<uint32_t>(files_.size() - 1);
}

std::optional<uint32_t> SourceManager::find(std::string_view name) const {
  for (size_t i = 0; i < files_.size(); ++i)
    if (files_[i].name == name)
      return static_cast<uint32_t>(i);
  return std::nullopt;
}

std::string_view SourceManager::name(uint32_t file) const {
  if (file >= files_.size())
    return "<unknown>";
  return files_[file].name;
}

const std::string *SourceManager::text(uint32_t file) {
  if (file >= files_.size())
    return nullptr;
  File &f = files_[file];
  if (!f.text && !f.triedLoad) {
    f.triedLoad = true;
    f.text = readWholeFile(f.name, f.readError);
    if (f.text && f.text->compare(0, 3, "\xEF\xBB\xBF") == 0)
      f.text->erase(0, 3);
  }
  return f.text ? &*f.text : nullptr;
}

std::string_view SourceManager::readError(uint32_t file) const {
  return file < files_.size() && !files_[file].text ? std::string_view(files_[file].readError) : std::string_view();
}

std::optional<std::string_view> SourceManager::lineText(uint32_t file, uint32_t line) {
  const std::string *t = text(file);
  if (!t || line == 0)
    return std::nullopt;
  File &f = files_[file];
  if (f.lineStarts.empty()) {
    f.lineStarts.push_back(0);
    for (size_t i = 0; i < t->size(); ++i)
      if ((*t)[i] == '\n')
        f.lineStarts.push_back(i + 1);
  }
  if (line > f.lineStarts.size())
    return std::nullopt;
  size_t begin = f.lineStarts[line - 1];
  size_t end = t->find('\n', begin);
  if (end == std::string::npos)
    end = t->size();
  if (end > begin && (*t)[end - 1] == '\r')
    --end;
  return std::string_view(*t).substr(begin, end - begin);
}

std::string formatLocation(SourceManager &sm, Location loc) {
  if (loc.isCommandLine())
    return "dslc";
  std::string out(loc.file < sm.size() ? sm.name(loc.file) : "<unknown>");
  if (loc.line) {
    out += ":" + std::to_string(loc.line);
    if (loc.col)
      out += ":" + std::to_string(loc.col);
  }
  return out;
}

} // namespace kiln
