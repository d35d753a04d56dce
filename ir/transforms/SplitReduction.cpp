//===- SplitReduction.cpp - A fused chain's range over several programs ----===//
//
// The multi-segment strategy of reduction-chain fusion (flash-decoding). With S
// segments, every program the caller asks for becomes S programs along axis 0: program
// x·S + s runs segment s of program x. The kernel then reads
//
//   program_id(0) = pid / S,  num_programs(0) = n / S,  segment = pid % S
//
// so that everything but the fused loop computes what the caller's program computed.
// Each segment runs the fused loop over its share of the range — whole blocks, the
// shares as even as they divide — starting from the identity of each ⊕ (segment 0 from
// the initial values, as the one-program loop does), and then
//
//   writes its carried values (its partial state) to the workspace;
//   fence; arrived = atomic_rmw add(counter, 1)
//   if (arrived == S - 1) {          // the last segment of this program to finish
//     fence; counter = 0             // the workspace is zero again for the next launch
//     merged = state 0; for s in 1 .. S-1: merged = merged ⊕ state s
//     the rest of the kernel, on the merged values
//   }
//
// States merge with the algebra of the fused loop: a sum is brought from the values of
// the earlier loops it was computed against to the merged ones by H(y)/H(y_s) — exp2 of
// the change of the maximum, as between two blocks — extrema shift, centred squares
// combine their (count, mean, M2) (Chan et al.). A segment whose share is empty wrote
// the identity state, which merges as a no-op; an initial value that is not an identity
// is in segment 0's state only (or, for an accumulator that is rescaled, combined in
// after the merge), so it counts once.
//
// The merge is done by the last segment to arrive rather than by a second kernel: one
// launch, no second grid, and the merged state never leaves the program that computed
// the last part of it. The price is one atomic per segment and the S reads of the merge.
//
// On sm_90, where a later loop walks the range again (softmax's output, layernorm's),
// the S segments of a program run as one thread-block cluster instead, and no segment
// waits for a last one:
//
//   states = cluster_exchange(this segment's carried values)   // all S of them
//   merged = state 0; for s in 1 .. S-1: merged = merged ⊕ state s
//   the rest of the kernel, the trailing loop over this segment's share only
//
// Every segment merges in the same order, so all hold the same values bit for bit,
// and each writes its own share of the output. There is no workspace and no counter;
// the exchange goes through distributed shared memory (codegen/LowerCluster.cpp). A
// share of at most one block is then held on chip (HeldShare.cpp).
//
// Workspace, in 32-bit words, per program the caller asked for: the arrival counter
// (padded to 4 words), then S states; each carried value is stored as f32 bits (f16 and
// bf16 widen exactly), row-major, padded to 4 words.
//
//===----------------------------------------------------------------------===//
#include "ir/transforms/SplitReduction.h"

#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace kiln::ir {

namespace {

constexpr int64_t kWordsAlignment = 4; ///< 16 bytes: tiles of a state load as vectors

int64_t roundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

} // namespace

SegmentSplit::SegmentSplit(Kernel &kernel, ChainAlgebra &algebra, int64_t segments, bool cluster)
    : kernel_(kernel), algebra_(algebra), segments_(segments) {
  step_ = integerConstant(algebra.fused().front()->loop->operand(2)).value_or(1);
  Block &body = *kernel.body;
  std::vector<Op *> ids, counts;
  walk(body, [&](Op &op) {
    if (op.kind() == OpKind::ProgramId && op.intAttr("axis") == 0)
      ids.push_back(&op);
    if (op.kind() == OpKind::NumPrograms && op.intAttr("axis") == 0)
      counts.push_back(&op);
  });
  Location loc = kernel.loc;
  Type i32 = Type::scalar(DType::I32);
  Builder b;
  b.setInsertionPoint(&body, body.ops().begin());
  Value *pid = b.createValue(OpKind::ProgramId, loc, {}, i32, {{"axis", int64_t(0)}});
  Value *count = b.createValue(OpKind::NumPrograms, loc, {}, i32, {{"axis", int64_t(0)}});
  Value *s = b.intConstant(loc, i32, segments);
  requested_ = b.createValue(OpKind::Div, loc, {pid, s}, i32);
  requested_->nameHint = "program";
  segment_ = b.createValue(OpKind::Rem, loc, {pid, s}, i32);
  segment_->nameHint = "segment";
  requestedCount_ = b.createValue(OpKind::Div, loc, {count, s}, i32);
  ValueMap remap;
  for (Op *op : ids)
    remap[op->result()] = requested_;
  for (Op *op : counts)
    remap[op->result()] = requestedCount_;
  replaceUses(body, remap);
  kernel.gridSplit.segments = segments;
  kernel.gridSplit.cluster = cluster;
  if (!cluster)
    workspace_ = body.addArgument(Type::ptr(DType::I32), "workspace");
}

