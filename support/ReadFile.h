//===- ReadFile.h - A whole input file into memory --------------*- C++ -*-===//
//
// Every tool reads its inputs (Kiln source, imports, Tile IR text) through this one
// function, so that each refuses the same things with the same words: a directory, a
// file it may not read, and one that never ends (/dev/zero) or is far larger than any
// program, which would otherwise hang or fill memory before any limit is checked.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

/// The most bytes of one input file the tools read: well above the parser's limit
/// (ParseLimits, 16 MiB), which then reports the size of anything between the two.
inline constexpr size_t kMaxInputFileBytes = size_t(64) << 20;

/// The contents of the file at `path`, at most `maxBytes` of them. nullopt, with
/// `error` saying why ("Is a directory", "No such file or directory", "more than N
/// bytes"), when it cannot be read whole. `enough`, when given, sees what was read so
/// far after each piece; once it returns true the read stops there and returns that
/// much (a reader that knows from the first bytes that the file is not for it).
std::optional<std::string> readWholeFile(const std::string &path, std::string &error,
                                         size_t maxBytes = kMaxInputFileBytes,
                                         const std::function<bool(std::string_view)> &enough = {});

} // namespace kiln
