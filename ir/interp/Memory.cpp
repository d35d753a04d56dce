//===- Memory.cpp - Pointer arithmetic, loads, stores and atomics ---------===//
//
// Every lane that is not masked off is checked before it touches memory: the pointer
// must name a buffer that was passed to the kernel, the buffer's dtype must be the
// pointee dtype, and the element index must lie inside the buffer. Offsets are kept
// in elements, so an access can never be misaligned (E0603 cannot arise here).
// Lanes are applied in row-major order, which defines the result of stores and
// atomics that hit one address from several lanes.
//
// The hints of loads and stores (cache_modifier, eviction_policy) and the ordering of
// atomics (sem, scope) concern caches and other threads; one program running at a time
// needs neither, so they are not read.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace kiln::interp::detail {

//===--------------------------------------------------------------------===//
// Element access
//===--------------------------------------------------------------------===//

namespace {

/// Checks lanes of one op; remembers the last buffer so that a tile pointing into one
/// buffer (the common case) looks its size up once.
class Access {
public:
  Access(Machine &m, const PreparedOp &op, std::string what, DType pointee)
      : m_(m), op_(op), what_(std::move(what)), pointee_(pointee), elemBytes_(dtypeBytes(pointee)) {
  }

  /// The address of the element `ptr` points to, after checking it.
  std::byte *address(int64_t ptr, bool writing = false) {
    size_t b = pointerBuffer(ptr);
    if (b != cached_)
      switchTo(b);
    int64_t off = pointerOffset(ptr);
    if (off < 0 || off >= cachedElements_)
      outOfBounds(off);
    if (m_.options.observeAccess)
      m_.options.observeAccess(b, off, writing, m_.pid);
    return m_.memory[b].data.data() + off * elemBytes_;
  }

  Slot read(int64_t ptr) {
    uint64_t bits = 0; // little-endian host: the low bytes receive the element
    std::memcpy(&bits, address(ptr), elemBytes_);
    return fromStorageBits(pointee_, bits);
  }

  void write(int64_t ptr, Slot v) {
    std::byte *p = address(ptr, true);
    uint64_t bits = storageBits(pointee_, v);
    std::memcpy(p, &bits, elemBytes_);
    m_.written[cached_] = 1;
  }

private:
  void switchTo(size_t b) {
    if (b >= m_.memory.size() || !m_.bound[b])
      m_.fail(op_.op->loc(), DiagCode::OutOfBounds,
              what_ + " through a pointer that is not into any argument buffer in program " +
                  m_.programString());
    const Buffer &buf = m_.memory[b];
    if (buf.dtype != pointee_)
      m_.fail(op_.op->loc(), DiagCode::RunArgument,
              what_ + " of " + std::string(dtypeName(pointee_)) + " from buffer '" + buf.name +
                  "', which holds " + std::string(dtypeName(buf.dtype)));
    cached_ = b;
    cachedElements_ = buf.numElements();
  }

  [[noreturn]] void outOfBounds(int64_t off) {
    const Buffer &buf = m_.memory[cached_];
    std::ostringstream os;
    os << what_ << " out of bounds: element " << off << " of '" << buf.name << "' ("
       << cachedElements_ << " element" << (cachedElements_ == 1 ? "" : "s") << ") in program "
       << m_.programString();
    m_.fail(op_.op->loc(), DiagCode::OutOfBounds, os.str());
  }

  Machine &m_;
  const PreparedOp &op_;
  std::string what_;
  DType pointee_;
  unsigned elemBytes_;
  size_t cached_ = SIZE_MAX;
  int64_t cachedElements_ = 0;
};

} // namespace

//===--------------------------------------------------------------------===//
// ptr_add
//===--------------------------------------------------------------------===//

void execPtrAdd(Machine &m, const PreparedOp &op) {
  const TileData &p = m.in(op, 0), &d = m.in(op, 1);
  const bool unsignedOffsets = !isSigned(m.inType(op, 1).dtype);
  TileData &out = m.out(op);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    // Clamp instead of wrapping: a pointer pushed past the representable range stays
    // out of bounds of every buffer (and is reported if it is ever dereferenced).
    int64_t delta = d[i].i;
    if (unsignedOffsets && delta < 0) // a u64 above INT64_MAX
      delta = kMaxPointerOffset + 1;
    delta = std::clamp(delta, -kMaxPointerOffset - 1, kMaxPointerOffset + 1);
    int64_t off = std::clamp(pointerOffset(p[i].i) + delta, -kMaxPointerOffset, kMaxPointerOffset);
    out[i].i = makePointer(pointerBuffer(p[i].i), off);
  }
}

//===--------------------------------------------------------------------===//
// load and store
//===--------------------------------------------------------------------===//

