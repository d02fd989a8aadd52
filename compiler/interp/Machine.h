// The interpreter's machine state, shared by the files that implement it:
//
//   Machine.cpp       blocks, roles and their scheduling, `for`, deadlocks
//   CoreOps.cpp       scalars, tiles, global and shared memory, cp.async (sm_80)
//   HopperOps.cpp     mbarriers, bulk tensor copies, wgmma (sm_90a)
//   SharedMemory.cpp  shared bytes: buffers that overlap, missing barriers
//
// Each op is one case of Machine::exec, which calls one handler. A new op
// gets its case and a handler in the file of its family; state that roles
// share (slots, barriers, copies in flight) lives in SharedBuffer and the
// block's queues, state of one role (its wgmma groups, fences) in Context;
// an op that lets roles meet also belongs in `synchronises` (Machine.cpp).
#pragma once
#include "interp/Interpreter.h"
#include "support/Diagnostics.h"

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tkc::interp::detail {

using OpIter = std::list<std::unique_ptr<ir::Op>>::const_iterator;

/// One mbarrier as PTX defines it: a phase counter, the arrivals still
/// expected in the current phase, and the transaction count (bytes announced
/// by expect-tx minus bytes completed by bulk copies). A phase completes when
/// both reach zero; the next one starts with `count` pending arrivals.
struct Context;

/// What a context has synchronised with: for each context, the accesses it
/// made before its arrival number (`Context::releases`) this many happen
/// before.
using Released = std::map<const Context *, int64_t>;

struct Mbarrier {
  bool initialised = false;
  int64_t count = 0;
  int64_t pending = 0;
  int64_t tx = 0;
  int64_t phase = 0;
  /// Released by the arrivals of the current phase (each thread of an
  /// arriving context arrives after its own accesses: `all_lanes`, or a
  /// one-thread role), and by the last completed phase of each parity: a
  /// wait that sees a phase complete has synchronised with all of it.
  Released arriving;
  Released completed[2];
};

/// A shared-memory buffer: `slots` data slots (one without stages), or an
/// array of mbarriers (#mbarrier). Slots start as NaN so that reading one no
/// copy has written shows up in the results.
struct SharedBuffer {
  const ir::Value *value = nullptr;
  std::vector<std::vector<double>> slots;
  std::vector<std::vector<char>> pads;
  std::vector<Mbarrier> bars;
  std::vector<int> copiesInFlight; ///< per slot: bulk copies not landed yet
  std::vector<int> readers;        ///< per slot: issued wgmma not retired yet
  // Where smem-plan put it (offset -1: not planned yet), and per slot (or
  // for the mbarriers) the write whose bytes a read expects to find there.
  int64_t offset = -1;
  int64_t slotBytes = 0;
  std::vector<uint64_t> slotWrite;
  uint64_t barsWrite = 0;
  /// Per slot, for a staging tile that smem_store writes and tma_store
  /// reads: the bulk stores reading it, the last smem_store (when, by which
  /// role, in which of its warpgroup_barrier epochs), and where the last
  /// store's read was seen to end (tma_store_wait {read}).
  struct Staging {
    int storeReaders = 0;
    const ir::Op *writer = nullptr;
    const void *writerCtx = nullptr;
    uint64_t writtenAt = 0;
    int64_t writtenEpoch = 0;
    int64_t writtenRoleEpoch = 0;
    /// Per element of the slot, the warpgroup of the role whose threads
    /// wrote it (-1: not known, as if another warpgroup's).
    std::vector<int> writerGroup;
    const void *readEndCtx = nullptr;
    int64_t readEndEpoch = -1;
  };
  std::vector<Staging> staging;
};

/// A runtime value: a scalar, a dense tile, a shared buffer or one slot of
/// it, or a global tensor.
struct RValue {
  double scalar = 0;
  std::vector<int64_t> shape;
  std::shared_ptr<std::vector<double>> tile;
  std::shared_ptr<std::vector<char>> pad; ///< per element: padding (past a tensor's end); null for none
  std::shared_ptr<SharedBuffer> buffer;
  int64_t stage = -1; ///< stage_view: the slot, read when used since copies land later
  int global = -1;    ///< index of a global tensor
  /// A wgmma result: set while the wgmma is in flight (its tile is filled
  /// when a wgmma_wait retires it); shared by every alias of the value.
  std::shared_ptr<bool> inFlight;
  /// When the tile's registers were last written other than by wgmma (the
  /// machine's op counter), for the wgmma_fence rule.
  uint64_t writtenAt = 0;
  /// A shared tile that smem-plan placed: its bytes and the write that put
  /// it there, checked when it is read.
  int64_t smemOffset = -1;
  int64_t smemBytes = 0;
  uint64_t smemWrite = 0;
};

/// A wgmma issued and not retired: its product is computed from shared
/// memory as it is when a wgmma_wait retires it.
struct PendingWgmma {
  const ir::Op *op = nullptr;
  RValue a, b, c, result;
};

/// A copy from global to shared memory issued and not landed: a bulk tensor
/// copy (tma_load, completing on an mbarrier) or a cp.async (async_load,
/// landing at the async_wait that retires its group).
/// Threads of a warp (a warp_copy's arrivals, an all_lanes release's per
/// warp).
constexpr int64_t kWarpLanes = 32;

struct BulkCopy {
  const ir::Op *op = nullptr;
  std::shared_ptr<SharedBuffer> buffer;
  int64_t slot = 0;
  std::shared_ptr<SharedBuffer> bars; ///< null for cp.async
  int64_t bar = 0;
  int global = -1;
  std::vector<int64_t> base; ///< the slice's offset in every dim of the tensor
  bool zeroFill = false;     ///< cp.async whose predicate was false
  /// Arrivals on the barrier when it lands (a warp_copy: one per lane), in
  /// place of completing transaction bytes (a bulk copy).
  int64_t arrivals = 0;
};

/// A bulk store (tma_store) of a staging slot to a global tile: it reads
/// the slot until a tma_store_wait {read = 1} (or {read = 0}) retires it
/// and writes the global tile at tma_store_wait {read = 0}.
struct PendingStore {
  const ir::Op *op = nullptr;
  std::shared_ptr<SharedBuffer> buffer;
  int64_t slot = 0;
  int global = -1;
  std::vector<int64_t> base;
  bool readDone = false;
  std::vector<double> data;
};

/// Where a context is in a block: the next op, where to stop, and for a
/// `for` body the loop's state.
struct Cursor {
  const ir::Block *block = nullptr;
  OpIter pc, end;
  const ir::Op *loop = nullptr;
  int64_t k = 0, hi = 0, step = 1;
};

/// The threads of a block that run the same code: the whole block, or one
/// warpgroup role. Each has its own values (what the other roles computed
/// is not in its registers) and its own wgmma groups.
struct Context {
  std::string role; ///< empty: every warp of the block
  int warps = 4;
  bool oneThread = false; ///< `issuers = 1`
  bool explicitRole = false; ///< opened by warpgroup_role (not split off by a producer loop)
  std::map<const ir::Value *, RValue> values;
  std::vector<Cursor> stack;
  enum class State { Ready, Blocked, Done } state = State::Ready;
  bool atBarrier = false;
  uint64_t barrierGeneration = 0; ///< the `barrier` generation it waits to pass
  uint64_t lastFence = 0;
  uint64_t lastProxyFence = 0;  ///< fence_proxy_async
  int64_t warpgroupEpoch = 0;   ///< warpgroup_barriers passed
  int64_t roleEpoch = 0;        ///< warpgroup_barriers {all = 1} passed (each warpgroup meets the others)
  int64_t releases = 0;         ///< arrivals on mbarriers after each thread's own accesses
  Released seen;                ///< what the mbarrier phases it waited for released
  std::vector<PendingWgmma> open;
  std::deque<std::vector<PendingWgmma>> groups;
  std::deque<PendingStore> stores; ///< bulk store groups, oldest first
  /// Taking turns (turn_wait, turn_pass), per warpgroup of the role: the
  /// last turn op it ran ('w', 'p'; 0 before its first), the hand-overs it
  /// received and the waits it made.
  std::vector<char> lastTurn;
  std::vector<int64_t> turnsHandedTo, turnsWaited;
  const ir::Op *lastTurnOp = nullptr;
  std::vector<BulkCopy> asyncOpen; ///< cp.async not committed yet
  std::deque<std::vector<BulkCopy>> asyncGroups;

  /// "consumer role", "block" etc. for messages.
  std::string what() const { return role.empty() ? std::string("block") : role + " role"; }
  /// Threads that execute a per-warp arrival: lane 0 of each warp.
  int arrivingWarps() const { return oneThread ? 1 : warps; }
  int warpgroups() const { return warps / 4; }
};

/// The flat offset of a global element, or -1 past the end.
inline int64_t globalOffset(const Tensor &t, const std::vector<int64_t> &index) {
  int64_t offset = 0;
  for (size_t d = 0; d < t.dims.size(); ++d) {
    if (index[d] < 0 || index[d] >= t.dims[d])
      return -1;
    offset = offset * t.dims[d] + index[d];
  }
  return offset;
}

/// Visits every element of the slice of `t` at `base` with the op's `sizes`
/// (0: a dim indexed by a single offset): `fn(tile index, global offset or -1)`.
template <typename Fn>
void forSlice(const ir::Op &op, const Tensor &t, const std::vector<int64_t> &base, int64_t tileCount, Fn &&fn) {
  std::vector<int64_t> sizes = op.listAttr("sizes");
  std::vector<int64_t> extents;
  for (size_t d = 0; d < t.dims.size(); ++d)
    if (sizes[d] > 0)
      extents.push_back(sizes[d]);
  std::vector<int64_t> index(t.dims.size());
  for (int64_t i = 0; i < tileCount; ++i) {
    index = base;
    int64_t rest = i;
    size_t tileDim = extents.size();
    for (size_t d = t.dims.size(); d-- > 0;) {
      if (sizes[d] == 0)
        continue;
      --tileDim;
      index[d] += rest % extents[tileDim];
      rest /= extents[tileDim];
    }
    fn(i, globalOffset(t, index));
  }
}

class Machine {
public:
  Machine(const ir::Kernel &kernel, std::vector<Tensor> &tensors, DiagnosticEngine &diags, const Options &options)
      : kernel_(kernel), tensors_(tensors), diags_(diags), options_(options) {}

  /// Runs the launch block and then every block of the grid.
  bool run();
  /// Runs the launch block alone: whether its variant guards hold (the
  /// launcher would run this specialisation), or nothing after an error.
  std::optional<bool> runGuards();

private:
  enum class Status { Next, Blocked, Failed };

  // --- Machine.cpp: blocks, contexts, scheduling --------------------------
  /// Checks the tiles and shared offsets of the kernel against
  /// Options::limits before anything is allocated.
  bool checkLimits();
  bool checkLimits(const ir::Op &op, const ir::Value &v);
  bool runLaunch(int64_t (&extent)[3]);
  bool runBlock(int64_t bx, int64_t by, int64_t bz);
  /// Runs `ctx` until it blocks, finishes or fails.
  Status runContext(Context &ctx);
  Status exec(Context &ctx, const ir::Op &op);
  /// Counts a completed op and moves past it.
  Status finish(Context &ctx, const ir::Op &op, Status status);
  Status checkOperands(Context &ctx, const ir::Op &op);
  Status execFor(Context &ctx, const ir::Op &op);
  Status execYield(Context &ctx, const ir::Op &op);
  Status execBarrier(Context &ctx, const ir::Op &op);
  Status execTurn(Context &ctx, const ir::Op &op);
  bool checkTurnsBalanced(const Context &ctx);
  Status execWarpgroupRole(Context &ctx, const ir::Op &op);
  Status startProducer(Context &ctx, const ir::Op &first);
  void bindParams(Context &ctx, const ir::Block &block);
  bool landOldestCopy();
  bool reportDeadlock();
  void releaseBarrierIfComplete();
  void advance(Context &ctx) { ++ctx.stack.back().pc; }

  // --- CoreOps.cpp ---------------------------------------------------------
  Status execConst(Context &ctx, const ir::Op &op);
  Status execBlockId(Context &ctx, const ir::Op &op);
  Status execElementwise(Context &ctx, const ir::Op &op);
  Status execFill(Context &ctx, const ir::Op &op);
  Status execUndef(Context &ctx, const ir::Op &op);
  Status execIota(Context &ctx, const ir::Op &op);
  Status execLoad(Context &ctx, const ir::Op &op);
  Status execGather(Context &ctx, const ir::Op &op);
  Status execStore(Context &ctx, const ir::Op &op);
  Status execMma(Context &ctx, const ir::Op &op);
  Status execReduce(Context &ctx, const ir::Op &op);
  Status execBroadcast(Context &ctx, const ir::Op &op);
  Status execConvert(Context &ctx, const ir::Op &op);
  Status execMask(Context &ctx, const ir::Op &op);
  Status execSmemAlloc(Context &ctx, const ir::Op &op);
  Status execStageView(Context &ctx, const ir::Op &op);
  Status execAsyncLoad(Context &ctx, const ir::Op &op);
  Status execAsyncCommit(Context &ctx, const ir::Op &op);
  Status execAsyncWait(Context &ctx, const ir::Op &op);
  /// Lands a copy: writes the slot and, for a bulk copy, completes its bytes
  /// on the mbarrier.
  bool land(BulkCopy &copy);

  // --- HopperOps.cpp -------------------------------------------------------
  Status execMbarrierInit(Context &ctx, const ir::Op &op);
  Status execMbarrierExpectTx(Context &ctx, const ir::Op &op);
  Status execMbarrierWait(Context &ctx, const ir::Op &op);
  Status execMbarrierArrive(Context &ctx, const ir::Op &op);
  Status execTmaLoad(Context &ctx, const ir::Op &op);
  Status execWarpCopy(Context &ctx, const ir::Op &op);
  Status startCopy(Context &ctx, const ir::Op &op, int global, std::vector<int64_t> base, const char *noun,
                   int64_t arrivals);
  Status execWgmma(Context &ctx, const ir::Op &op);
  Status execWgmmaFence(Context &ctx, const ir::Op &op);
  Status execWgmmaCommit(Context &ctx, const ir::Op &op);
  Status execWgmmaWait(Context &ctx, const ir::Op &op);
  Status execSmemStore(Context &ctx, const ir::Op &op);
  Status checkWarpgroupsMet(Context &ctx, const ir::Op &wgmma, const ir::Value *operand, RValue &r, bool transposed);
  Status execFenceProxyAsync(Context &ctx, const ir::Op &op);
  Status execWarpgroupBarrier(Context &ctx, const ir::Op &op);
  Status execTmaStore(Context &ctx, const ir::Op &op);
  Status execTmaStoreWait(Context &ctx, const ir::Op &op);
  Status finishStoreRead(Context &ctx, const ir::Op &at, PendingStore &store);
  void writeStore(PendingStore &store);
  /// cuTensorMapEncodeTiled takes only strides that are multiples of 16 bytes.
  Status checkTmaStrides(const ir::Op &op, const Tensor &t, const ir::Value *global);
  Status execGridSize(Context &ctx, const ir::Op &op);
  Status execNumSms(Context &ctx, const ir::Op &op);
  /// Picks the mbarrier `it % S` of a #mbarrier operand, checking that it
  /// was initialised.
  Mbarrier *barrierOf(Context &ctx, const ir::Op &op, size_t operand, int64_t it, std::string &name);
  Status arrive(const ir::Op &op, Mbarrier &bar, const std::string &name, int64_t arrivals);
  Status addTx(const ir::Op &op, Mbarrier &bar, const std::string &name, int64_t bytes);
  Status retire(const ir::Op &at, PendingWgmma &w);
  /// A description of what a blocked wait needs, for the deadlock report.
  std::string waitDescription(Context &ctx, const ir::Op &op);

  // --- SharedMemory.cpp --------------------------------------------------------
  /// Marks shared bytes [offset, offset + bytes) as written by `op` and
  /// returns the write's id.
  uint64_t writeShared(const ir::Op &op, int64_t offset, int64_t bytes);
  /// Checks that the shared bytes that `reader` reads for `v` still hold
  /// what was written there for it.
  Status checkSharedRead(const ir::Op &reader, const ir::Value *v, RValue &r);
  Status checkShared(const ir::Op &reader, const ir::Value *v, int64_t offset, int64_t bytes, uint64_t write);
  // With Options::checkBarriers: ordinary (generic-proxy) accesses of shared
  // bytes by the threads of a block must be ordered by a `barrier` when one
  // of them writes (what the barriers pass guarantees). Bulk copies and
  // wgmma are ordered by mbarriers and wgmma_wait instead.
  /// An ordinary access of a shared byte: by which op and role, and when
  /// (the block's barrier generation, the role's warpgroup_barrier count).
  struct Stamp {
    const ir::Op *op = nullptr;
    const Context *ctx = nullptr;
    int64_t generation = -1;
    int64_t warpgroupEpoch = 0;
    int64_t releases = 0;
  };
  bool ordered(const Context &ctx, const Stamp &stamp) const;
  Stamp stampOf(const Context &ctx, const ir::Op &op) const;
  Status genericRead(Context &ctx, const ir::Op &op, const ir::Value *v, RValue &r);
  Status genericWrite(Context &ctx, const ir::Op &op, const ir::Value *v, int64_t offset, int64_t bytes,
                      bool landed);
  /// The shared bytes of a value (a placed tile, a slot, an mbarrier array),
  /// or false when smem-plan has not placed it.
  bool bytesOf(RValue &r, int64_t &offset, int64_t &bytes);

  // --- shared helpers ----------------------------------------------------
  RValue &get(Context &ctx, const ir::Value *v) { return ctx.values[v]; }
  RValue newTile(const ir::Type &type);
  std::vector<double> &data(RValue &r);
  const char *padOf(RValue &r);
  static void markPad(RValue &r, int64_t i);
  /// The language's rule for a carried tile: where the yielded element is
  /// padding, the iter arg's element (value and padding mark) stays.
  static void keepUnderPadding(RValue &yielded, const RValue &previous);
  RValue copyOf(RValue &v);
  std::string nameOf(const ir::Value *v) const;
  /// Multiplies c + a @ b over the f32 accumulator with the padding rule.
  void multiply(RValue &a, RValue &b, RValue &c, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                RValue &out);

  template <typename... Args> Status fail(const ir::Op &op, DiagId id, Args &&...args) {
    diags_.report(op.loc, id, std::forward<Args>(args)...);
    return Status::Failed;
  }
  /// The offsets of a load, store or copy into its tensor.
  std::vector<int64_t> sliceBase(Context &ctx, const ir::Op &op, size_t firstOffset, const Tensor &t);
  /// Fails where the access reaches outside its tensor along a dim whose
  /// `checked` (or `checked_low`) flag says that it needs no bounds test.
  Status checkUntestedBounds(const ir::Op &op, const Tensor &t, const std::vector<int64_t> &base);
  Status landAsyncGroup(Context &ctx, std::vector<BulkCopy> &group);
  double symbolValue(const std::string &symbol) const;

  const ir::Kernel &kernel_;
  std::vector<Tensor> &tensors_;
  DiagnosticEngine &diags_;
  const Options &options_;
  /// Whether every variant_guard the launch block ran held.
  bool guardsHold_ = true;
  int64_t block_[3] = {0, 0, 0};
  int64_t gridX_ = 1;
  uint64_t clock_ = 0; ///< ops executed, for the wgmma_fence rule
  // The block being run.
  std::vector<std::unique_ptr<Context>> contexts_;
  std::deque<BulkCopy> copies_;
  uint64_t barrierGeneration_ = 0;
  int barrierArrived_ = 0;
  std::vector<uint64_t> smemTags_;          ///< per byte: the write id that put it there (0: none)
  std::vector<const ir::Op *> smemWriters_; ///< write id - 1 -> the op
  std::vector<Stamp> lastWrite_, lastRead_; ///< per byte: the last ordinary write and read
};

} // namespace tkc::interp::detail
