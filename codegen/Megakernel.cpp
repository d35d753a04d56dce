//===- Megakernel.cpp - A graph's launches as one persistent kernel ------------===//
//
// The persistent-task lowering (docs/graphs.md, "The persistent kernel"). Each program
// of each launch of a graph is a task; the tasks are numbered in launch order, and the
// dependency analysis (ir/GraphDependencies.h) guarantees that a task depends only on
// tasks with smaller numbers. The megakernel is one grid of workers, sized by the host
// so that all are resident, each of which loops:
//
//   claim     thread 0 takes the next task number with one atomic add on the claim
//             counter and finds its launch in the table, scanning on from its last one
//   wait      thread 0 spins (ld.acquire.gpu, with nanosleep backoff) until the counter
//             of the one event the task waits on (runtime/TaskEvents.h: a group of
//             earlier tasks whose memory it touches) reaches its target, then a
//             barrier — unless this worker already passed that event's wait (counters
//             only grow), which every thread knows, so none waits; past the timeout
//             (%globaltimer) it records which task waited on what and raises the abort
//             word, which every worker checks, so a stuck graph ends instead of hanging
//   run       every thread calls the launched kernel, lowered in task mode (Lowering's
//             asTask) and inlined here, with the task's program id and grid
//   trigger   after a barrier, thread 0 fences at GPU scope and adds one to the
//             counter of the event the task triggers, publishing the task's stores to
//             its waiters (and, given a trace buffer, first writes when it claimed,
//             started and ended the task)
//
// With CodegenOptions::taskPrefetch (dslc --task-prefetch), a task that must wait first
// has every thread ask L2 for a share of what it will read (prefetch.global.L2 per
// 128-byte line): the ranges of ir/TaskFootprints.h, evaluated for the task's program
// id and arguments, each at most kPrefetchLimitBytes (a wider one is probably the whole
// buffer, which the footprint gives where it knows no better), so that its weights
// stream in while the launch before it finishes. A task that need not wait prefetches
// nothing: its own loads start at once. It is off by default because it has not paid
// on the H200: the persistent Llama-shaped step took 4% longer with it, 8% when every
// task prefetched (the requests queue behind the running tasks' loads). A prefetch is a
// hint: it cannot fault or change a value, and L2 is where the GPU's memory is
// coherent, so reading ahead of another task's store is harmless.
//
// Claiming in order makes the scheme deadlock-free whatever the residency: a task waits
// only on smaller task numbers, all claimed earlier by workers that are running them.
// Counters only grow; the host passes the claim base, and each wait's target grows by
// its event's size with the runs its table served (table_runs), so repeated runs need
// no reset and a repeated call writes no table (support/TaskTable.h).
//
// In checked mode (docs/checked.md) every task is lowered checked: its arguments'
// extents come from the launch record after the arguments, and a bad access claims the
// kernel's one check record (the ninth parameter) with the task's number, which the
// host turns into an error naming the launch.
//
// Tasks share the one dynamic shared-memory arena (its size is the largest kind's), and
// a small static array holds what thread 0 broadcasts: the task, its launch and whether
// the wait failed.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"

#include "codegen/Emit.h"
#include "codegen/Lowering.h"
#include "ir/TaskFootprints.h"
#include "support/TaskTable.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>

namespace kiln::codegen {

namespace {

/// A read range wider than this is not prefetched (see the banner).
constexpr int64_t kPrefetchLimitBytes = 512 * 1024;
constexpr int64_t kLineBytes = 128;

/// Builds the worker loop around the task functions.
class MegakernelBuilder {
public:
  MegakernelBuilder(llvm::Module &mod, int64_t threads, unsigned recordWords, const CodegenOptions &options)
      : mod(mod), ctx(mod.getContext()), b(ctx), threads(threads), recordWords(recordWords),
        prefetch(options.taskPrefetch), workersPerSM(options.workersPerSM), checked(options.checked) {}

  llvm::Function *build(const std::string &name, const std::vector<llvm::Function *> &tasks,
                        const std::vector<const ir::Kernel *> &kinds);

private:
  llvm::Module &mod;
  llvm::LLVMContext &ctx;
  llvm::IRBuilder<> b;
  const int64_t threads;
  const unsigned recordWords;
  const bool prefetch;
  const int64_t workersPerSM;
  const bool checked;

