//===- BundleMetadata.h - The text metadata block of a bundle ----*- C++ -*-===//
//
// Internal to the bundle reader and writer. The metadata is plain text so that
// `strings k.kbin` or a hex dump shows what a bundle holds:
//
//   kernel softmax
//   entry softmax
//   param x *f32
//   param n i32
//   block_mask m 4 8 2      (one per block_mask parameter: NAME BM BN FIRST, the index of m.rows)
//   const BLOCK int 1024
//   num_warps 4
//   shared_bytes 0
//   grid_split 4            (only a kernel whose reduction is split over programs)
//   workspace_bytes 2192    (only with grid_split: per program asked for)
//   cluster_size 4          (instead of workspace_bytes: the split runs in clusters)
//   checked 1               (only a kernel compiled in checked mode)
//   target sm_90
//   compiler 0.1.0
//   source_hash 9c1f...
//   source 12 1 examples/softmax.kiln
//
// Every line is `key value`, ends in '\n', and holds no other control character.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Bundle.h"

#include <charconv>
#include <span>
#include <string>
#include <string_view>

namespace kiln::rt {

/// The metadata text of a bundle (fields only; sections are not part of it). The bundle
/// must already be valid.
std::string encodeBundleMetadata(const Bundle &bundle);

/// Fills the fields of `out` (not its sections) from metadata text. Checks syntax and
/// that every required key appears once; the meaning is left to validateBundle().
bool decodeBundleMetadata(std::string_view text, Bundle &out, std::string &error);

// The pieces of the metadata text that graph bundles (GraphBundle.cpp) share.

/// A Kiln identifier of at most the length the format allows.
bool isIdentifier(std::string_view s);
/// Free text without control characters: always exactly one metadata line.
bool isPlainText(std::string_view s);
bool isLowerHex(std::string_view s);
/// The shortest text that reads back as `v`.
std::string formatDouble(double v);
/// Splits off the first space-separated word of `rest`.
std::string_view nextWord(std::string_view &rest);
bool parseDouble(std::string_view s, double &out);
/// "x *f32 div 16" (the text after `param `).
bool parseParam(std::string_view rest, BundleParam &p);
/// "m 4 8 2 @1 =64" (the text after `block_mask `): NAME BM BN FIRST and, when the
/// mask declares its extents, each as `@P` (parameter P's value) or `=N`.
std::string blockMaskText(const BundleBlockMask &mask);
bool parseBlockMask(std::string_view rest, BundleBlockMask &mask);
/// "" when every mask of `masks` covers five parameters of `params` named and typed as
/// support/BlockMask.h says, none shared, with valid block sizes and extents; else the
/// first problem. `maskOf` gets, per parameter, the mask covering it (or null).
/// `owner` ("kernel", "graph") names what the parameters belong to in messages.
std::string validateBlockMasks(const std::vector<BundleParam> &params, std::span<const BundleBlockMask> masks,
                               std::string_view owner, std::vector<const BundleBlockMask *> &maskOf);

template <typename Int> bool parseInt(std::string_view s, Int &out) {
  if (s.empty() || s.size() > 24)
    return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

} // namespace kiln::rt
