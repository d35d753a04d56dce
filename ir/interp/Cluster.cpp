//===- Cluster.cpp - The programs of a thread-block cluster ---------------===//
//
// On a GPU the programs of a cluster run at the same time and meet at each
// `cluster_exchange`. The interpreter runs programs one after another, so it runs a
// cluster in passes (Machine.h, ClusterReplay): pass k takes every program of the
// cluster from its start to its k-th exchange and keeps what each offers there; the
// next pass hands those offers out at that exchange and goes on to the next one. The
// pass in which every program runs to its end is the last. A program that would write
// memory or print before an exchange it is stopped at, or programs that do not meet
// at the same exchanges, are reported (E0607): the first would be repeated by the next
// pass, the second would leave a GPU's cluster waiting forever.
//
//===----------------------------------------------------------------------===//
#include "ir/interp/Machine.h"

namespace kiln::interp::detail {

namespace {

std::string clusterString(std::array<int64_t, 3> first, int64_t ranks) {
  return "the cluster of programs (" + std::to_string(first[0]) + ".." + std::to_string(first[0] + ranks - 1) +
         ", " + std::to_string(first[1]) + ", " + std::to_string(first[2]) + ")";
}

} // namespace

void execClusterExchange(Machine &m, const PreparedOp &op) {
  ClusterReplay *c = m.cluster;
  const ir::Op &ir = *op.op;
  if (!c || c->ranks != ir.intAttr("ranks"))
    m.fail(ir.loc(), DiagCode::ClusterOutOfStep,
           "cluster_exchange of " + std::to_string(ir.intAttr("ranks")) + " programs in a kernel " +
               (c ? "launched in clusters of " + std::to_string(c->ranks) : std::string("not launched in clusters")));
  const size_t k = c->reached++;
  const size_t n = op.operands.size();
  if (k == c->round) {
    if (c->wrote)
      m.fail(ir.loc(), DiagCode::ClusterOutOfStep,
             "program " + m.programString() +
                 " writes memory or prints before this cluster_exchange; only what comes after the last "
                 "exchange of a cluster may");
    c->offered.clear();
    for (size_t i = 0; i < n; ++i)
      c->offered.push_back(m.in(op, static_cast<unsigned>(i)));
    c->offeredAt = &ir;
    throw ClusterSuspended{};
  }
  const ir::Op &first = *c->exchangeOps[k];
  for (size_t i = 0; i < n; ++i)
    if (i >= first.numOperands() || first.operand(static_cast<unsigned>(i))->type != ir.operand(static_cast<unsigned>(i))->type)
      m.fail(ir.loc(), DiagCode::ClusterOutOfStep,
             "program " + m.programString() + " exchanges other values here than its cluster's program of rank 0");
  for (int64_t r = 0; r < c->ranks; ++r)
    for (size_t i = 0; i < n; ++i)
      m.out(op, static_cast<unsigned>(r * n + i)) = c->exchanged[k][r][i];
  m.step(ir.loc(), op.work);
}

void runCluster(Machine &m, const PreparedBlock &body, std::array<int64_t, 3> first, int64_t ranks) {
  ClusterReplay c;
  c.ranks = ranks;
  m.cluster = &c;
  for (;;) {
    std::vector<std::vector<TileData>> offers(static_cast<size_t>(ranks));
    const ir::Op *at = nullptr;
    int64_t stopped = 0;
    for (int64_t r = 0; r < ranks; ++r) {
      m.pid = {first[0] + r, first[1], first[2]};
      c.reached = 0;
      c.wrote = false;
      try {
        m.run(body);
      } catch (const ClusterSuspended &) {
        offers[r] = std::move(c.offered);
        if (!at)
          at = c.offeredAt;
        else if (c.offeredAt->numOperands() != at->numOperands())
          m.fail(c.offeredAt->loc(), DiagCode::ClusterOutOfStep,
                 "in " + clusterString(first, ranks) + ", program " + m.programString() + " offers " +
                     std::to_string(c.offeredAt->numOperands()) + " values at its exchange " +
                     std::to_string(c.round + 1) + ", and rank 0 " + std::to_string(at->numOperands()));
        ++stopped;
        continue;
      }
      if (stopped > 0)
        m.fail(body.ops.empty() ? Location{} : body.ops.back().op->loc(), DiagCode::ClusterOutOfStep,
               "in " + clusterString(first, ranks) + ", program " + m.programString() + " ends after " +
                   std::to_string(c.round) + " exchanges while the others run more");
    }
    if (stopped == 0)
      break;
    if (stopped != ranks)
      m.fail(at->loc(), DiagCode::ClusterOutOfStep,
             "in " + clusterString(first, ranks) + ", not every program reaches exchange " +
                 std::to_string(c.round + 1) + " (on a GPU the cluster would wait forever)");
    c.exchanged.push_back(std::move(offers));
    c.exchangeOps.push_back(at);
    ++c.round;
  }
  m.cluster = nullptr;
}

} // namespace kiln::interp::detail