  llvm::Function *fn = nullptr;
  llvm::Value *table = nullptr, *sync = nullptr, *ctl = nullptr, *taskEvents = nullptr;

  llvm::ConstantInt *i32(uint32_t v) { return b.getInt32(v); }
  llvm::BasicBlock *block(const char *name) { return llvm::BasicBlock::Create(ctx, name, fn); }
  void barrier() {
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {}, {i32(0)});
  }
  llvm::Value *syncWord(llvm::Value *index) { return b.CreateInBoundsGEP(b.getInt32Ty(), sync, index); }
  llvm::Value *syncWord(unsigned index) { return syncWord(i32(index)); }
  /// 64-bit word `index` of `words`, which no task writes during the run.
  llvm::Value *invariantWord(llvm::Value *words, llvm::Value *index) {
    llvm::LoadInst *load = b.CreateLoad(b.getInt64Ty(), b.CreateInBoundsGEP(b.getInt64Ty(), words, index));
    load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(ctx, {}));
    return load;
  }
  /// Word `w` of launch record `launch`.
  llvm::Value *recordWord(llvm::Value *launch, unsigned w) {
    return invariantWord(table, b.CreateAdd(b.CreateMul(b.CreateZExt(launch, b.getInt64Ty()), b.getInt64(recordWords)),
                                            b.getInt64(w)));
  }
  /// Word `w` of task `task`'s events.
  llvm::Value *taskWord(llvm::Value *task, unsigned w) {
    return invariantWord(taskEvents, b.CreateAdd(b.CreateMul(b.CreateZExt(task, b.getInt64Ty()),
                                                             b.getInt64(tasks::kTaskWords)),
                                                 b.getInt64(w)));
  }
  llvm::Value *low(llvm::Value *word) { return b.CreateTrunc(word, b.getInt32Ty()); }
  llvm::Value *high(llvm::Value *word) { return b.CreateTrunc(b.CreateLShr(word, 32), b.getInt32Ty()); }
  /// A relaxed (monotonic) or acquire load of a sync word at GPU scope.
  llvm::Value *atomicLoad(llvm::Value *ptr, llvm::AtomicOrdering order) {
    llvm::LoadInst *load = b.CreateLoad(b.getInt32Ty(), ptr);
    load->setAtomic(order, ctx.getOrInsertSyncScopeID("device"));
    load->setAlignment(llvm::Align(4));
    return load;
  }
  void atomicStore(llvm::Value *v, llvm::Value *ptr, llvm::AtomicOrdering order) {
    llvm::StoreInst *store = b.CreateStore(v, ptr);
    store->setAtomic(order, ctx.getOrInsertSyncScopeID("device"));
    store->setAlignment(llvm::Align(4));
  }
  llvm::Value *globalTimer() {
    return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_globaltimer, llvm::ArrayRef<llvm::Value *>{});
  }
  /// Footprint polynomial `p` of a task of `kernel` as an i64: program ids from `pid`,
  /// integer parameters from their table words.
  llvm::Value *evaluate(const ir::FootprintPoly &p, const ir::Kernel &kernel, llvm::Value *const pid[3],
                        const std::vector<llvm::Value *> &argWords) {
    llvm::Value *sum = b.getInt64(0);
    for (const auto &[monomial, coefficient] : p.terms) {
      llvm::Value *term = b.getInt64(static_cast<uint64_t>(coefficient));
      for (const ir::FootprintSymbol &sym : monomial) {
        llvm::Value *v;
        if (sym.kind == ir::FootprintSymbol::Kind::Pid) {
          v = b.CreateZExt(pid[sym.index], b.getInt64Ty());
        } else {
          const DType dtype = kernel.params()[sym.index]->type.dtype;
          const unsigned bits = dtypeBits(dtype);
          v = argWords[sym.index];
          if (bits < 64) {
            v = b.CreateTrunc(v, b.getIntNTy(bits));
            v = isSigned(dtype) ? b.CreateSExt(v, b.getInt64Ty()) : b.CreateZExt(v, b.getInt64Ty());
          }
        }
        term = b.CreateMul(term, v);
      }
      sum = b.CreateAdd(sum, term);
    }
    return sum;
  }
  /// Every thread prefetches its share of the lines of the task's read ranges.
  void prefetchReads(llvm::Value *kind, llvm::Value *tid, llvm::Value *const pid[3],
                     const std::vector<llvm::Value *> &argWords, const std::vector<const ir::Kernel *> &kinds);
  /// A launch argument of parameter type `t` from its 64-bit table word.
  llvm::Value *argument(llvm::Value *word, llvm::Type *t) {
    if (t->isPointerTy())
      return b.CreateIntToPtr(word, t);
    if (t->isIntegerTy())
      return t->getIntegerBitWidth() < 64 ? b.CreateTrunc(word, t) : word;
    const unsigned bits = t->getPrimitiveSizeInBits().getFixedValue();
    return b.CreateBitCast(bits < 64 ? b.CreateTrunc(word, b.getIntNTy(bits)) : word, t);
  }
};

