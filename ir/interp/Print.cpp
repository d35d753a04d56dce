//===- Print.cpp - print, assert and the readable rendering of tiles ------===//
//
// print writes one line per executed op: `[pid (x, y, z)] label: v1, v2`, scalars
// bare and tiles as nested lists in row-major order. Floats are printed with the
// fewest digits that read back to the same value of their dtype, so the output is
// both short and exact (and deterministic).
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Scalar.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace kiln::interp::detail {

static std::string formatFloat(DType t, double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (roundToFloatDType(t, std::strtod(buf, nullptr)) == v)
      break;
  }
  return buf;
}

static std::string formatElement(const Machine &m, const Type &t, Slot v) {
  switch (reprOf(t)) {
  case Repr::Pointer: {
    size_t b = pointerBuffer(v.i);
    std::string name = b < m.memory.size() ? m.memory[b].name : "?";
    return "&" + name + "[" + std::to_string(pointerOffset(v.i)) + "]";
  }
  case Repr::Float:
    return formatFloat(t.dtype, v.f);
  case Repr::Signed:
    return std::to_string(v.i);
  case Repr::Unsigned:
    if (t.dtype == DType::Bool)
      return v.i ? "true" : "false";
    return std::to_string(uint64_t(v.i));
  }
  return "?";
}

static void formatDims(const Machine &m, const Type &t, const TileData &data, size_t dim,
                       size_t &next, std::string &out) {
  if (dim == t.shape.size()) {
    out += formatElement(m, t, data[next++]);
    return;
  }
  out += '[';
  for (int64_t k = 0; k < t.shape[dim]; ++k) {
    if (k)
      out += ", ";
    formatDims(m, t, data, dim + 1, next, out);
  }
  out += ']';
}

std::string formatTile(const Machine &m, const Type &type, const TileData &data) {
  std::string out;
  size_t next = 0;
  formatDims(m, type, data, 0, next, out);
  return out;
}

void execPrint(Machine &m, const PreparedOp &op) {
  std::string line = "[pid " + m.programString() + "] " + op.op->stringAttr("label");
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (i == 0 && !op.op->stringAttr("label").empty())
      line += ": ";
    else if (i > 0)
      line += ", ";
    line += formatTile(m, m.inType(op, i), m.in(op, i));
  }
  line += '\n';
  std::ostream &os = m.options.printStream ? *m.options.printStream : std::cout;
  os << line;
}

void execAssert(Machine &m, const PreparedOp &op) {
  const Type &t = m.inType(op, 0);
  const TileData &c = m.in(op, 0);
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i].i)
      continue;
    std::string msg = "device assert failed: " + op.op->stringAttr("message");
    if (!t.isScalar()) {
      // Name the first failing element by its multi-index.
      std::vector<int64_t> index(t.rank());
      size_t rest = i;
      for (size_t d = t.rank(); d-- > 0;) {
        index[d] = static_cast<int64_t>(rest % t.shape[d]);
        rest /= t.shape[d];
      }
      msg += " (element [";
      for (size_t d = 0; d < index.size(); ++d)
        msg += (d ? ", " : "") + std::to_string(index[d]);
      msg += "] is false)";
    }
    m.fail(op.op->loc(), DiagCode::DeviceAssert, msg + " in program " + m.programString());
  }
}

} // namespace kiln::interp::detail
