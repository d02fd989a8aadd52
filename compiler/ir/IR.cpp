#include "ir/IR.h"

namespace tkc::ir {

namespace {
constexpr const char *kMnemonics[] = {
#define OP(Name, Mnemonic) Mnemonic,
#include "ir/OpKinds.def"
#undef OP
};
} // namespace

const char *mnemonicOf(OpKind kind) { return kMnemonics[static_cast<int>(kind)]; }

std::optional<OpKind> parseMnemonic(std::string_view mnemonic) {
  for (size_t i = 0; i < std::size(kMnemonics); ++i)
    if (mnemonic == kMnemonics[i])
      return static_cast<OpKind>(i);
  return std::nullopt;
}

int64_t Op::intAttr(const std::string &name, int64_t fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return fallback;
  if (auto *v = std::get_if<int64_t>(&it->second))
    return *v;
  if (auto *d = std::get_if<double>(&it->second))
    return static_cast<int64_t>(*d);
  return fallback;
}

double Op::floatAttr(const std::string &name, double fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return fallback;
  if (auto *d = std::get_if<double>(&it->second))
    return *d;
  if (auto *v = std::get_if<int64_t>(&it->second))
    return static_cast<double>(*v);
  return fallback;
}

std::string Op::strAttr(const std::string &name, const std::string &fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return fallback;
  if (auto *s = std::get_if<std::string>(&it->second))
    return *s;
  return fallback;
}

std::vector<int64_t> Op::listAttr(const std::string &name) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    return {};
  if (auto *l = std::get_if<std::vector<int64_t>>(&it->second))
    return *l;
  return {};
}

Value *Block::addArg(Type type, std::string nameHint) {
  auto value = std::make_unique<Value>();
  value->type = std::move(type);
  value->nameHint = std::move(nameHint);
  value->ownerBlock = this;
  value->index = static_cast<unsigned>(args.size());
  args.push_back(std::move(value));
  return args.back().get();
}

void replaceAllUsesIn(Block &block, Value *from, Value *to) {
  walk(block, [&](Op &op) {
    for (Value *&operand : op.operands)
      if (operand == from)
        operand = to;
  });
}

Op *Builder::create(OpKind kind, std::vector<Value *> operands, std::vector<Type> resultTypes,
                    std::map<std::string, Attr> attrs) {
  auto op = std::make_unique<Op>();
  op->kind = kind;
  op->operands = std::move(operands);
  op->attrs = std::move(attrs);
  op->loc = loc_;
  op->parent = block_;
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    auto value = std::make_unique<Value>();
    value->type = std::move(resultTypes[i]);
    value->definingOp = op.get();
    value->index = i;
    op->results.push_back(std::move(value));
  }
  Op *raw = op.get();
  block_->ops.insert(before_, std::move(op));
  return raw;
}

Value *Builder::value(OpKind kind, std::vector<Value *> operands, Type resultType,
                      std::map<std::string, Attr> attrs) {
  return create(kind, std::move(operands), {std::move(resultType)}, std::move(attrs))->result();
}

Value *Builder::constInt(int64_t v) {
  return value(OpKind::Const, {}, Type::scalar(DType::I32), {{"value", Attr(v)}});
}

Value *Builder::constFloat(double v, DType dtype) {
  return value(OpKind::Const, {}, Type::scalar(dtype), {{"value", Attr(v)}});
}

} // namespace tkc::ir