llvm::Function *MegakernelBuilder::build(const std::string &name, const std::vector<llvm::Function *> &tasks,
                                         const std::vector<const ir::Kernel *> &kinds) {
  auto *global = llvm::PointerType::get(ctx, 1);
  std::vector<llvm::Type *> params = {global, b.getInt32Ty(), b.getInt32Ty(), global, b.getInt32Ty(),
                                      b.getInt64Ty(), global, b.getInt32Ty(), global};
  if (checked)
    params.push_back(global);
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), params, false);
  fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name, mod);
  fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr("nvvm.maxntid", std::to_string(threads));
  // At least two workers per SM (CodegenOptions::workersPerSM): register allocation
  // over the union of every kind of task otherwise drifts above what two resident CTAs
  // leave (170 registers for a matrix-vector product that takes 94 as its own kernel),
  // halving the warps in flight of a memory-bound graph.
  fn->addFnAttr("nvvm.minctasm", std::to_string(workersPerSM));
  const char *names[tasks::kCheckedNumParams] = {"table", "launches",   "tasks",       "sync",
                                                 "claim_base", "timeout_ns", "trace", "table_runs",
                                                 "task_events", "check_record"};
  for (unsigned i = 0; i < params.size(); ++i)
    fn->getArg(i)->setName(names[i]);
  llvm::Value *checkRecord = checked ? fn->getArg(tasks::kNumParams) : nullptr;
  // The arguments, then (checked) their extents.
  const unsigned argumentWords = (recordWords - tasks::kRecordHeaderWords) / (checked ? 2 : 1);
  table = fn->getArg(0);
  llvm::Value *numLaunches = fn->getArg(1), *numTasks = fn->getArg(2);
  sync = fn->getArg(3);
  llvm::Value *claimBase = fn->getArg(4), *timeout = fn->getArg(5), *trace = fn->getArg(6),
              *tableRuns = fn->getArg(7);
  taskEvents = fn->getArg(8);

  // What thread 0 tells the others: [0] the task (all ones: none left), [1] its launch,
  // [2] nonzero when its wait failed.
  auto *ctlType = llvm::ArrayType::get(b.getInt32Ty(), 4);
  ctl = new llvm::GlobalVariable(mod, ctlType, false, llvm::GlobalValue::InternalLinkage,
                                 llvm::UndefValue::get(ctlType), "kiln_task_ctl", nullptr,
                                 llvm::GlobalValue::NotThreadLocal, 3);
  auto ctlAt = [&](unsigned i) { return b.CreateConstInBoundsGEP2_32(ctlType, ctl, 0, i); };

  llvm::BasicBlock *entry = block("entry");
  b.SetInsertPoint(entry);
  llvm::Value *tid = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, llvm::ArrayRef<llvm::Value *>{},
                                       {}, "tid");
  llvm::Value *leader = b.CreateICmpEQ(tid, i32(0), "leader");
  // Thread 0's timestamps of the current task, for the trace.
  llvm::Value *claimedAt = b.CreateAlloca(b.getInt64Ty(), nullptr, "claimed.at");
  llvm::Value *startedAt = b.CreateAlloca(b.getInt64Ty(), nullptr, "started.at");
  llvm::Value *tracing = b.CreateICmpNE(trace, llvm::ConstantPointerNull::get(global), "tracing");
  // The event whose wait this worker last passed.
  llvm::Value *passedEvent = b.CreateAlloca(b.getInt32Ty(), nullptr, "passed.event");
  b.CreateStore(i32(tasks::kNoEvent), passedEvent);
  // The launch of the task this worker last claimed (thread 0's): where the next
  // claim's search starts.
  llvm::Value *scanFrom = b.CreateAlloca(b.getInt32Ty(), nullptr, "scan.from");
  b.CreateStore(i32(0), scanFrom);
  llvm::BasicBlock *claim = block("claim"), *leaderClaim = block("claim.leader"), *take = block("claim.take"),
                   *search = block("claim.search"), *searchStep = block("claim.search.step"),
                   *found = block("claim.found"), *none = block("claim.none"), *claimed = block("claimed"),
                   *decode = block("decode"), *exit = block("exit");
  b.CreateBr(claim);

  // claim: thread 0 takes the next task unless the run was stopped. The ticket and the
  // abort word are read together (neither waits for the other's round trip to L2); a
  // ticket taken after a stop is simply dropped, the host resetting the counters.
  b.SetInsertPoint(claim);
  b.CreateCondBr(leader, leaderClaim, claimed);
  b.SetInsertPoint(leaderClaim);
  llvm::Value *ticket = b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, syncWord(tasks::kClaimWord), i32(1),
                                          llvm::Align(4), llvm::AtomicOrdering::Monotonic,
                                          ctx.getOrInsertSyncScopeID("device"));
  llvm::Value *aborted = atomicLoad(syncWord(tasks::kAbortWord), llvm::AtomicOrdering::Monotonic);
  llvm::Value *task = b.CreateSub(ticket, claimBase, "task");
  b.CreateStore(globalTimer(), claimedAt);
  llvm::Value *fromLaunch = b.CreateLoad(b.getInt32Ty(), scanFrom, "scan.from");
  b.CreateCondBr(b.CreateICmpNE(aborted, i32(0)), none, take);
  b.SetInsertPoint(take);
  b.CreateCondBr(b.CreateICmpULT(task, numTasks), search, none);
  // The launch of the task: the last record whose first task is <= task. A worker's
  // tickets only grow, so the scan goes on from its previous task's launch: over a
  // whole run a worker reads each record's first word about once, where a binary
  // search paid about log2(launches) dependent loads per task.
  b.SetInsertPoint(search);
  llvm::PHINode *lo = b.CreatePHI(b.getInt32Ty(), 2, "lo");
  lo->addIncoming(fromLaunch, take);
  llvm::Value *next = b.CreateAdd(lo, i32(1));
  b.CreateCondBr(b.CreateICmpULT(next, numLaunches), searchStep, found);
  b.SetInsertPoint(searchStep);
  llvm::Value *nextFirst = high(recordWord(next, 0));
  llvm::BasicBlock *advance = block("claim.search.advance");
  b.CreateCondBr(b.CreateICmpULE(nextFirst, task), advance, found);
  b.SetInsertPoint(advance);
  lo->addIncoming(next, advance);
  b.CreateBr(search);
  b.SetInsertPoint(found);
  b.CreateStore(lo, scanFrom);
  b.CreateStore(task, ctlAt(0));
  b.CreateStore(lo, ctlAt(1));
  b.CreateBr(claimed);
  b.SetInsertPoint(none);
  b.CreateStore(i32(~0u), ctlAt(0));
  b.CreateBr(claimed);

  // Everyone learns the task; all ones (or past the end) ends the worker.
  b.SetInsertPoint(claimed);
  barrier();
  llvm::Value *myTask = b.CreateLoad(b.getInt32Ty(), ctlAt(0), "my.task");
  llvm::Value *myLaunch = b.CreateLoad(b.getInt32Ty(), ctlAt(1), "my.launch");
  b.CreateCondBr(b.CreateICmpUGE(myTask, numTasks), exit, decode);

  // decode: the record, the task's events, the program id within the launch.
  b.SetInsertPoint(decode);
  llvm::Value *w0 = recordWord(myLaunch, 0), *w1 = recordWord(myLaunch, 1), *w2 = recordWord(myLaunch, 2);
  llvm::Value *kind = low(w0), *first = high(w0);
  llvm::Value *gx = low(w1), *gy = high(w1), *gz = low(w2);
  llvm::Value *events = taskWord(myTask, 0), *counts = taskWord(myTask, 1);
  llvm::Value *waitEvent = low(events), *ownEvent = high(events);
  // The target in this run of the table: the first run's, grown once per run so far
  // (modulo 2^32, as the counters). Nothing of it is invariant in the loop: a value
  // hoisted out of it would hold a register across every task's code.
  llvm::Value *waitTarget = b.CreateAdd(low(counts), b.CreateMul(tableRuns, high(counts)), "wait.target");
  llvm::Value *local = b.CreateSub(myTask, first);
  // The arguments too, before the wait, so that their loads overlap it.
  std::vector<llvm::Value *> argWords;
  for (unsigned w = 0; w < argumentWords; ++w)
    argWords.push_back(recordWord(myLaunch, tasks::kRecordHeaderWords + w));
  llvm::Value *px = b.CreateURem(local, gx, "pid.x");
  llvm::Value *rest = b.CreateUDiv(local, gx);
  llvm::Value *py = b.CreateURem(rest, gy, "pid.y");
  llvm::Value *pz = b.CreateUDiv(rest, gy, "pid.z");
  llvm::BasicBlock *leaderWait = block("wait"), *spin = block("wait.spin"), *check = block("wait.check"),
                   *sleep = block("wait.sleep"), *timedOut = block("wait.timeout"),
                   *record = block("wait.record"), *stop = block("wait.stop"), *ready = block("wait.ready"),
                   *waited = block("waited"), *dispatch = block("dispatch"), *taskDone = block("task.done"),
                   *trigger = block("trigger"), *mustWait = block("wait.must"), *noWait = block("wait.none"),
                   *waitPassed = block("wait.passed");
  // A task that waits on nothing, or on an event whose wait this worker already passed
  // (counters only grow), goes straight to its work: every thread knows that much from
  // the table, so neither the wait nor its barrier is needed.
  llvm::Value *passed = b.CreateICmpEQ(b.CreateLoad(b.getInt32Ty(), passedEvent), waitEvent, "passed");
  b.CreateCondBr(b.CreateOr(b.CreateICmpEQ(waitEvent, i32(tasks::kNoEvent)), passed), noWait, mustWait);
  b.SetInsertPoint(noWait);
  b.CreateStore(globalTimer(), startedAt);
  b.CreateBr(dispatch);
  b.SetInsertPoint(mustWait);
  if (prefetch) {
    llvm::Value *pid[3] = {px, py, pz};
    prefetchReads(kind, tid, pid, argWords, kinds);
  }
  b.CreateCondBr(leader, leaderWait, waited);

  // wait: thread 0, on the counter of the task's event.
  b.SetInsertPoint(leaderWait);
  llvm::Value *counter = syncWord(b.CreateAdd(waitEvent, i32(tasks::kFirstCounterWord)));
  llvm::Value *start = globalTimer();
  b.CreateBr(spin);
  b.SetInsertPoint(spin);
  llvm::Value *seen = atomicLoad(counter, llvm::AtomicOrdering::Acquire);
  b.CreateCondBr(b.CreateICmpSGE(b.CreateSub(seen, waitTarget), i32(0)), ready, check);
  b.SetInsertPoint(check);
  llvm::Value *stopped = atomicLoad(syncWord(tasks::kAbortWord), llvm::AtomicOrdering::Monotonic);
  llvm::Value *late = b.CreateICmpUGT(b.CreateSub(globalTimer(), start), timeout);
  b.CreateCondBr(b.CreateICmpNE(stopped, i32(0)), stop, sleep);
  b.SetInsertPoint(sleep);
  llvm::BasicBlock *pause = block("wait.pause");
  b.CreateCondBr(late, timedOut, pause);
  b.SetInsertPoint(pause);
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_nanosleep, {}, {i32(64)});
  b.CreateBr(spin);
  // The first worker to give up writes the record; every one raises the abort word.
  b.SetInsertPoint(timedOut);
  llvm::Value *claimRecord =
      b.CreateAtomicCmpXchg(syncWord(tasks::kErrorCodeWord), i32(0), i32(tasks::kErrorWaitTimeout), llvm::Align(4),
                            llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic,
                            ctx.getOrInsertSyncScopeID("device"));
  b.CreateCondBr(b.CreateExtractValue(claimRecord, 1), record, stop);
  b.SetInsertPoint(record);
  atomicStore(myTask, syncWord(tasks::kErrorTaskWord), llvm::AtomicOrdering::Monotonic);
  atomicStore(waitEvent, syncWord(tasks::kErrorEventWord), llvm::AtomicOrdering::Monotonic);
  atomicStore(seen, syncWord(tasks::kErrorSeenWord), llvm::AtomicOrdering::Monotonic);
  atomicStore(waitTarget, syncWord(tasks::kErrorTargetWord), llvm::AtomicOrdering::Monotonic);
  b.CreateBr(stop);
  b.SetInsertPoint(stop);
  atomicStore(i32(1), syncWord(tasks::kAbortWord), llvm::AtomicOrdering::Release);
  b.CreateStore(i32(1), ctlAt(2));
  b.CreateBr(waited);
  b.SetInsertPoint(ready);
  b.CreateStore(globalTimer(), startedAt);
  b.CreateStore(i32(0), ctlAt(2));
  b.CreateBr(waited);

  b.SetInsertPoint(waited);
  barrier();
  llvm::Value *failed = b.CreateLoad(b.getInt32Ty(), ctlAt(2));
  b.CreateCondBr(b.CreateICmpNE(failed, i32(0)), exit, waitPassed);
  b.SetInsertPoint(waitPassed);
  b.CreateStore(waitEvent, passedEvent);
  b.CreateBr(dispatch);

  // dispatch: the task's kernel, its arguments from the record.
  b.SetInsertPoint(dispatch);
  llvm::SwitchInst *sw = b.CreateSwitch(kind, taskDone, static_cast<unsigned>(tasks.size()));
  for (size_t k = 0; k < tasks.size(); ++k) {
    llvm::BasicBlock *run = block("run");
    sw->addCase(i32(static_cast<uint32_t>(k)), run);
    b.SetInsertPoint(run);
    llvm::Function *taskFn = tasks[k];
    std::vector<llvm::Value *> args;
    const size_t kernelParams = kinds[k]->params().size();
    for (size_t i = 0; i < kernelParams; ++i)
      args.push_back(argument(argWords[i], taskFn->getArg(static_cast<unsigned>(i))->getType()));
    if (checked) {
      // As Lowering::addCheckParams orders them: each pointer's extent, the record.
      for (size_t i = 0; i < kinds[k]->numLaunchParams(); ++i)
        if (kinds[k]->params()[i]->type.pointer)
          args.push_back(recordWord(myLaunch, tasks::kRecordHeaderWords + argumentWords + static_cast<unsigned>(i)));
      args.push_back(checkRecord);
    }
    args.insert(args.end(), {px, py, pz, gx, gy, gz, myTask});
    b.CreateCall(taskFn, args);
    b.CreateBr(taskDone);
  }

  // Done: every thread's stores precede thread 0's release of the event's counter. A
  // task no one waits for triggers nothing (but may still write its trace).
  b.SetInsertPoint(taskDone);
  barrier();
  b.CreateCondBr(leader, trigger, claim);
  b.SetInsertPoint(trigger);
  llvm::BasicBlock *traced = block("trace"), *publish = block("publish");
  b.CreateCondBr(tracing, traced, publish);
  b.SetInsertPoint(traced);
  {
    llvm::Value *at = b.CreateInBoundsGEP(b.getInt64Ty(), trace,
                                          b.CreateMul(b.CreateZExt(myTask, b.getInt64Ty()),
                                                      b.getInt64(tasks::kTraceWords)));
    llvm::Value *worker = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x,
                                            llvm::ArrayRef<llvm::Value *>{});
    llvm::Value *sm = b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_smid, llvm::ArrayRef<llvm::Value *>{});
    llvm::Value *words[tasks::kTraceWords] = {
        b.CreateLoad(b.getInt64Ty(), claimedAt), b.CreateLoad(b.getInt64Ty(), startedAt), globalTimer(),
        b.CreateOr(b.CreateZExt(worker, b.getInt64Ty()), b.CreateShl(b.CreateZExt(sm, b.getInt64Ty()), 32))};
    for (unsigned w = 0; w < tasks::kTraceWords; ++w)
      b.CreateStore(words[w], b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), at, w));
  }
  b.CreateBr(publish);
  b.SetInsertPoint(publish);
  llvm::BasicBlock *release = block("release");
  b.CreateCondBr(b.CreateICmpEQ(ownEvent, i32(tasks::kNoEvent)), claim, release);
  b.SetInsertPoint(release);
  // The fence makes the add a release of everything the barrier ordered before it.
  b.CreateFence(llvm::AtomicOrdering::Release, ctx.getOrInsertSyncScopeID("device"));
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, syncWord(b.CreateAdd(ownEvent, i32(tasks::kFirstCounterWord))), i32(1),
                    llvm::Align(4), llvm::AtomicOrdering::Monotonic, ctx.getOrInsertSyncScopeID("device"));
  b.CreateBr(claim);

  b.SetInsertPoint(exit);
  b.CreateRetVoid();
  return fn;
}