//===--------------------------------------------------------------------===//
// Segment bounds and initial values
//===--------------------------------------------------------------------===//

Value *SegmentSplit::i64(Builder &b, Value *v, Location loc) {
  return v->type.dtype == DType::I64 ? v : b.createValue(OpKind::Cast, loc, {v}, Type::scalar(DType::I64));
}

Value *SegmentSplit::i64Constant(Builder &b, int64_t v, Location loc) {
  return b.intConstant(loc, Type::scalar(DType::I64), v);
}

/// Segment s's share of [lb, ub): blocks [s·n/S, (s+1)·n/S) of the n blocks, in i64 so
/// that no intermediate overflows, clamped to ub.
std::pair<Value *, Value *> SegmentSplit::segmentBounds(Builder &b, Value *lb, Value *ub, Location loc) {
  Type t = Type::scalar(DType::I64);
  auto op = [&](OpKind k, Value *x, Value *y) { return b.createValue(k, loc, {x, y}, t); };
  Value *lo = i64(b, lb, loc), *hi = i64(b, ub, loc);
  Value *step = i64Constant(b, step_, loc);
  Value *span = op(OpKind::Sub, hi, lo);
  Value *blocks = op(OpKind::Div, op(OpKind::Add, span, i64Constant(b, step_ - 1, loc)), step);
  blocks = op(OpKind::Maximum, blocks, i64Constant(b, 0, loc));
  Value *s = i64(b, segment_, loc), *count = i64Constant(b, segments_, loc);
  Value *first = op(OpKind::Div, op(OpKind::Mul, s, blocks), count);
  Value *next = op(OpKind::Div, op(OpKind::Mul, op(OpKind::Add, s, i64Constant(b, 1, loc)), blocks), count);
  Value *begin = op(OpKind::Add, lo, op(OpKind::Mul, first, step));
  Value *end = op(OpKind::Minimum, op(OpKind::Add, lo, op(OpKind::Mul, next, step)), hi);
  if (lb->type.dtype != DType::I64) {
    begin = b.createValue(OpKind::Cast, loc, {begin}, lb->type);
    end = b.createValue(OpKind::Cast, loc, {end}, lb->type);
  }
  return {begin, end};
}

Value *SegmentSplit::initialValue(Builder &b, Value *init, const Accumulator &acc, Location loc) {
  const Combiner combiner = acc.combiner;
  // What travels with a top-k is taken only with its values: every segment may start
  // from the same fill.
  if (isIdentity(init, combiner) || acc.ranksWith >= 0)
    return init;
  Value *first = b.createValue(OpKind::Cmp, loc, {segment_, b.intConstant(loc, segment_->type, 0)},
                               Type::scalar(DType::Bool), {{"pred", std::string("eq")}});
  if (!init->type.isScalar())
    first = b.createValue(OpKind::Splat, loc, {first}, init->type.withDType(DType::Bool));
  return b.createValue(OpKind::Select, loc, {first, init, b.floatConstant(loc, init->type, identityOf(combiner))},
                       init->type);
}

//===--------------------------------------------------------------------===//
// The workspace
//===--------------------------------------------------------------------===//

SegmentSplit::Words SegmentSplit::layoutWords(const Op &loop) const {
  Words w;
  for (const auto &r : loop.results()) {
    w.offsets.push_back(w.perSegment);
    w.perSegment += roundUp(r->type.numElements(), kWordsAlignment);
  }
  w.perProgram = kWordsAlignment + segments_ * w.perSegment;
  return w;
}

/// The caller's program as one index: x + nx·(y + ny·z), in i64.
Value *SegmentSplit::requestedProgram(Builder &b, Location loc) {
  Type i32 = Type::scalar(DType::I32), t = Type::scalar(DType::I64);
  auto op = [&](OpKind k, Value *x, Value *y) { return b.createValue(k, loc, {x, y}, t); };
  auto geometry = [&](OpKind k, int64_t axis) { return i64(b, b.createValue(k, loc, {}, i32, {{"axis", axis}}), loc); };
  Value *rest = op(OpKind::Add, geometry(OpKind::ProgramId, 1),
                   op(OpKind::Mul, geometry(OpKind::NumPrograms, 1), geometry(OpKind::ProgramId, 2)));
  return op(OpKind::Add, i64(b, requested_, loc), op(OpKind::Mul, i64(b, requestedCount_, loc), rest));
}

