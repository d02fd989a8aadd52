// smem-plan: gives every shared-memory buffer its byte offset in the kernel's
// dynamic shared memory. Buffers whose lifetimes do not overlap share bytes.
#include "passes/SmemPlan.h"
#include "passes/PassUtils.h"

#include <algorithm>
#include <map>

namespace tkc {
namespace {

using namespace ir;
using namespace passes;

struct Buffer {
  Op *definer = nullptr;
  int64_t bytes = 0;
  int64_t alignment = 128;
  // Live range in the linear order of ops, both ends inclusive.
  size_t start = 0;
  size_t end = 0;
  bool receivesAsyncCopies = false;
  int64_t offset = 0;
  const Op *loop = nullptr; ///< the innermost loop whose body defines the buffer
};

/// Numbers the ops in program order, nested bodies inline, and computes the
/// live range of every buffer. With a planned ring, its loads are taken for
/// the buffers `pipeline` would make of them: defined where the loop starts,
/// in the loop's parent block, and live until it ends.
class LivenessBuilder {
public:
  explicit LivenessBuilder(const PlannedRing *ring = nullptr) : ring_(ring) {}

  std::vector<Buffer> run(Block &body) {
    number(body);
    for (Op *op : order_)
      for (Value *operand : op->operands)
        if (operand->type.isShared())
          recordUse(*op, sharedRoot(operand));
    for (const Op *load : ringLoads())
      buffers_.at(load->result()).end = loopEnd_.at(ring_->loop);
    extendOverInFlightCopies();
    std::vector<Buffer> buffers;
    for (Op *op : order_) {
      if (ring_ && op == ring_->loop)
        for (const Op *load : ringLoads())
          buffers.push_back(buffers_.at(load->result()));
      if (definesSharedBuffer(*op) && !isRingLoad(*op))
        buffers.push_back(buffers_.at(op->result()));
    }
    return buffers;
  }

private:
  std::vector<const Op *> ringLoads() const { return ring_ ? ring_->loads : std::vector<const Op *>{}; }
  bool isRingLoad(const Op &op) const {
    auto loads = ringLoads();
    return std::find(loads.begin(), loads.end(), &op) != loads.end();
  }

  void number(Block &block) {
    for (auto &op : block.ops) {
      size_t at = order_.size();
      index_[op.get()] = at;
      order_.push_back(op.get());
      if (ring_ && op.get() == ring_->loop)
        for (const Op *load : ringLoads()) {
          Type type = ringBufferType(*load, ring_->stages);
          Buffer &buffer = buffers_[load->result()];
          buffer = {const_cast<Op *>(load), sharedBufferBytes(type), sharedAlignmentOf(type), at, at};
          buffer.loop = block.parentOp;
        }
      if (definesSharedBuffer(*op) && !isRingLoad(*op)) {
        const Type &type = op->result()->type;
        buffers_[op->result()] = {op.get(), sharedBufferBytes(type), sharedAlignmentOf(type), at, at};
        buffers_[op->result()].loop = block.parentOp;
      }
      if (op->body) {
        number(*op->body);
        loopEnd_[op.get()] = order_.size() - 1;
      }
    }
  }

  void recordUse(Op &user, Value *root) {
    auto it = buffers_.find(root);
    if (it == buffers_.end())
      return;
    Buffer &buffer = it->second;
    size_t end = index_[&user];
    // A use inside a loop that the buffer was defined outside of happens on
    // every iteration: the buffer must survive the whole loop.
    for (Block *block = user.parent; block->parentOp; block = block->parentOp->parent) {
      Op *loop = block->parentOp;
      if (!isInside(*buffer.definer, *loop))
        end = std::max(end, loopEnd_[loop]);
    }
    buffer.end = std::max(buffer.end, end);
    if (user.kind == OpKind::AsyncLoad && sharedRoot(user.operands[0]) == root)
      buffer.receivesAsyncCopies = true;
  }

