//===- ReadFile.h - A whole input file into memory --------------*- C++ -*-===//
//
// Every tool reads its inputs (Kiln source, imports, Tile IR text, bundles, .npy
// buffers, cache entries) through this file, so that each refuses the same things with
// the same words: a directory, a file it may not read, and anything that is not a
// regular file. A FIFO would block the reader forever waiting for a writer, and a
// device such as /dev/zero never ends; both are refused before a byte is read, and the
// open itself never blocks. A regular file far larger than any program is refused at a
// bound, so that a wrong path cannot fill memory.
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

/// Opens `path` for reading when it names a regular file (through symbolic links),
/// without ever blocking: returns the descriptor (close-on-exec, blocking reads), or -1
/// with `error` saying why ("Is a directory", "No such file or directory", "not a
/// regular file (a FIFO)").
int openRegularFile(const std::string &path, std::string &error);

/// The contents of the regular file at `path`, at most `maxBytes` of them. nullopt,
/// with `error` saying why (as openRegularFile, or "more than N bytes"), when it cannot
/// be read whole. `enough`, when given, sees what was read so far after each piece;
/// once it returns true the read stops there and returns that much (a reader that
/// knows from the first bytes that the file is not for it).
std::optional<std::string> readWholeFile(const std::string &path, std::string &error,
                                         size_t maxBytes = kMaxInputFileBytes,
                                         const std::function<bool(std::string_view)> &enough = {});

} // namespace kiln
