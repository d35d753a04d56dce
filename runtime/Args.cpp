//===- Args.cpp - Checking and packing launch arguments -------------------===//
//
// A scalar argument is accepted when its value survives the conversion to the
// parameter's dtype exactly. That is stricter than C's implicit conversions on purpose:
// a silently truncated size or a rounded scale factor gives wrong results far from the
// call that caused them, while a refused launch names the parameter at once.
//
//===----------------------------------------------------------------------===//
#include "runtime/Args.h"
#include "runtime/DTypes.h"
#include "support/BlockMask.h"
#include "support/FloatFormats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::rt {

std::span<void *const> PackedArgs::pointers() {
  pointers_.clear();
  for (uint64_t &s : slots)
    pointers_.push_back(&s);
  return pointers_;
}

// For each parameter, the block mask that starts there (nullptr for the others). A mask
// that would reach past the parameters (validateBundle refuses such a bundle) starts
// nowhere, so whatever parameters it names are passed one by one.
static std::vector<const BundleBlockMask *> maskStarts(const std::vector<BundleParam> &params,
                                                       std::span<const BundleBlockMask> masks) {
  std::vector<const BundleBlockMask *> start(params.size(), nullptr);
  for (const BundleBlockMask &m : masks)
    if (size_t(m.firstParam) + kBlockMaskParams <= params.size())
      start[m.firstParam] = &m;
  return start;
}

// "mask: block_mask<4, 8>"
static std::string maskSpelling(const BundleBlockMask &m) {
  return m.name + ": block_mask<" + std::to_string(m.blockRows) + ", " + std::to_string(m.blockCols) + ">";
}

std::string signatureString(const std::string &kernelName, const std::vector<BundleParam> &params,
                            std::span<const BundleBlockMask> masks) {
  std::vector<const BundleBlockMask *> start = maskStarts(params, masks);
  std::string s = kernelName + "(";
  bool first = true;
  for (size_t i = 0; i < params.size(); ++i) {
    s += first ? "" : ", ";
    first = false;
    if (start[i]) {
      s += maskSpelling(*start[i]);
      i += kBlockMaskParams - 1;
    } else {
      s += params[i].name + ": " + paramTypeSpelling(params[i].dtype, params[i].pointer);
    }
  }
  return s + ")";
}

static std::string formatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// How an argument reads in a message: "an integer (5)", "a device buffer", ...
static std::string describeArg(const kiln_arg &a) {
  switch (a.kind) {
  case KILN_ARG_BUFFER: return "a device buffer";
  case KILN_ARG_INT: return "an integer (" + std::to_string(a.value.i) + ")";
  case KILN_ARG_UINT: return "an integer (" + std::to_string(a.value.u) + ")";
  case KILN_ARG_FLOAT: return "a float (" + formatDouble(a.value.f) + ")";
  case KILN_ARG_BOOL: return std::string("a bool (") + (a.value.b ? "true" : "false") + ")";
  case KILN_ARG_BLOCK_MASK: return "a block mask";
  case KILN_ARG_KIND_MAX_ENUM: break;
  }
  return "an argument of unknown kind " + std::to_string(static_cast<int>(a.kind));
}

// The range of an integer dtype as [lo, hi], with hi in unsigned to fit u64.
struct IntRange {
  int64_t lo;
  uint64_t hi;
};
static IntRange intRange(DType t) {
  unsigned bits = dtypeSizeBytes(t) * 8;
  if (dtypeIsSigned(t))
    return {bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1)),
            (uint64_t(1) << (bits - 1)) - 1};
  return {0, bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t(1) << bits) - 1};
}

// Stores the low `bytes` bytes of `v` at the start of the slot (the host is
// little-endian, as every GPU host the runtime targets is).
static void storeBits(uint64_t &slot, uint64_t v, unsigned bytes) {
  slot = 0;
  std::memcpy(&slot, &v, bytes);
}

// An integer argument as an exact double, or nullopt when a double cannot hold it.
static std::optional<double> exactDouble(const kiln_arg &a) {
  if (a.kind == KILN_ARG_INT) {
    double d = static_cast<double>(a.value.i);
    // 2^63 itself is out of int64 range, so compare before converting back.
    if (d >= 9223372036854775808.0 || static_cast<int64_t>(d) != a.value.i)
      return std::nullopt;
    return d;
  }
  double d = static_cast<double>(a.value.u);
  if (d >= 18446744073709551616.0 || static_cast<uint64_t>(d) != a.value.u)
    return std::nullopt;
  return d;
}