  /// An async copy may still land (predicated-off copies write zeros) after
  /// the last op that names its buffer, until an `async_wait {pending = 0}`
  /// drains every copy; until then the bytes stay reserved.
  void extendOverInFlightCopies() {
    for (auto &[root, buffer] : buffers_) {
      if (!buffer.receivesAsyncCopies)
        continue;
      size_t drained = order_.size() - 1;
      for (size_t i = buffer.end + 1; i < order_.size(); ++i)
        if (order_[i]->kind == OpKind::AsyncWait && order_[i]->intAttr("pending") == 0) {
          drained = i;
          break;
        }
      buffer.end = drained;
    }
  }

  std::vector<Op *> order_;
  std::map<const Op *, size_t> index_;
  std::map<const Op *, size_t> loopEnd_;
  std::map<const Value *, Buffer> buffers_;
  const PlannedRing *ring_;
};

bool overlapInTime(const Buffer &a, const Buffer &b) { return a.start <= b.end && b.start <= a.end; }

/// Whether two buffers must not share bytes. Two buffers written in one loop
/// body would need a barrier between the last read of the first and the
/// write of the second in every iteration; unless shared memory runs out,
/// they get bytes of their own (`separate`: buffer i keeps apart from the
/// other buffers of its loop).
bool conflict(const Buffer &a, const Buffer &b, bool separate) {
  return overlapInTime(a, b) || (separate && a.loop && a.loop == b.loop);
}

/// First fit, in order of definition: the lowest aligned offset that does
/// not collide with a buffer already placed and live at the same time.
int64_t placeBuffers(std::vector<Buffer> &buffers, const std::vector<bool> &separate) {
  int64_t peak = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::vector<std::pair<int64_t, int64_t>> taken; // [begin, end) in bytes
    for (size_t j = 0; j < i; ++j)
      if (conflict(buffers[i], buffers[j], separate[i] && separate[j]))
        taken.emplace_back(buffers[j].offset, buffers[j].offset + buffers[j].bytes);
    std::sort(taken.begin(), taken.end());
    int64_t candidate = 0;
    for (auto [begin, end] : taken) {
      if (candidate + buffers[i].bytes <= begin)
        break;
      candidate = std::max(candidate, alignUp(end, buffers[i].alignment));
    }
    buffers[i].offset = candidate;
    peak = std::max(peak, candidate + buffers[i].bytes);
  }
  return peak;
}

/// Places the buffers and returns the peak. Where the loops' buffers do not
/// all fit apart, the last defined give up their own bytes first, one at a
/// time: the earlier ones (a pipeline's stages, the first copies of a loop
/// body) keep theirs.
int64_t planBuffers(std::vector<Buffer> &buffers, const Target &target) {
  std::vector<bool> separate(buffers.size(), true);
  int64_t peak = placeBuffers(buffers, separate);
  for (size_t i = buffers.size(); i-- > 0 && peak > target.sharedMemoryBytes;) {
    if (!buffers[i].loop)
      continue;
    separate[i] = false;
    peak = placeBuffers(buffers, separate);
  }
  return peak;
}

class SmemPlanPass : public Pass {
public:
  const char *name() const override { return "smem-plan"; }
  const char *description() const override {
    return "assign shared-memory offsets, sharing bytes between buffers with disjoint lifetimes";
  }
  bool run(Module &module, const Target &target, DiagnosticEngine &diags) override {
    bool ok = true;
    for (auto &kernel : module.kernels) {
      std::vector<Buffer> buffers = LivenessBuilder().run(kernel->body);
      int64_t peak = planBuffers(buffers, target);
      for (Buffer &buffer : buffers)
        buffer.definer->attrs["offset"] = Attr(buffer.offset);
      if (peak > target.sharedMemoryBytes) {
        diags.report(kernel->loc, DiagId::SharedMemoryExceeded, peak, target.sharedMemoryBytes);
        ok = false;
      }
    }
    return ok;
  }
};

} // namespace

std::unique_ptr<Pass> createSmemPlanPass() { return std::make_unique<SmemPlanPass>(); }

int64_t passes::plannedSharedPeak(ir::Kernel &kernel, const Target &target, const passes::PlannedRing *ring) {
  std::vector<Buffer> buffers = LivenessBuilder(ring).run(kernel.body);
  return planBuffers(buffers, target);
}

} // namespace tkc
