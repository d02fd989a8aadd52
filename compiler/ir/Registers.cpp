#include "ir/Registers.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace tkc::ir {

namespace {

/// Elements each thread holds of a register value (see threadRegisters).
int64_t threadElements(const Type &type) {
  const Layout &l = type.layout;
  const auto &shape = type.shape;
  switch (l.kind) {
  case LayoutKind::OperandA: return shape[0] / l.warpsM / 16 * (shape[1] / 16) * 8;
  case LayoutKind::Acc: return shape[0] / l.warpsM / 16 * (shape[1] / l.warpsN / 8) * 4;
  case LayoutKind::AccRow: return shape[0] / l.warpsM / 16 * 2;
  case LayoutKind::AccCol: return shape[0] / l.warpsN / 8 * 2;
  case LayoutKind::Strip:
  case LayoutKind::StripRow: {
    // A row takes `lanes` lanes of chunks of `chunk` elements; a warp takes
    // 32 / lanes rows at a time.
    int64_t rows = shape[0] / l.warpsM / (32 / l.lanes);
    return l.kind == LayoutKind::StripRow ? rows : rows * (shape[1] / (l.chunk * l.lanes)) * l.chunk;
  }
  case LayoutKind::StripCol: return shape[0] / (l.chunk * l.lanes) * l.chunk;
  case LayoutKind::Vec: return (shape[0] + 31) / 32;
  default: return 1;
  }
}

/// Element-by-element ops (and the index tiles that iota makes), which the
/// code generator writes as loops over a thread's elements that ptxas fuses
/// with their readers once unrolled: their results need not all be held at
/// once.
bool fusesIntoReaders(OpKind kind) {
  switch (kind) {
  case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
  case OpKind::Max: case OpKind::Min: case OpKind::CDiv: case OpKind::Lt: case OpKind::Le:
  case OpKind::Gt: case OpKind::Ge: case OpKind::Eq: case OpKind::Ne: case OpKind::And:
  case OpKind::Or: case OpKind::Select: case OpKind::Neg: case OpKind::Exp: case OpKind::Exp2:
  case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt: case OpKind::Abs:
  case OpKind::Tanh: case OpKind::Erf: case OpKind::Sigmoid: case OpKind::Silu:
  case OpKind::Cast: case OpKind::Broadcast: case OpKind::Mask: case OpKind::Iota:
    return true;
  default:
    return false;
  }
}

bool fuses(const Value *v) { return v->definingOp && fusesIntoReaders(v->definingOp->kind); }

/// The registers of the values live between ops. A value's last use is
/// counted at the op of the value's own block that holds it (the loop, for
/// a use in the loop's body).
///
/// A fused result is made where the first op outside its fusion needs it.
/// It is held whole from there to the last such op only where that cannot
/// be helped: where a later reader also reads what needs every element of
/// it first (a reduction, a product). The row of a softmax is reduced to
/// its maximum, and the difference from that maximum reads the row again,
/// so the row is held across the reduction although every op that makes it
/// fuses. A tile that is reduced and also rounded for a product is not:
/// both may read each element as it is made.
class Liveness {
public:
  explicit Liveness(const Kernel &kernel) {
    walk(const_cast<Block &>(kernel.body), [&](Op &op) {
      Block &block = *op.parent;
      if (!index_.count(&op)) {
        int i = 0;
        for (auto &sibling : block.ops)
          index_[sibling.get()] = i++;
      }
    });
    walk(const_cast<Block &>(kernel.body), [&](Op &user) {
      for (const Value *v : user.operands) {
        const Block *home = v->definingOp ? v->definingOp->parent : v->ownerBlock;
        const Op *at = &user;
        while (at->parent != home && at->parent->parentOp)
          at = at->parent->parentOp;
        if (at->parent != home)
          continue;
        uses_[v].push_back({at, &user});
        if (at != &user)
          usedInBody_[at].insert(v);
      }
    });
    place(kernel.body);
  }

  RegisterPeak peak(const Block &body) {
    visit(body, {});
    return peak_;
  }

private:
  struct Use {
    const Op *at;   // the op of the value's block that holds the use
    const Op *user; // the reader itself (inside `at`'s body if not `at`)
  };

