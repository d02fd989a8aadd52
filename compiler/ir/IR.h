#pragma once
#include "ir/Types.h"
#include "support/SourceLocation.h"

#include <list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace tkc::ir {

enum class OpKind {
#define OP(Name, Mnemonic) Name,
#include "ir/OpKinds.def"
#undef OP
};

const char *mnemonicOf(OpKind kind);
std::optional<OpKind> parseMnemonic(std::string_view mnemonic);

struct Op;
struct Block;

/// An SSA value: an op result or a block argument.
struct Value {
  Type type;
  std::string nameHint; ///< the source name, kept for readable IR and CUDA
  Op *definingOp = nullptr;
  Block *ownerBlock = nullptr; ///< set for block arguments
  unsigned index = 0;          ///< result or argument number
};

/// Attribute values. Doubles print with full precision; +-inf is allowed.
using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

struct Op {
  OpKind kind;
  std::vector<Value *> operands;
  std::vector<std::unique_ptr<Value>> results;
  std::map<std::string, Attr> attrs;
  std::unique_ptr<Block> body; ///< `for` only
  Block *parent = nullptr;
  SourceLocation loc;

  Value *result(unsigned i = 0) const { return results[i].get(); }
  bool hasAttr(const std::string &name) const { return attrs.count(name) != 0; }
  int64_t intAttr(const std::string &name, int64_t fallback = 0) const;
  double floatAttr(const std::string &name, double fallback = 0) const;
  std::string strAttr(const std::string &name, const std::string &fallback = "") const;
  std::vector<int64_t> listAttr(const std::string &name) const;
};

struct Block {
  using OpList = std::list<std::unique_ptr<Op>>;
  std::vector<std::unique_ptr<Value>> args;
  OpList ops;
  Op *parentOp = nullptr;

  Value *addArg(Type type, std::string nameHint = "");
};

/// One kernel: its parameters (global tensors first, then the scalar symbols
/// of their dimensions), a `launch` block that computes the grid from the
/// scalar parameters on the host, and the device `body`.
struct Kernel {
  std::string name;
  int warps = 4;
  /// The source's `persistent(...)` hint: 1 or 0, or -1 when absent.
  int persistent = -1;
  SourceLocation loc;
  /// The source kernel this one specialises and the compile-time parameter
  /// values it was specialised for (`where D in {64, 128}`), in declaration
  /// order. Empty for kernels without `where`.
  std::string sourceName;
  std::vector<std::pair<std::string, int64_t>> specialization;
  Block launch; ///< arguments: the kernel's scalar parameters; ends in `grid`
  Block body;   ///< arguments: every kernel parameter

  Kernel() = default;
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;
};

struct Module {
  std::vector<std::unique_ptr<Kernel>> kernels;
};

/// Every use of `from` inside `block` (recursively) becomes `to`.
void replaceAllUsesIn(Block &block, Value *from, Value *to);
/// Calls `fn` on every op of `block`, nested ops after their parent.
template <typename Fn> void walk(Block &block, Fn &&fn) {
  for (auto &op : block.ops) {
    fn(*op);
    if (op->body)
      walk(*op->body, fn);
  }
}

/// Creates ops at an insertion point: the end of a block or before an op.
class Builder {
public:
  explicit Builder(Block &block) : block_(&block), before_(block.ops.end()) {}
  Builder(Block &block, std::list<std::unique_ptr<Op>>::iterator before) : block_(&block), before_(before) {}

  Block &block() const { return *block_; }
  void setLoc(SourceLocation loc) { loc_ = loc; }
  SourceLocation loc() const { return loc_; }

  /// Inserts a new op with the given results and returns it.
  Op *create(OpKind kind, std::vector<Value *> operands, std::vector<Type> resultTypes,
             std::map<std::string, Attr> attrs = {});
  /// The common case: one result.
  Value *value(OpKind kind, std::vector<Value *> operands, Type resultType,
               std::map<std::string, Attr> attrs = {});

  Value *constInt(int64_t v);
  Value *constFloat(double v, DType dtype = DType::F32);

private:
  Block *block_;
  std::list<std::unique_ptr<Op>>::iterator before_;
  SourceLocation loc_;
};

} // namespace tkc::ir