/// Row-major element indices of a tile of `shape`: Σ_d arange(shape[d]) · stride_d.
Value *SegmentSplit::flatIndex(Builder &b, const Shape &shape, Location loc) {
  Type whole = Type::tile(DType::I32, shape);
  Value *index = nullptr;
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    Type line = Type::tile(DType::I32, {shape[d]});
    Value *v = b.createValue(OpKind::Arange, loc, {}, line, {{"start", int64_t(0)}, {"end", shape[d]}});
    if (stride != 1)
      v = b.createValue(OpKind::Mul, loc, {v, b.intConstant(loc, line, stride)}, line);
    Shape s{shape[d]};
    for (int a = 0; a < d; ++a) {
      s.insert(s.begin(), 1);
      v = b.createValue(OpKind::ExpandDims, loc, {v}, Type::tile(DType::I32, s), {{"axis", int64_t(0)}});
    }
    for (size_t a = d + 1; a < shape.size(); ++a) {
      s.push_back(1);
      v = b.createValue(OpKind::ExpandDims, loc, {v}, Type::tile(DType::I32, s), {{"axis", int64_t(s.size() - 1)}});
    }
    if (v->type != whole)
      v = b.createValue(OpKind::Broadcast, loc, {v}, whole);
    index = index ? b.createValue(OpKind::Add, loc, {index, v}, whole) : v;
    stride *= shape[d];
  }
  return index;
}

/// The words of carried value `k` (of `shape`) in the state at `wordOffset`.
Value *SegmentSplit::slotWords(Builder &b, Value *wordOffset, const Words &words, size_t k, const Shape &shape,
                               Location loc) {
  Value *at =
      b.createValue(OpKind::Add, loc, {wordOffset, i64Constant(b, words.offsets[k], loc)}, Type::scalar(DType::I64));
  Value *ptr = b.createValue(OpKind::PtrAdd, loc, {workspace_, at}, workspace_->type);
  if (shape.empty())
    return ptr;
  Type ptrs = Type{DType::I32, true, shape};
  return b.createValue(OpKind::PtrAdd, loc, {b.createValue(OpKind::Splat, loc, {ptr}, ptrs), flatIndex(b, shape, loc)},
                       ptrs);
}

void SegmentSplit::storeState(Builder &b, Value *wordOffset, const std::vector<Value *> &values, const Words &words,
                              Location loc) {
  for (size_t k = 0; k < values.size(); ++k) {
    Value *v = values[k];
    if (isFloat(v->type.dtype)) {
      if (v->type.dtype != DType::F32)
        v = b.createValue(OpKind::Cast, loc, {v}, v->type.withDType(DType::F32));
      v = b.createValue(OpKind::Bitcast, loc, {v}, v->type.withDType(DType::I32));
    } else if (v->type.dtype != DType::I32) {
      v = b.createValue(OpKind::Bitcast, loc, {v}, v->type.withDType(DType::I32)); // u32
    }
    b.create(OpKind::Store, loc, {slotWords(b, wordOffset, words, k, v->type.shape, loc), v}, {});
  }
}

std::vector<Value *> SegmentSplit::loadState(Builder &b, Value *wordOffset, const std::vector<Type> &types,
                                             const Words &words, Location loc) {
  std::vector<Value *> out;
  for (size_t k = 0; k < types.size(); ++k) {
    Value *ptr = slotWords(b, wordOffset, words, k, types[k].shape, loc);
    Value *v = b.createValue(OpKind::Load, loc, {ptr}, types[k].withDType(DType::I32));
    if (isFloat(types[k].dtype)) {
      v = b.createValue(OpKind::Bitcast, loc, {v}, types[k].withDType(DType::F32));
      if (types[k].dtype != DType::F32)
        v = b.createValue(OpKind::Cast, loc, {v}, types[k]);
    } else if (types[k].dtype != DType::I32) {
      v = b.createValue(OpKind::Bitcast, loc, {v}, types[k]);
    }
    out.push_back(v);
  }
  return out;
}

//===--------------------------------------------------------------------===//
// The merge
//===--------------------------------------------------------------------===//