  /// Where each value of `block` (and of the blocks inside it) starts to
  /// be held, where it is last needed and how many registers it holds.
  void place(const Block &block) {
    // after[j][i]: op j reads, through any ops of the block, what op i makes.
    int n = static_cast<int>(block.ops.size());
    std::vector<std::vector<bool>> after(n, std::vector<bool>(n, false));
    for (auto &op : block.ops) {
      int i = index_.at(op.get());
      for (auto &result : op->results) {
        auto uses = uses_.find(result.get());
        if (uses == uses_.end())
          continue;
        for (const Use &use : uses->second) {
          std::vector<bool> &row = after[index_.at(use.at)];
          row[i] = true;
          for (int k = 0; k < i; ++k)
            row[k] = row[k] || after[i][k];
        }
      }
    }
    // Readers come after what they read: walked backwards, a fused reader
    // is placed before its operands.
    for (auto it = block.ops.rbegin(); it != block.ops.rend(); ++it) {
      if ((*it)->body)
        place(*(*it)->body);
      for (auto &result : (*it)->results)
        placeValue(result.get(), index_.at(it->get()), after);
    }
    for (auto &arg : block.args)
      placeValue(arg.get(), -1, after);
  }

  void placeValue(const Value *v, int defined, const std::vector<std::vector<bool>> &after) {
    auto uses = uses_.find(v);
    if (uses == uses_.end())
      return;
    start_[v] = defined;
    held_[v] = threadRegisters(v->type);
    int last = -1;
    for (const Use &use : uses->second)
      last = std::max(last, index_.at(use.at));
    lastUse_[v] = last;
    if (!fuses(v))
      return;
    // Made where the first op outside the fusion needs it (a loop reading
    // it in its body is such an op).
    int first = INT32_MAX;
    last = -1;
    for (const Use &use : uses->second) {
      int need = index_.at(use.at);
      if (use.at == use.user && fusesIntoReaders(use.user->kind))
        if (auto reader = start_.find(use.user->result()); reader != start_.end())
          need = reader->second;
      first = std::min(first, need);
      last = std::max(last, need);
    }
    start_[v] = first;
    lastUse_[v] = last;
    held_[v] = last > first && heldWhole(v, defined, after) ? threadRegisters(v->type) : 0;
  }

  /// Whether an op that reads fused result `v` (directly or through other
  /// fused ops) also reads what an op outside the fusion made from `v`.
  bool heldWhole(const Value *v, int defined, const std::vector<std::vector<bool>> &after) const {
    const Block &block = *v->definingOp->parent;
    std::vector<const Value *> work = {v};
    std::set<const Op *> seen;
    while (!work.empty()) {
      const Value *u = work.back();
      work.pop_back();
      auto uses = uses_.find(u);
      if (uses == uses_.end())
        continue;
      for (const Use &use : uses->second) {
        if (use.at != use.user || !seen.insert(use.user).second)
          continue;
        for (const Value *operand : use.user->operands) {
          if (!operand->definingOp || operand->definingOp->parent != &block)
            continue;
          int j = index_.at(operand->definingOp);
          for (auto &op : block.ops) {
            int b = index_.at(op.get());
            if (b <= defined || b > j)
              continue;
            if (!fusesIntoReaders(op->kind) && after[b][defined] && (b == j || after[j][b]))
              return true;
          }
        }
        if (fusesIntoReaders(use.user->kind) && !use.user->results.empty())
          work.push_back(use.user->result());
      }
    }
    return false;
  }

  int64_t heldRegisters(const Value *v) const {
    auto it = held_.find(v);
    return it == held_.end() ? 0 : it->second;
  }

  /// What the values live around a block hold throughout it.
  struct Around {
    int64_t registers = 0;
    const Value *largest = nullptr;
  };

