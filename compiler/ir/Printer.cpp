#include "ir/Printer.h"
#include "ir/Syntax.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <set>
#include <unordered_map>

namespace tkc::ir {

namespace {

/// The shortest text that reads back as exactly `value`, always with a '.'
/// or an exponent so that it cannot be mistaken for an integer.
std::string formatDouble(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, error == std::errc() ? end : buffer);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string quoteString(const std::string &text) {
  static const char *kHex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += '\\';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

/// Gives every value of one kernel a distinct name: its hint when that is a
/// free identifier, else the hint with a `.N` suffix, else a number. Names
/// are handed out in textual order, so a module prints the same way every
/// time and a parsed module (whose hints are the printed names without the
/// suffix) is named exactly as before.
class ValueNamer {
public:
  /// Kernel parameters keep their hint: dimension symbols refer to it.
  void nameParameter(const Value *value) {
    names_[value] = value->nameHint;
    used_.insert(value->nameHint);
  }
  /// The launch block's copy of a parameter shares the parameter's name.
  void aliasParameter(const Value *value) { names_[value] = value->nameHint; }

  const std::string &name(const Value *value) {
    auto it = names_.find(value);
    if (it != names_.end())
      return it->second;
    return names_.emplace(value, freshName(value->nameHint)).first->second;
  }

private:
  std::string freshName(const std::string &hint) {
    if (isIdentifier(hint)) {
      if (used_.insert(hint).second)
        return hint;
      unsigned &suffix = nextSuffix_[hint];
      for (;;) {
        std::string candidate = hint + "." + std::to_string(++suffix);
        if (used_.insert(candidate).second)
          return candidate;
      }
    }
    for (;;) {
      std::string candidate = std::to_string(nextNumber_++);
      if (used_.insert(candidate).second)
        return candidate;
    }
  }

  std::unordered_map<const Value *, std::string> names_;
  std::set<std::string> used_;
  std::unordered_map<std::string, unsigned> nextSuffix_;
  unsigned nextNumber_ = 0;
};

class ModulePrinter {
public:
  ModulePrinter(std::string &out, const PrintOptions &options) : out_(out), options_(options) {}

  void printKernel(const Kernel &kernel) {
    ValueNamer namer;
    namer_ = &namer;
    out_ += fmt::format("kernel @{}(", kernel.name);
    for (size_t i = 0; i < kernel.body.args.size(); ++i) {
      const Value *param = kernel.body.args[i].get();
      namer.nameParameter(param);
      out_ += fmt::format("{}%{}: {}", i ? ", " : "", param->nameHint, param->type.str());
    }
    for (auto &arg : kernel.launch.args)
      namer.aliasParameter(arg.get());
    out_ += ") warps(" + std::to_string(kernel.warps) + ")";
    if (kernel.persistent >= 0)
      out_ += " persistent(" + std::to_string(kernel.persistent) + ")";
    printSpecialization(kernel);
    printLoc(kernel.loc);
    out_ += " {\nlaunch:\n";
    printOps(kernel.launch, 1);
    out_ += "body:\n";
    printOps(kernel.body, 1);
    out_ += "}\n";
    namer_ = nullptr;
  }

private:
  /// ` from @source where(D = 64)`: the source kernel this one specialises.
  void printSpecialization(const Kernel &kernel) {
    if (!kernel.sourceName.empty() && kernel.sourceName != kernel.name)
      out_ += fmt::format(" from @{}", kernel.sourceName);
    if (kernel.specialization.empty())
      return;
    out_ += " where(";
    for (size_t i = 0; i < kernel.specialization.size(); ++i)
      out_ += fmt::format("{}{} = {}", i ? ", " : "", kernel.specialization[i].first,
                          kernel.specialization[i].second);
    out_ += ")";
  }

  void printOps(const Block &block, int depth) {
    for (auto &op : block.ops)
      printOp(*op, depth);
  }

  void printOp(const Op &op, int depth) {
    out_.append(2 * depth, ' ');
    if (!op.results.empty()) {
      for (size_t i = 0; i < op.results.size(); ++i)
        out_ += fmt::format("{}{}", i ? ", " : "", valueName(op.results[i].get()));
      out_ += " = ";
    }
    out_ += mnemonicOf(op.kind);
    if (op.kind == OpKind::For) {
      printForOp(op, depth);
      return;
    }
    for (size_t i = 0; i < op.operands.size(); ++i)
      out_ += fmt::format("{}{}", i ? ", " : " ", valueName(op.operands[i]));
    printAttrs(op);
    if (!op.results.empty()) {
      out_ += " : ";
      for (size_t i = 0; i < op.results.size(); ++i)
        out_ += fmt::format("{}{}", i ? ", " : "", op.results[i]->type.str());
    }
    printLoc(op.loc);
    out_ += '\n';
  }

  /// `for %iv = %lo to %hi step %step iter_args(%a = %init) {attrs} -> (types) {`
  void printForOp(const Op &op, int depth) {
    const Block *body = op.body.get();
    auto operand = [&](size_t i) { return valueName(i < op.operands.size() ? op.operands[i] : nullptr); };
    auto bodyArg = [&](size_t i) {
      return valueName(body && i < body->args.size() ? body->args[i].get() : nullptr);
    };
    out_ += fmt::format(" {} = {} to {} step {}", bodyArg(0), operand(0), operand(1), operand(2));
    if (op.operands.size() > 3) {
      out_ += " iter_args(";
      for (size_t i = 3; i < op.operands.size(); ++i)
        out_ += fmt::format("{}{} = {}", i > 3 ? ", " : "", bodyArg(i - 2), operand(i));
      out_ += ")";
    }
    printAttrs(op);
    out_ += " -> (";
    for (size_t i = 0; i < op.results.size(); ++i)
      out_ += fmt::format("{}{}", i ? ", " : "", op.results[i]->type.str());
    out_ += ") {\n";
    if (body)
      printOps(*body, depth + 1);
    out_.append(2 * depth, ' ');
    out_ += '}';
    printLoc(op.loc);
    out_ += '\n';
  }

  void printAttrs(const Op &op) {
    if (op.attrs.empty())
      return;
    out_ += " {";
    bool first = true;
    for (auto &[name, value] : op.attrs) { // std::map: sorted by name
      out_ += fmt::format("{}{} = {}", first ? "" : ", ", name, printAttr(value));
      first = false;
    }
    out_ += '}';
  }

  void printLoc(SourceLocation loc) {
    if (options_.locations && loc.isValid())
      out_ += fmt::format(" loc({}:{})", loc.line, loc.column);
  }

  /// Malformed IR still prints (it is what one wants to see when the
  /// verifier complains), with a marker where an operand is missing.
  std::string valueName(const Value *value) {
    if (!value)
      return "%<<null>>";
    return fmt::format("%{}", namer_->name(value));
  }

  std::string &out_;
  const PrintOptions &options_;
  ValueNamer *namer_ = nullptr;
};

} // namespace

std::string printAttr(const Attr &attr) {
  if (auto *i = std::get_if<int64_t>(&attr))
    return std::to_string(*i);
  if (auto *d = std::get_if<double>(&attr))
    return formatDouble(*d);
  if (auto *s = std::get_if<std::string>(&attr))
    return quoteString(*s);
  const auto &list = std::get<std::vector<int64_t>>(attr);
  std::string text = "[";
  for (size_t i = 0; i < list.size(); ++i)
    text += fmt::format("{}{}", i ? ", " : "", list[i]);
  return text + "]";
}

void printModule(const Module &module, std::string &out, const PrintOptions &options) {
  ModulePrinter printer(out, options);
  for (size_t i = 0; i < module.kernels.size(); ++i) {
    if (i)
      out += '\n';
    printer.printKernel(*module.kernels[i]);
  }
}

std::string printModule(const Module &module, const PrintOptions &options) {
  std::string out;
  printModule(module, out, options);
  return out;
}

} // namespace tkc::ir