// Packs a float-dtype parameter. Returns "" or the reason it is refused.
static std::string packFloat(DType t, double v, uint64_t &slot) {
  // Checked first: narrowing an out-of-range double to float is undefined behaviour.
  if (t == DType::F32 && std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())
    return formatDouble(v) + " is outside the range of f32";
  if (!std::isnan(v) && roundToFloatDType(t, v) != v)
    return formatDouble(v) + " cannot be represented exactly as " + std::string(dtypeSpelling(t)) +
           " (nearest: " + formatDouble(roundToFloatDType(t, v)) + ")";
  switch (t) {
  case DType::F64: {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    storeBits(slot, bits, 8);
    break;
  }
  case DType::F32: {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    storeBits(slot, bits, 4);
    break;
  }
  case DType::F16: storeBits(slot, doubleToF16Bits(v), 2); break;
  case DType::BF16: storeBits(slot, doubleToBF16Bits(v), 2); break;
  case DType::F8E4M3: storeBits(slot, doubleToF8E4M3Bits(v), 1); break;
  case DType::F8E5M2: storeBits(slot, doubleToF8E5M2Bits(v), 1); break;
  case DType::Bool:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64: return "internal error: not a float dtype";
  }
  return "";
}

// Packs an integer-dtype parameter from an INT or UINT argument.
static std::string packInt(DType t, const kiln_arg &a, uint64_t &slot) {
  IntRange r = intRange(t);
  bool fits =
      a.kind == KILN_ARG_INT ? a.value.i >= r.lo && (a.value.i < 0 || uint64_t(a.value.i) <= r.hi) : a.value.u <= r.hi;
  if (!fits)
    return (a.kind == KILN_ARG_INT ? std::to_string(a.value.i) : std::to_string(a.value.u)) + " does not fit in " +
           std::string(dtypeSpelling(t)) + " (range " + std::to_string(r.lo) + ".." + std::to_string(r.hi) + ")";
  uint64_t bits = a.kind == KILN_ARG_INT ? static_cast<uint64_t>(a.value.i) : a.value.u;
  storeBits(slot, bits, dtypeSizeBytes(t));
  return "";
}

static std::string packBuffer(const BundleParam &p, const kiln_arg &a, const BufferResolver &resolve, uint64_t &slot) {
  std::string why;
  std::optional<BufferRef> buf = resolve(a.value.buffer.buffer, why);
  if (!buf)
    return why;
  uint64_t offset = a.value.buffer.offset;
  if (offset > buf->size)
    return "offset " + std::to_string(offset) + " is past the end of the " + std::to_string(buf->size) + "-byte buffer";
  if (buf->dtype && *buf->dtype != p.dtype)
    return "the buffer holds " + std::string(dtypeSpelling(*buf->dtype)) + " elements but the parameter is " +
           paramTypeSpelling(p.dtype, true);
  if (offset % dtypeSizeBytes(p.dtype) != 0)
    return "offset " + std::to_string(offset) + " is not a multiple of the " + std::string(dtypeSpelling(p.dtype)) +
           " element size (" + std::to_string(dtypeSizeBytes(p.dtype)) + " bytes)";
  if ((buf->address + offset) % p.divisibility != 0)
    return "the kernel was compiled for addresses aligned to " + std::to_string(p.divisibility) +
           " bytes, and this one (buffer offset " + std::to_string(offset) + ") is not";
  storeBits(slot, buf->address + offset, 8);
  return "";
}