  void visit(const Block &block, const Around &around) {
    // Between-point p lies after op p (-1: the block's start); a value held
    // from op d and last needed at op u is live at the points d .. u - 1.
    int n = static_cast<int>(block.ops.size());
    std::vector<int64_t> delta(n + 2, 0);
    std::vector<std::vector<const Value *>> dyingAt(n);
    auto define = [&](const Value *v) {
      auto last = lastUse_.find(v);
      int64_t registers = heldRegisters(v);
      if (last == lastUse_.end() || registers == 0)
        return;
      int at = start_.at(v);
      if (last->second <= at)
        return;
      delta[at + 1] += registers;
      delta[last->second + 1] -= registers;
      dyingAt[last->second].push_back(v);
    };
    for (auto &arg : block.args)
      define(arg.get());
    for (auto &op : block.ops)
      for (auto &result : op->results)
        define(result.get());
    int64_t live = 0;
    int i = 0;
    int peakPoint = -2;
    int64_t peakRegisters = -1;
    for (auto &op : block.ops) {
      live += delta[i]; // the point before op i
      if (live > peakRegisters) {
        peakRegisters = live;
        peakPoint = i - 1;
      }
      if (op->body) {
        // What dies at the loop but is read in its body lives through it.
        int64_t through = live;
        for (const Value *v : dyingAt[i])
          if (!usedInBody_[op.get()].count(v))
            through -= heldRegisters(v);
        Around inner = {around.registers + through, around.largest};
        const Value *largestHere = largestLive(block, i - 1, [&](const Value *v) {
          return lastUse_.at(v) > i || usedInBody_[op.get()].count(v);
        });
        if (largestHere && (!inner.largest || heldRegisters(largestHere) > heldRegisters(inner.largest)))
          inner.largest = largestHere;
        visit(*op->body, inner);
      }
      ++i;
    }
    live += delta[n];
    if (live > peakRegisters) {
      peakRegisters = live;
      peakPoint = n - 1;
    }
    if (around.registers + peakRegisters <= peak_.registers)
      return;
    peak_.registers = around.registers + peakRegisters;
    const Value *largest = largestLive(block, peakPoint, [&](const Value *v) { return lastUse_.at(v) > peakPoint; });
    peak_.largest = largest && (!around.largest || heldRegisters(largest) >= heldRegisters(around.largest))
                        ? largest
                        : around.largest;
  }

  /// The value with the most registers among those of `block` held from
  /// at or before point `point` that `keep` holds live.
  template <typename Keep> const Value *largestLive(const Block &block, int point, Keep &&keep) {
    const Value *largest = nullptr;
    auto consider = [&](const Value *v) {
      if (heldRegisters(v) == 0 || !lastUse_.count(v) || start_.at(v) > point || !keep(v))
        return;
      if (!largest || heldRegisters(v) > heldRegisters(largest))
        largest = v;
    };
    for (auto &arg : block.args)
      consider(arg.get());
    for (auto &op : block.ops)
      for (auto &result : op->results)
        consider(result.get());
    return largest;
  }

  std::map<const Op *, int> index_;
  std::map<const Value *, std::vector<Use>> uses_;
  std::map<const Value *, int> start_;   // the op after which a value is held (-1: the block's start)
  std::map<const Value *, int> lastUse_; // the last op that needs it
  std::map<const Value *, int64_t> held_;
  std::map<const Op *, std::set<const Value *>> usedInBody_;
  RegisterPeak peak_;
};

} // namespace

int64_t threadRegisters(const Type &type) {
  if (!type.isRegister())
    return 0;
  return threadElements(type) * dtypeBytes(type.dtype) / 4;
}

RegisterPeak peakLiveRegisters(const Kernel &kernel) { return Liveness(kernel).peak(kernel.body); }

const Value *originOf(const Value *v) {
  for (;;) {
    const Op *loop = v->definingOp;
    if (loop && loop->kind == OpKind::For && loop->operands.size() > 3 + v->index)
      v = loop->operands[3 + v->index];
    else if (!v->definingOp && v->ownerBlock && v->ownerBlock->parentOp && v->index > 0 &&
             v->ownerBlock->parentOp->operands.size() > 2 + v->index)
      v = v->ownerBlock->parentOp->operands[2 + v->index];
    else
      return v;
  }
}

} // namespace tkc::ir
