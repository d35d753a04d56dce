//===- Task.h - A kernel-writing task for the agent ----------------*- C++ -*-===//
//
// A task (docs/agent.md) is a JSON file:
//
//   {
//     "name": "softmax_rows",
//     "prompt": "Write a graph `entry`(x, y, rows, cols) that ...",   (what the model reads)
//     "entry": "entry",                  (the graph or kernel a candidate must define)
//     "reference": "softmax_rows.kiln",  (the truth, written plainly; beside the task)
//     "check": ["y"],                    (the outputs compared; every other buffer must
//                                         come back unchanged)
//     "rtol": 1e-5, "atol": 1e-6,
//     "cases":        [ {"args": {...}, "grid": [x, y, z]}, ... ],   (grid: kernels only)
//     "hidden_cases": [ ... ],           (never shown to the model)
//     "large_cases":  [ ... ]            (optional, never shown either: larger shapes on
//                                         which a program that claims more than 10x
//                                         over the reference is verified again)
//   }
//
// A case's `args` give each parameter a scalar (a number, or true/false) or an array
// drawn afresh for every run: {"normal": SHAPE}, {"uniform": SHAPE, "low": a, "high": b},
// {"zeros": SHAPE} or {"randint": SHAPE, "low": a, "high": b}, each with an optional
// "dtype" (f32 by default; f64, f16, bf16, i8..i64, u8..u64, bool).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "support/ElementType.h"
#include "support/Npy.h"

#include <array>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace kiln::agent {

struct ArgSource {
  enum class Kind { Scalar, Normal, Uniform, Zeros, Randint } kind = Kind::Scalar;
  std::string scalar; ///< Scalar: the literal as `dslc run --arg` takes it
  Shape shape;
  double low = 0, high = 1;
  DType dtype = DType::F32;
};

struct TaskCase {
  std::vector<std::pair<std::string, ArgSource>> args; ///< in the task file's order
  std::optional<std::array<int64_t, 3>> grid;
};

struct Task {
  std::string name, prompt, entry;
  std::string reference; ///< the reference program's path (resolved against the task file)
  std::vector<std::string> check;
  double rtol = 1e-5, atol = 1e-6;
  std::vector<TaskCase> cases, hiddenCases, largeCases;
};

/// Reads and checks a task file; nullopt with a message naming the field otherwise.
std::optional<Task> readTask(const std::string &path, std::string &error);

/// The bytes of one element of `dtype`.
unsigned elementBytes(DType dtype);
bool isFloatDType(DType dtype);

/// An array drawn from `source` with `rng`.
NpyArray drawArray(const ArgSource &source, std::mt19937_64 &rng);
/// Element `i` of `a` (of `dtype`) as a double.
double elementValue(const NpyArray &a, DType dtype, size_t i);
/// `a`'s elements set to NaN (floats) or all bits one (integers): a run that does not
/// write an element leaves that visible.
void poison(NpyArray &a, DType dtype);

} // namespace kiln::agent