std::vector<Value *> SegmentSplit::combine(Builder &b, const std::vector<Value *> &merged,
                                           const std::vector<Value *> &segment, const FusedLayout &layout,
                                           Location loc) {
  // The chain's results as each side computed against them, and as merged so far.
  ValueMap mergedBefore, segmentBefore, now;
  for (const FusedLayout::Entry &e : layout.entries) {
    Value *result = e.loop->loop->result(e.acc->slot);
    mergedBefore[result] = algebra_.seen(merged[e.slot], e.laterInit, e.acc->combiner, b, loc);
    segmentBefore[result] = algebra_.seen(segment[e.slot], e.laterInit, e.acc->combiner, b, loc);
  }
  std::vector<Value *> out = merged;
  // A top-k's candidates from both sides, in position order (the merged segments come
  // before this one), and the order that picks the K first: its companions follow it.
  std::unordered_map<unsigned, std::pair<Value *, Value *>> topK; // values slot -> (candidates, order)
  // Companions of a loop's top-k merge once the loop's every entry has (the values may
  // come after them), before a later loop's entries read them.
  std::vector<std::function<void()>> companions;
  auto flushCompanions = [&] {
    for (const auto &companion : companions)
      companion();
    companions.clear();
  };
  const ChainLoop *current = nullptr;
  auto slotOf = [&](const FusedLayout::Entry &e, int carried) {
    return e.slot - e.acc->slot + static_cast<unsigned>(carried);
  };
  auto catOf = [&](Value *x, Value *y, int64_t axis) {
    Shape s = x->type.shape;
    s[axis] += y->type.shape[axis];
    return b.createValue(OpKind::Cat, loc, {x, y}, x->type.withShape(s), {{"axis", axis}});
  };
  auto take = [&](Value *candidates, Value *order, int64_t axis) {
    return b.createValue(OpKind::Gather, loc, {candidates, order}, candidates->type.withShape(order->type.shape),
                         {{"axis", axis}});
  };
  for (const FusedLayout::Entry &e : layout.entries) {
    const Accumulator &acc = *e.acc;
    if (e.loop != current)
      flushCompanions();
    current = e.loop;
    if (acc.combiner == Combiner::TopK) {
      const int64_t axis = acc.reducedDims.front();
      if (acc.ranksWith < 0) {
        Value *candidates = catOf(algebra_.rescale(merged[e.slot], acc, now, mergedBefore, b, loc),
                                  algebra_.rescale(segment[e.slot], acc, now, segmentBefore, b, loc), axis);
        Shape k = merged[e.slot]->type.shape;
        Value *order = b.createValue(OpKind::ArgTopK, loc, {candidates}, Type::tile(DType::I32, k),
                                     {{"axis", axis}, {"k", k[axis]}});
        topK[e.slot] = {candidates, order};
        out[e.slot] = take(candidates, order, axis);
        now[e.loop->loop->result(acc.slot)] = out[e.slot];
      } else {
        companions.push_back([&, e, axis] {
          Value *order = topK.at(slotOf(e, e.acc->ranksWith)).second;
          out[e.slot] = take(catOf(merged[e.slot], segment[e.slot], axis), order, axis);
          now[e.loop->loop->result(e.acc->slot)] = out[e.slot];
        });
      }
      continue;
    }
    if (acc.separation.centered) {
      CentredState m = algebra_.mergeCentred({merged[e.slot], merged[e.countSlot], merged[e.meanSlot]},
                                             {segment[e.slot], segment[e.countSlot], segment[e.meanSlot]}, b, loc);
      out[e.slot] = m.m2, out[e.countSlot] = m.count, out[e.meanSlot] = m.mean;
      continue;
    }
    Value *a = algebra_.rescale(merged[e.slot], acc, now, mergedBefore, b, loc);
    Value *c = algebra_.rescale(segment[e.slot], acc, now, segmentBefore, b, loc);
    out[e.slot] = b.createValue(combineKind(acc.combiner), loc, {a, c}, a->type);
    // Later sums are computed against a maximum read as 0 while it is -inf, as in the loop.
    now[e.loop->loop->result(acc.slot)] = algebra_.seenRunning(out[e.slot], e.laterInit, acc.combiner, b, loc);
  }
  flushCompanions();
  return out;
}