void execLoad(Machine &m, const PreparedOp &op) {
  const DType t = m.inType(op, 0).dtype;
  const TileData &p = m.in(op, 0);
  const TileData *mask = op.operands.size() > 1 ? &m.in(op, 1) : nullptr;
  const TileData *other = op.operands.size() > 2 ? &m.in(op, 2) : nullptr;
  TileData &out = m.out(op);
  Access access(m, op, "load", t);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    if (mask && !(*mask)[i].i)
      out[i] = other ? (*other)[i] : intSlot(0); // all-zero bits are 0 and +0.0 alike
    else
      out[i] = access.read(p[i].i);
  }
}

void execBlockElements(Machine &m, const PreparedOp &op) {
  const int64_t bitmaps = m.in(op, 0)[0].i, slot = m.in(op, 1)[0].i;
  TileData &out = m.out(op);
  const size_t n = out.size();
  if (slot < 0) {
    std::fill(out.begin(), out.end(), intSlot(1));
    return;
  }
  const int64_t words = (static_cast<int64_t>(n) + 31) / 32;
  Access access(m, op, "block_elements", DType::U32);
  for (int64_t w = 0; w < words; ++w) {
    const uint64_t bits = static_cast<uint64_t>(access.read(makePointer(pointerBuffer(bitmaps),
                                                                        pointerOffset(bitmaps) + slot * words + w)).i);
    for (int64_t b = 0; b < 32 && w * 32 + b < static_cast<int64_t>(n); ++b)
      out[w * 32 + b] = intSlot((bits >> b) & 1);
  }
}

void execStore(Machine &m, const PreparedOp &op) {
  const DType t = m.inType(op, 0).dtype;
  const TileData &p = m.in(op, 0), &v = m.in(op, 1);
  const TileData *mask = op.operands.size() > 2 ? &m.in(op, 2) : nullptr;
  Access access(m, op, "store", t);
  const size_t n = p.size();
  for (size_t i = 0; i < n; ++i)
    if (!mask || (*mask)[i].i)
      access.write(p[i].i, v[i]);
}

//===--------------------------------------------------------------------===//
// Atomics
//===--------------------------------------------------------------------===//

static const char *rmwName(RmwKind k) {
  switch (k) {
  case RmwKind::Add:
    return "atomic_add";
  case RmwKind::Max:
    return "atomic_max";
  case RmwKind::Min:
    return "atomic_min";
  case RmwKind::Xchg:
    return "atomic_xchg";
  case RmwKind::And:
    return "atomic_and";
  case RmwKind::Or:
    return "atomic_or";
  case RmwKind::Xor:
    return "atomic_xor";
  }
  return "atomic_rmw";
}

void execAtomicRMW(Machine &m, const PreparedOp &op) {
  const Type &pt = m.inType(op, 0);
  const DType t = pt.dtype;
  const Repr r = reprOf(pt.withDType(t));
  const RmwKind kind = static_cast<RmwKind>(op.sub);
  const TileData &p = m.in(op, 0), &v = m.in(op, 1);
  const TileData *mask = op.operands.size() > 2 ? &m.in(op, 2) : nullptr;
  TileData &out = m.out(op);
  Access access(m, op, rmwName(kind), t);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    if (mask && !(*mask)[i].i) {
      out[i] = intSlot(0);
      continue;
    }
    Slot old = access.read(p[i].i);
    Slot next = v[i];
    switch (kind) {
    case RmwKind::Add:
      next = addSlots(t, old, v[i]);
      break;
    case RmwKind::Max:
      next = extremumSlots(r, true, old, v[i]);
      break;
    case RmwKind::Min:
      next = extremumSlots(r, false, old, v[i]);
      break;
    case RmwKind::Xchg:
      break;
    // Integers only (the verifier sees to it). A slot holds its value sign- or
    // zero-extended, and both extensions commute with the bitwise ops.
    case RmwKind::And:
      next = intSlot(old.i & v[i].i);
      break;
    case RmwKind::Or:
      next = intSlot(old.i | v[i].i);
      break;
    case RmwKind::Xor:
      next = intSlot(old.i ^ v[i].i);
      break;
    }
    access.write(p[i].i, next);
    out[i] = old;
  }
}

void execAtomicCas(Machine &m, const PreparedOp &op) {
  const DType t = m.inType(op, 0).dtype;
  const TileData &p = m.in(op, 0), &cmp = m.in(op, 1), &v = m.in(op, 2);
  TileData &out = m.out(op);
  Access access(m, op, "atomic_cas", t);
  const size_t n = out.size();
  for (size_t i = 0; i < n; ++i) {
    Slot old = access.read(p[i].i);
    // Compared as stored bits, as the hardware compare-and-swap does (so a NaN can
    // match itself and -0.0 does not match +0.0).
    if (storageBits(t, old) == storageBits(t, cmp[i]))
      access.write(p[i].i, v[i]);
    out[i] = old;
  }
}

} // namespace kiln::interp::detail