// Checks and packs one argument; returns "" or the reason it is refused.
static std::string packOne(const BundleParam &p, const kiln_arg &a, const BufferResolver &resolve, uint64_t &slot) {
  // Spelled only for a message: a launch that packs its arguments builds no string.
  auto type = [&] { return paramTypeSpelling(p.dtype, p.pointer); };
  bool known = a.kind == KILN_ARG_BUFFER || a.kind == KILN_ARG_INT || a.kind == KILN_ARG_UINT ||
               a.kind == KILN_ARG_FLOAT || a.kind == KILN_ARG_BOOL || a.kind == KILN_ARG_BLOCK_MASK;
  if (!known)
    return describeArg(a) + " was passed";
  if (p.pointer) {
    if (a.kind != KILN_ARG_BUFFER)
      return "the parameter is " + type() + " and takes a device buffer, got " + describeArg(a);
    return packBuffer(p, a, resolve, slot);
  }
  if (a.kind == KILN_ARG_BUFFER || a.kind == KILN_ARG_BLOCK_MASK)
    return "the parameter is the scalar " + type() + ", got " + describeArg(a);
  if (p.dtype == DType::Bool) {
    if (a.kind != KILN_ARG_BOOL)
      return "the parameter is bool and takes a bool, got " + describeArg(a);
    storeBits(slot, a.value.b ? 1 : 0, 1);
    return "";
  }
  if (a.kind == KILN_ARG_BOOL)
    return "the parameter is " + type() + ", got " + describeArg(a);
  if (dtypeIsFloat(p.dtype)) {
    if (a.kind == KILN_ARG_FLOAT)
      return packFloat(p.dtype, a.value.f, slot);
    std::optional<double> d = exactDouble(a);
    if (!d)
      return describeArg(a) + " cannot be represented exactly as " + type();
    return packFloat(p.dtype, *d, slot);
  }
  if (a.kind == KILN_ARG_FLOAT)
    return "the parameter is the integer " + type() + ", got " + describeArg(a);
  std::string why = packInt(p.dtype, a, slot);
  // Two's complement keeps divisibility by a power of two, so the raw bits decide it.
  uint64_t bits = a.kind == KILN_ARG_INT ? static_cast<uint64_t>(a.value.i) : a.value.u;
  if (why.empty() && bits % p.divisibility != 0)
    return "the kernel was compiled for values that are multiples of " + std::to_string(p.divisibility) +
           ", got " + (a.kind == KILN_ARG_INT ? std::to_string(a.value.i) : std::to_string(a.value.u)) +
           " (compile it without that assumption to launch it with this value)";
  return why;
}

// The prefix of a message about argument `index` (0-based), passed for `what`.
// `owner` is "kernel 'k'" or "graph 'g'".
static std::string argumentContext(const std::string &owner, size_t index, const std::string &what) {
  return owner + ", argument " + std::to_string(index + 1) + " ('" + what + "'): ";
}

// The five parts of the mask argument `a` for `mask` (KILN_ARG_BLOCK_MASK, resolved
// through `resolveMask`): its extents as integers, its three arrays as buffers. Its
// block sizes must be the parameter's.
static std::optional<ArgsError> maskParts(const std::string &owner, const std::string &context,
                                          const BundleBlockMask &mask, const kiln_arg &a,
                                          const MaskResolver &resolveMask, kiln_arg (&parts)[kBlockMaskParams]) {
  std::string why;
  std::optional<MaskRef> ref;
  if (!resolveMask)
    why = "this launcher takes a block mask only as its five parts";
  else
    ref = resolveMask(a.value.mask, why);
  if (!ref)
    return ArgsError{KILN_ERROR_INVALID_VALUE, context + why};
  if (uint32_t(ref->blockRows) != mask.blockRows || uint32_t(ref->blockCols) != mask.blockCols)
    return ArgsError{KILN_ERROR_INVALID_VALUE, owner + " takes " + maskSpelling(mask) + ", but the mask has " +
                                                   std::to_string(ref->blockRows) + " x " +
                                                   std::to_string(ref->blockCols) + " blocks"};
  parts[0] = parts[1] = kiln_arg{};
  parts[0].kind = parts[1].kind = KILN_ARG_INT;
  parts[0].value.i = ref->rows;
  parts[1].value.i = ref->cols;
  const kiln_buffer *arrays[3] = {ref->rowStart, ref->blocks, ref->bitmaps};
  for (unsigned i = 0; i < 3; ++i) {
    parts[2 + i] = kiln_arg{};
    parts[2 + i].kind = KILN_ARG_BUFFER;
    parts[2 + i].value.buffer.buffer = arrays[i];
  }
  return std::nullopt;
}

