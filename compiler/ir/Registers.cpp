#include "ir/Registers.h"

#include <map>
#include <set>

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

/// Registers a value holds for the estimate: none for the results that
/// fuse into their readers.
int64_t heldRegisters(const Value *v) {
  if (v->definingOp && fusesIntoReaders(v->definingOp->kind))
    return 0;
  return threadRegisters(v->type);
}

/// The registers of the values live between ops. A value's last use is
/// counted at the op of the value's own block that holds it (the loop, for
/// a use in the loop's body).
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
        int &last = lastUse_[v];
        last = std::max(last, index_.at(at));
        if (at != &user)
          usedInBody_[at].insert(v);
      }
    });
  }

  RegisterPeak peak(const Block &body) {
    visit(body, {});
    return peak_;
  }

private:
  /// What the values live around a block hold throughout it.
  struct Around {
    int64_t registers = 0;
    const Value *largest = nullptr;
  };

  void visit(const Block &block, const Around &around) {
    // Between-point p lies after op p (-1: the block's start); a value
    // defined at d and last used at u is live at the points d .. u - 1.
    int n = static_cast<int>(block.ops.size());
    std::vector<int64_t> delta(n + 2, 0);
    std::vector<std::vector<const Value *>> dyingAt(n);
    auto define = [&](const Value *v, int at) {
      auto last = lastUse_.find(v);
      int64_t registers = heldRegisters(v);
      if (last == lastUse_.end() || last->second <= at || registers == 0)
        return;
      delta[at + 1] += registers;
      delta[last->second + 1] -= registers;
      dyingAt[last->second].push_back(v);
    };
    for (auto &arg : block.args)
      define(arg.get(), -1);
    int i = 0;
    for (auto &op : block.ops) {
      for (auto &result : op->results)
        define(result.get(), i);
      ++i;
    }
    int64_t live = 0;
    int peakPoint = -2;
    int64_t peakRegisters = -1;
    i = 0;
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

  /// The value with the most registers among those of `block` defined at
  /// or before point `point` that `keep` holds live.
  template <typename Keep> const Value *largestLive(const Block &block, int point, Keep &&keep) {
    const Value *largest = nullptr;
    auto consider = [&](const Value *v) {
      if (heldRegisters(v) == 0 || !lastUse_.count(v) || !keep(v))
        return;
      if (!largest || heldRegisters(v) > heldRegisters(largest))
        largest = v;
    };
    for (auto &arg : block.args)
      consider(arg.get());
    int i = 0;
    for (auto it = block.ops.begin(); it != block.ops.end() && i <= point; ++it, ++i)
      for (auto &result : (*it)->results)
        consider(result.get());
    return largest;
  }

  std::map<const Op *, int> index_;
  std::map<const Value *, int> lastUse_;
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