std::vector<Value *> SegmentSplit::mergeSegments(Builder &b, Op &loop, const FusedLayout &layout) {
  Location loc = loop.loc();
  Type i32 = Type::scalar(DType::I32), i64t = Type::scalar(DType::I64);
  const Words words = layoutWords(loop);
  kernel_.gridSplit.workspaceBytes = words.perProgram * 4;
  std::vector<Value *> own;
  std::vector<Type> types;
  for (const auto &r : loop.results()) {
    own.push_back(r.get());
    types.push_back(r->type);
  }

  Value *programBase =
      b.createValue(OpKind::Mul, loc, {requestedProgram(b, loc), i64Constant(b, words.perProgram, loc)}, i64t);
  auto stateOffset = [&](Builder &at, Value *segment) {
    Value *skip =
        at.createValue(OpKind::Mul, loc, {i64(at, segment, loc), i64Constant(at, words.perSegment, loc)}, i64t);
    return at.createValue(
        OpKind::Add, loc,
        {programBase, at.createValue(OpKind::Add, loc, {skip, i64Constant(at, kWordsAlignment, loc)}, i64t)}, i64t);
  };
  storeState(b, stateOffset(b, segment_), own, words, loc);
  b.create(OpKind::Fence, loc, {}, {});
  Value *counter = b.createValue(OpKind::PtrAdd, loc, {workspace_, programBase}, workspace_->type);
  Value *arrived =
      b.createValue(OpKind::AtomicRMW, loc, {counter, b.intConstant(loc, i32, 1)}, i32, {{"kind", std::string("add")}});
  arrived->nameHint = "arrived";
  Value *last = b.createValue(OpKind::Cmp, loc, {arrived, b.intConstant(loc, i32, segments_ - 1)},
                              Type::scalar(DType::Bool), {{"pred", std::string("eq")}});
  Op *branch = b.create(OpKind::If, loc, {last}, {}, {}, 2);
  Builder(branch->region(1)).create(OpKind::Yield, loc, {}, {});

  Block *then = branch->region(0);
  Builder tb(then);
  tb.create(OpKind::Fence, loc, {}, {});
  tb.create(OpKind::Store, loc, {counter, tb.intConstant(loc, i32, 0)}, {});
  std::vector<Value *> operands{tb.intConstant(loc, i32, 1), tb.intConstant(loc, i32, segments_),
                                tb.intConstant(loc, i32, 1)};
  for (Value *v : loadState(tb, stateOffset(tb, tb.intConstant(loc, i32, 0)), types, words, loc))
    operands.push_back(v);
  Op *merge = tb.create(OpKind::For, loc, operands, types, {}, 1);
  Block *body = merge->region(0);
  Value *s = body->addArgument(i32, "segment");
  std::vector<Value *> merged;
  for (size_t k = 0; k < types.size(); ++k) {
    merged.push_back(body->addArgument(types[k], loop.result(k)->nameHint));
    merge->result(k)->nameHint = loop.result(k)->nameHint;
  }
  Builder mb(body);
  std::vector<Value *> segment = loadState(mb, stateOffset(mb, s), types, words, loc);
  mb.create(OpKind::Yield, loc, combine(mb, merged, segment, layout, loc), {});
  Op *yield = tb.create(OpKind::Yield, loc, {}, {});

  // The rest of the kernel runs in the last segment only. The fused loops it replaces
  // stay where they are until they are erased.
  Block &kernelBody = *kernel_.body;
  std::unordered_set<const Op *> replaced;
  for (const ChainLoop *l : algebra_.fused())
    replaced.insert(l->loop);
  for (auto it = std::next(kernelBody.find(branch)); it != kernelBody.ops().end();) {
    Op *op = it->get();
    if (isTerminator(op->kind()) || replaced.count(op)) {
      ++it;
      continue;
    }
    auto following = std::next(it);
    then->insert(then->find(yield), kernelBody.take(it));
    it = following;
  }
  b.setInsertionPoint(then, std::next(then->find(merge)));
  std::vector<Value *> results;
  for (const auto &r : merge->results())
    results.push_back(r.get());
  return results;
}

std::vector<Value *> SegmentSplit::exchangeSegments(Builder &b, Op &loop, const FusedLayout &layout) {
  Location loc = loop.loc();
  std::vector<Value *> own;
  std::vector<Type> types;
  for (const auto &r : loop.results()) {
    own.push_back(r.get());
    types.push_back(r->type);
  }
  const size_t n = own.size();
  std::vector<Type> resultTypes;
  for (int64_t s = 0; s < segments_; ++s)
    resultTypes.insert(resultTypes.end(), types.begin(), types.end());
  Op *exchange = b.create(OpKind::ClusterExchange, loc, own, resultTypes, {{"ranks", segments_}});
  auto state = [&](int64_t s) {
    std::vector<Value *> v;
    for (size_t k = 0; k < n; ++k) {
      Value *r = exchange->result(static_cast<unsigned>(s * n + k));
      r->nameHint = loop.result(static_cast<unsigned>(k))->nameHint;
      v.push_back(r);
    }
    return v;
  };
  // The same merges in the same order in every segment: bit for bit the same values.
  std::vector<Value *> merged = state(0);
  for (int64_t s = 1; s < segments_; ++s)
    merged = combine(b, merged, state(s), layout, loc);
  return merged;
}

} // namespace kiln::ir