void MegakernelBuilder::prefetchReads(llvm::Value *kind, llvm::Value *tid, llvm::Value *const pid[3],
                                      const std::vector<llvm::Value *> &argWords,
                                      const std::vector<const ir::Kernel *> &kinds) {
  // Per kind, the distinct ranges its task reads and does not write.
  struct ReadRange {
    unsigned param;
    ir::FootprintRange range;
    int64_t elementBytes;
  };
  std::vector<std::vector<ReadRange>> reads(kinds.size());
  bool any = false;
  for (size_t k = 0; k < kinds.size(); ++k) {
    for (const ir::TaskFootprint &f : ir::analyzeTaskFootprints(*kinds[k])) {
      if (!f.reads || f.writes || !f.range)
        continue;
      const bool seen = std::any_of(reads[k].begin(), reads[k].end(), [&](const ReadRange &r) {
        return r.param == f.param && r.range.lo == f.range->lo && r.range.hi == f.range->hi;
      });
      if (!seen)
        reads[k].push_back({f.param, *f.range, static_cast<int64_t>(dtypeBytes(kinds[k]->params()[f.param]->type.dtype))});
    }
    any = any || !reads[k].empty();
  }
  if (!any)
    return;
  llvm::Value *lane = b.CreateMul(b.CreateZExt(tid, b.getInt64Ty()), b.getInt64(kLineBytes));
  llvm::BasicBlock *done = block("prefetch.done");
  llvm::SwitchInst *sw = b.CreateSwitch(kind, done);
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (reads[k].empty())
      continue;
    llvm::BasicBlock *start = block("prefetch");
    sw->addCase(i32(static_cast<uint32_t>(k)), start);
    b.SetInsertPoint(start);
    for (const ReadRange &r : reads[k]) {
      llvm::Value *lo = evaluate(r.range.lo, *kinds[k], pid, argWords);
      llvm::Value *hi = evaluate(r.range.hi, *kinds[k], pid, argWords);
      llvm::Value *base = argWords[r.param];
      llvm::Value *first = b.CreateAnd(b.CreateAdd(base, b.CreateMul(lo, b.getInt64(r.elementBytes))),
                                       b.getInt64(~(kLineBytes - 1)));
      llvm::Value *end = b.CreateAdd(base, b.CreateMul(b.CreateAdd(hi, b.getInt64(1)), b.getInt64(r.elementBytes)));
      llvm::Value *wanted = b.CreateAnd(b.CreateICmpSLE(lo, hi),
                                        b.CreateICmpSLE(b.CreateSub(end, first), b.getInt64(kPrefetchLimitBytes)));
      llvm::Value *mine = b.CreateAdd(first, lane);
      llvm::BasicBlock *pre = b.GetInsertBlock(), *loop = block("prefetch.line"), *issue = block("prefetch.issue"),
                       *next = block("prefetch.next");
      b.CreateCondBr(wanted, loop, next);
      b.SetInsertPoint(loop);
      llvm::PHINode *at = b.CreatePHI(b.getInt64Ty(), 2, "prefetch.at");
      at->addIncoming(mine, pre);
      b.CreateCondBr(b.CreateICmpULT(at, end), issue, next);
      b.SetInsertPoint(issue);
      b.CreateIntrinsic(llvm::Intrinsic::nvvm_prefetch_global_L2, {},
                        {b.CreateIntToPtr(at, llvm::PointerType::get(ctx, 1))});
      at->addIncoming(b.CreateAdd(at, b.getInt64(threads * kLineBytes)), issue);
      b.CreateBr(loop);
      b.SetInsertPoint(next);
    }
    b.CreateBr(done);
  }
  b.SetInsertPoint(done);
}

} // namespace