// Checks the mask argument `a` against `mask` and packs its five parts into the slots
// from mask.firstParam on.
static std::optional<ArgsError> packMask(const std::string &kernelName, const std::vector<BundleParam> &params,
                                         const BundleBlockMask &mask, size_t argIndex, const kiln_arg &a,
                                         const BufferResolver &resolve, const MaskResolver &resolveMask,
                                         PackedArgs &out) {
  const std::string context = argumentContext("kernel '" + kernelName + "'", argIndex, maskSpelling(mask));
  kiln_arg parts[kBlockMaskParams];
  if (auto error = maskParts("kernel '" + kernelName + "'", context, mask, a, resolveMask, parts))
    return error;
  // The parts go through the same checks as parts passed one by one, so a kernel
  // compiled with assumptions about them (divisibility) is held to them either way.
  for (unsigned i = 0; i < kBlockMaskParams; ++i) {
    const size_t slot = mask.firstParam + i;
    const BundleParam &p = params[slot];
    if (std::string bad = packOne(p, parts[i], resolve, out.slots[slot]); !bad.empty())
      return ArgsError{KILN_ERROR_ARGUMENT_MISMATCH,
                       context + "its part '" + p.name + ": " + paramTypeSpelling(p.dtype, p.pointer) + "': " + bad};
    out.sizes[slot] = p.pointer ? 8 : dtypeSizeBytes(p.dtype);
  }
  return std::nullopt;
}

// The integer in `slot`, packed for parameter `p` (the value at the slot's start).
static int64_t slotInteger(const BundleParam &p, uint64_t slot) {
  const unsigned bits = dtypeSizeBytes(p.dtype) * 8;
  if (bits >= 64)
    return static_cast<int64_t>(slot);
  const uint64_t low = slot & ((uint64_t(1) << bits) - 1);
  const bool isSigned = p.dtype == DType::I8 || p.dtype == DType::I16 || p.dtype == DType::I32;
  return isSigned && (low >> (bits - 1)) ? static_cast<int64_t>(low | ~((uint64_t(1) << bits) - 1))
                                         : static_cast<int64_t>(low);
}

// Checks every mask with declared extents (block_mask<BM, BN, ROWS, COLS>) against them:
// the rows and cols it was passed, whole or as parts, against the constants or the
// values of the parameters `owner` names. `valueOf(i)` is parameter i's integer value.
template <typename ValueOf>
static std::optional<ArgsError> checkMaskExtents(const std::string &owner, std::string_view ownerKind,
                                                 const std::vector<BundleParam> &params,
                                                 std::span<const BundleBlockMask> masks, ValueOf valueOf) {
  for (const BundleBlockMask &m : masks) {
    if (!m.extents || size_t(m.firstParam) + 2 > params.size())
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      const BlockMaskExtent &e = (*m.extents)[i];
      if (e.param >= 0 && size_t(e.param) >= params.size())
        continue; // the bundle's reader refuses this
      const int64_t actual = valueOf(m.firstParam + i);
      const int64_t expected = e.param < 0 ? e.value : valueOf(size_t(e.param));
      if (actual == expected)
        continue;
      const char *what = i == 0 ? "rows" : "columns";
      return ArgsError{KILN_ERROR_INVALID_VALUE,
                       owner + ": block mask '" + m.name + "' has " + std::to_string(actual) + " " + what +
                           ", but the " + std::string(ownerKind) + " declares " +
                           (e.param < 0 ? std::to_string(expected)
                                        : params[size_t(e.param)].name + " = " + std::to_string(expected)) +
                           " " + what + " for it"};
    }
  }
  return std::nullopt;
}