unsigned taskRecordWords(const std::vector<const ir::Kernel *> &kinds, bool checked) {
  size_t widest = 0;
  for (const ir::Kernel *k : kinds)
    widest = std::max(widest, k->params().size());
  return tasks::kRecordHeaderWords + static_cast<unsigned>(widest) * (checked ? 2 : 1);
}

std::optional<CodegenResult> generateMegakernel(const ir::Module &module, const ir::Kernel &graph,
                                                const std::vector<const ir::Kernel *> &kinds, Target target,
                                                DiagnosticEngine &diags, const CodegenOptions &options,
                                                const std::vector<bool> &unaligned) {
  (void)module;
  if (!isNvptxTarget(target)) {
    diags.error(graph.loc, DiagCode::Unsupported).hint("run it with --graph-mode=launches")
        << "graph '" << graph.name << "' cannot become one persistent kernel for " << targetName(target)
        << ": SPIR-V gives no forward-progress guarantee between work-groups";
    return std::nullopt;
  }
  if (kinds.empty())
    KILN_ICE("a megakernel needs at least one kernel");
  for (const ir::Kernel *k : kinds) {
    if (k->numWarps != kinds.front()->numWarps)
      KILN_ICE("the kernels of a megakernel must share num_warps");
    if (k->gridSplit.active()) {
      diags.error(k->loc, DiagCode::Unsupported).hint("compile with --reduction-split=1")
          << "kernel '" << k->name << "' splits its reduction over several programs, which a task of graph '"
          << graph.name << "' cannot do";
      return std::nullopt;
    }
    if (!detail::checkSupported(*k, target, diags))
      return std::nullopt;
  }
  std::string error;
  std::unique_ptr<llvm::TargetMachine> tm = detail::makeTargetMachine(target, options.optLevel, error, false);
  if (!tm) {
    diags.error(graph.loc, DiagCode::Unsupported) << error;
    return std::nullopt;
  }
  llvm::LLVMContext ctx;
  llvm::Module mod(graph.name, ctx);
  mod.setTargetTriple(tm->getTargetTriple());
  mod.setDataLayout(tm->createDataLayout());

  std::vector<llvm::Function *> taskFns;
  int64_t arena = 0;
  CodegenOptions unalignedOptions = options;
  unalignedOptions.assumeAlignedPointers = false;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const ir::Kernel *k = kinds[i];
    detail::Lowering lowering(target, *k, mod, diags, i < unaligned.size() && unaligned[i] ? unalignedOptions : options);
    lowering.asTask = true;
    if (!lowering.run())
      return std::nullopt;
    taskFns.push_back(lowering.fn);
    arena = std::max(arena, lowering.arenaBytes);
  }
  const int64_t limit = detail::sharedLimit(target);
  if (limit && arena > limit) {
    diags.error(graph.loc, DiagCode::Unsupported)
        << "graph '" << graph.name << "' needs " << arena << " bytes of shared memory per worker; "
        << targetName(target) << " allows at most " << limit;
    return std::nullopt;
  }
  const std::string entry = entrySymbol(graph.name) + "_persistent";
  MegakernelBuilder builder(mod, kinds.front()->numWarps * 32, taskRecordWords(kinds, options.checked), options);
  builder.build(entry, taskFns, kinds);

  detail::Emitted emitted;
  if (!detail::optimizeAndEmit(mod, *tm, target, entry, options, emitted, error)) {
    diags.error(graph.loc, DiagCode::FileNotReadable) << error;
    return std::nullopt;
  }
  CodegenResult r;
  r.entry = entry;
  r.llvmIR = std::move(emitted.llvmIR);
  r.ptx = std::move(emitted.ptx);
  r.sharedBytes = arena;
  r.numThreads = kinds.front()->numWarps * 32;
  return r;
}

} // namespace kiln::codegen