// Whether `args` are as many as `params` take, a mask standing for one argument (a
// KILN_ARG_BLOCK_MASK at its first parameter) or five.
static std::optional<ArgsError> checkCount(const std::string &owner, const std::string &name,
                                           const std::vector<BundleParam> &params,
                                           std::span<const BundleBlockMask> masks, std::span<const kiln_arg> args,
                                           const std::vector<const BundleBlockMask *> &start) {
  size_t param = 0, arg = 0;
  for (; param < params.size() && arg < args.size(); ++arg)
    param += start[param] && args[arg].kind == KILN_ARG_BLOCK_MASK ? kBlockMaskParams : 1;
  if (param == params.size() && arg == args.size())
    return std::nullopt;
  const size_t numMasks = params.size() - size_t(std::count(start.begin(), start.end(), nullptr));
  const size_t expected = params.size() - (kBlockMaskParams - 1) * numMasks;
  return ArgsError{KILN_ERROR_ARGUMENT_MISMATCH,
                   owner + " takes " + std::to_string(expected) + " argument" + (expected == 1 ? "" : "s") + ", got " +
                       std::to_string(args.size()) +
                       (expected == params.size() ? ""
                                                  : " (a block mask is one argument, or five: its rows, cols, "
                                                    "row_start, blocks and bitmaps)") +
                       "; its signature is " + signatureString(name, params, masks)};
}

std::optional<ArgsError> packLaunchArgs(const std::string &kernelName, const std::vector<BundleParam> &params,
                                        std::span<const BundleBlockMask> masks, std::span<const kiln_arg> args,
                                        const BufferResolver &resolve, const MaskResolver &resolveMask,
                                        PackedArgs &out) {
  out.slots.assign(params.size(), 0);
  out.sizes.assign(params.size(), 0);
  const std::vector<const BundleBlockMask *> start = maskStarts(params, masks);
  const std::string owner = "kernel '" + kernelName + "'";
  // The count first: with a mask standing for one or five arguments, it depends on the
  // kinds of the arguments at the masks' positions.
  if (auto error = checkCount(owner, kernelName, params, masks, args, start))
    return error;
  for (size_t param = 0, arg = 0; param < params.size(); ++arg) {
    if (start[param] && args[arg].kind == KILN_ARG_BLOCK_MASK) {
      if (auto error = packMask(kernelName, params, *start[param], arg, args[arg], resolve, resolveMask, out))
        return error;
      param += kBlockMaskParams;
      continue;
    }
    const BundleParam &p = params[param];
    if (std::string why = packOne(p, args[arg], resolve, out.slots[param]); !why.empty())
      return ArgsError{KILN_ERROR_ARGUMENT_MISMATCH,
                       argumentContext(owner, arg, p.name + ": " + paramTypeSpelling(p.dtype, p.pointer)) + why};
    out.sizes[param] = p.pointer ? 8 : dtypeSizeBytes(p.dtype);
    ++param;
  }
  return checkMaskExtents(owner, "kernel", params, masks,
                          [&](size_t i) { return slotInteger(params[i], out.slots[i]); });
}

std::optional<ArgsError> expandMaskArgs(const std::string &graphName, const std::vector<BundleParam> &params,
                                        std::span<const BundleBlockMask> masks, std::span<const kiln_arg> args,
                                        const MaskResolver &resolveMask, std::vector<kiln_arg> &out) {
  out.clear();
  const std::vector<const BundleBlockMask *> start = maskStarts(params, masks);
  const std::string owner = "graph '" + graphName + "'";
  if (auto error = checkCount(owner, graphName, params, masks, args, start))
    return error;
  for (size_t param = 0, arg = 0; param < params.size(); ++arg) {
    if (start[param] && args[arg].kind == KILN_ARG_BLOCK_MASK) {
      kiln_arg parts[kBlockMaskParams];
      const std::string context = argumentContext(owner, arg, maskSpelling(*start[param]));
      if (auto error = maskParts(owner, context, *start[param], args[arg], resolveMask, parts))
        return error;
      out.insert(out.end(), std::begin(parts), std::end(parts));
      param += kBlockMaskParams;
      continue;
    }
    out.push_back(args[arg]);
    ++param;
  }
  // Integer arguments only: one that is not is refused, by name, when the graph's
  // arguments are read; until then it counts as a value no extent has.
  auto valueOf = [&](size_t i) -> int64_t {
    const kiln_arg &a = out[i];
    return a.kind == KILN_ARG_INT ? a.value.i
           : a.kind == KILN_ARG_UINT && a.value.u <= uint64_t(INT64_MAX) ? int64_t(a.value.u)
                                                                         : -1;
  };
  return checkMaskExtents(owner, "graph", params, masks, valueOf);
}

} // namespace kiln::rt
