#include "ir/Parser.h"
#include "support/DimExpr.h"
#include "ir/Syntax.h"
#include "ir/TextLexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_map>

namespace tkc::ir {

namespace {

/// `for` bodies nest; deeper input is rejected rather than risking the stack.
constexpr int kMaxNesting = 64;
/// A tile may hold this many elements, all its stages together: far more
/// than any kernel's (tkc-interp's limits are tested with larger ones than a
/// kernel could hold), and small enough that byte counts fit 64 bits easily.
constexpr int64_t kMaxIRTileElements = int64_t(1) << 40;

/// The hint a printed name stands for: the printer adds `.N` to repeated
/// hints and uses plain numbers for values without one.
std::string nameHintOf(std::string_view name) {
  if (isIdentifier(name))
    return std::string(name);
  size_t dot = name.rfind('.');
  if (dot != std::string_view::npos && dot + 1 < name.size() && isIdentifier(name.substr(0, dot)) &&
      std::all_of(name.begin() + dot + 1, name.end(), isDigit))
    return std::string(name.substr(0, dot));
  return "";
}

class IRParser {
public:
  IRParser(uint32_t fileId, const SourceManager &sources, DiagnosticEngine &diags)
      : fileId_(fileId), source_(sources.text(fileId)), lexer_(source_), diags_(diags) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < source_.size(); ++i)
      if (source_[i] == '\n')
        lineStarts_.push_back(i + 1);
    token_ = lexer_.lexAt(0);
  }

  std::unique_ptr<Module> parse() {
    auto module = std::make_unique<Module>();
    while (!token_.is(TokenKind::EndOfFile)) {
      auto kernel = parseKernel();
      if (!kernel)
        return nullptr;
      module->kernels.push_back(std::move(kernel));
    }
    return module;
  }

private:
  // --- tokens and diagnostics ------------------------------------------------

  void advance() { token_ = lexer_.lexAt(token_.end); }
  Token peek() const { return lexer_.lexAt(token_.end); }

  SourceLocation locAt(size_t offset) const {
    auto line = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset) - lineStarts_.begin();
    return {fileId_, static_cast<uint32_t>(line), static_cast<uint32_t>(offset - lineStarts_[line - 1] + 1)};
  }
  bool onSameLine(const Token &a, const Token &b) const {
    return source_.substr(a.offset, b.offset - a.offset).find('\n') == std::string_view::npos;
  }

  template <typename... Args> bool error(const Token &at, DiagId id, Args &&...args) {
    diags_.report(locAt(at.offset), id, std::forward<Args>(args)...);
    return false;
  }
  bool expected(const char *what) {
    if (token_.is(TokenKind::Invalid) && source_[token_.offset] == '"')
      return error(token_, DiagId::IRExpected, "a string closed by `\"` on its line", token_.spelling(source_));
    if (token_.is(TokenKind::Invalid) && token_.end == token_.offset + 1)
      return error(token_, DiagId::UnexpectedCharacter, token_.spelling(source_));
    return error(token_, DiagId::IRExpected, what, token_.spelling(source_));
  }
  bool expectPunct(char c) {
    if (!token_.isPunct(c)) {
      char what[] = {'`', c, '`', '\0'};
      return expected(what);
    }
    advance();
    return true;
  }
  bool expectKeyword(const char *word, const char *what) {
    if (!token_.isIdentifier(word))
      return expected(what);
    advance();
    return true;
  }

  template <typename Int> bool parseInteger(Int &value, const char *what) {
    if (!token_.is(TokenKind::Integer))
      return expected(what);
    auto text = token_.text;
    auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (status != std::errc() || end != text.data() + text.size())
      return error(token_, DiagId::IRNumberOutOfRange, text, what);
    advance();
    return true;
  }
  bool parseNonNegative(int64_t &value, const char *what) {
    Token at = token_;
    if (!parseInteger(value, what))
      return false;
    if (value < 0)
      return error(at, DiagId::IRNumberOutOfRange, at.text, what);
    return true;
  }

  // --- names and scopes ------------------------------------------------------
  //
  // Names are unique within a kernel. A name is visible from its definition
  // to the end of the block that defines it (nested blocks included), so a
  // value can only be used where its definition dominates the use.

  bool reserveName(const Token &name) {
    if (!definedNames_.insert(std::string(name.text)).second)
      return error(name, DiagId::IRRedefinedValue, fmt::format("%{}", name.text));
    return true;
  }
  void bind(std::string_view name, Value *value) {
    visible_[std::string(name)] = value;
    scopes_.back().push_back(std::string(name));
  }
  void pushScope() { scopes_.emplace_back(); }
  void popScope() {
    for (auto &name : scopes_.back()) {
      visible_.erase(name);
      closedNames_.insert(name);
    }
    scopes_.pop_back();
  }
  bool parseUse(Value *&value) {
    if (!token_.is(TokenKind::ValueName))
      return expected("a value such as `%x`");
    auto it = visible_.find(std::string(token_.text));
    if (it == visible_.end()) {
      std::string spelled = fmt::format("%{}", token_.text);
      return closedNames_.count(std::string(token_.text))
                 ? error(token_, DiagId::IRValueOutOfScope, spelled)
                 : error(token_, DiagId::IRUndefinedValue, spelled);
    }
    value = it->second;
    advance();
    return true;
  }

  // --- kernels ---------------------------------------------------------------

  std::unique_ptr<Kernel> parseKernel() {
    auto kernel = std::make_unique<Kernel>();
    kernel->loc = locAt(token_.offset);
    definedNames_.clear();
    closedNames_.clear();
    if (!expectKeyword("kernel", "`kernel`"))
      return nullptr;
    if (!token_.is(TokenKind::KernelName) || !isIdentifier(token_.text)) {
      expected("a kernel name such as `@gemm`");
      return nullptr;
    }
    kernel->name = std::string(token_.text);
    advance();
    if (!expectPunct('(') || !parseParams(*kernel) || !expectPunct(')'))
      return nullptr;
    if (!expectKeyword("warps", "`warps`") || !expectPunct('(') ||
        !parseInteger(kernel->warps, "the number of warps") || !expectPunct(')'))
      return nullptr;
    if (token_.isIdentifier("persistent")) {
      advance();
      if (!expectPunct('('))
        return nullptr;
      if (!token_.is(TokenKind::Integer) || (token_.text != "0" && token_.text != "1")) {
        expected("`0` or `1`");
        return nullptr;
      }
      kernel->persistent = token_.text == "1";
      advance();
      if (!expectPunct(')'))
        return nullptr;
    }
    if (!parseSpecialization(*kernel) || !parseOptionalLoc(kernel->loc) || !expectPunct('{'))
      return nullptr;

    if (!expectKeyword("launch", "`launch:`") || !expectPunct(':'))
      return nullptr;
    pushScope();
    for (auto &arg : kernel->launch.args)
      bind(arg->nameHint, arg.get());
    bool ok = parseOps(kernel->launch, /*inLaunch=*/true, 0);
    popScope();
    if (!ok || !expectKeyword("body", "`body:`") || !expectPunct(':'))
      return nullptr;
    pushScope();
    for (auto &arg : kernel->body.args)
      bind(arg->nameHint, arg.get());
    ok = parseOps(kernel->body, /*inLaunch=*/false, 0);
    popScope();
    if (!ok || !expectPunct('}'))
      return nullptr;
    return kernel;
  }

  /// `[from @source] [where(NAME = INT, ...)]`
  bool parseSpecialization(Kernel &kernel) {
    if (token_.isIdentifier("from")) {
      advance();
      if (!token_.is(TokenKind::KernelName) || !isIdentifier(token_.text))
        return expected("the name of the source kernel such as `@gemm`");
      kernel.sourceName = std::string(token_.text);
      advance();
    }
    if (!token_.isIdentifier("where"))
      return true;
    advance();
    if (!expectPunct('('))
      return false;
    for (;;) {
      if (!token_.is(TokenKind::Identifier))
        return expected("a compile-time parameter name");
      std::string name(token_.text);
      advance();
      int64_t value = 0;
      if (!expectPunct('=') || !parseInteger(value, "a 64-bit integer"))
        return false;
      kernel.specialization.emplace_back(std::move(name), value);
      if (!token_.isPunct(','))
        break;
      advance();
    }
    return expectPunct(')');
  }

  /// Parameters become arguments of the body; scalar ones also of `launch`.
  bool parseParams(Kernel &kernel) {
    if (token_.isPunct(')'))
      return true;
    for (;;) {
      if (!token_.is(TokenKind::ValueName) || !isIdentifier(token_.text))
        return expected("a parameter name such as `%M`");
      Token name = token_;
      if (!reserveName(name))
        return false;
      advance();
      Type type;
      if (!expectPunct(':') || !parseType(type))
        return false;
      kernel.body.addArg(type, std::string(name.text));
      if (type.isScalar())
        kernel.launch.addArg(type, std::string(name.text));
      if (!token_.isPunct(','))
        return true;
      advance();
    }
  }

  // --- ops -------------------------------------------------------------------

  /// Parses ops into `block` up to its closing `}` (or `body:` in launch).
  bool parseOps(Block &block, bool inLaunch, int depth) {
    for (;;) {
      if (token_.isPunct('}') || token_.is(TokenKind::EndOfFile))
        return true;
      if (inLaunch && token_.isIdentifier("body") && peek().isPunct(':'))
        return true;
      if (!parseOp(block, depth))
        return false;
    }
  }

  bool parseOp(Block &block, int depth) {
    Token start = token_;
    std::vector<Token> resultNames;
    if (token_.is(TokenKind::ValueName)) {
      for (;;) {
        if (!token_.is(TokenKind::ValueName))
          return expected("a result name such as `%x`");
        if (!reserveName(token_))
          return false;
        resultNames.push_back(token_);
        advance();
        if (!token_.isPunct(','))
          break;
        advance();
      }
      if (!expectPunct('='))
        return false;
    }
    if (!token_.is(TokenKind::Identifier))
      return expected(resultNames.empty() ? "an operation" : "an operation name");
    Token mnemonic = token_;
    std::optional<OpKind> kind = parseMnemonic(mnemonic.text);
    if (!kind)
      return error(mnemonic, DiagId::IRUnknownOp, mnemonic.text);
    advance();
    SourceLocation loc = locAt(start.offset);
    if (*kind == OpKind::For)
      return parseForOp(block, resultNames, loc, depth);

    std::vector<Value *> operands;
    if (token_.is(TokenKind::ValueName) && onSameLine(mnemonic, token_) && !parseOperandList(operands))
      return false;
    std::map<std::string, Attr> attrs;
    if (token_.isPunct('{') && !parseAttrDict(attrs))
      return false;
    std::vector<Type> types;
    Token typesAt = token_;
    if (token_.isPunct(':')) {
      advance();
      if (!parseTypeList(types))
        return false;
    }
    if (types.size() != resultNames.size())
      return error(resultNames.empty() ? typesAt : start, DiagId::IRResultCount, resultNames.size(), types.size());
    if (!parseOptionalLoc(loc))
      return false;

    Builder builder(block);
    builder.setLoc(loc);
    Op *op = builder.create(*kind, std::move(operands), std::move(types), std::move(attrs));
    bindResults(*op, resultNames);
    return true;
  }

  void bindResults(Op &op, const std::vector<Token> &names) {
    for (size_t i = 0; i < names.size(); ++i) {
      op.results[i]->nameHint = nameHintOf(names[i].text);
      bind(names[i].text, op.results[i].get());
    }
  }

  bool parseOperandList(std::vector<Value *> &operands) {
    for (;;) {
      Value *value = nullptr;
      if (!parseUse(value))
        return false;
      operands.push_back(value);
      if (!token_.isPunct(','))
        return true;
      advance();
    }
  }

  /// `for %iv = %lo to %hi step %s [iter_args(%a = %init, ...)] [{attrs}]
  ///  -> (types) { ops }`
  bool parseForOp(Block &block, const std::vector<Token> &resultNames, SourceLocation loc, int depth) {
    if (depth + 1 > kMaxNesting)
      return error(token_, DiagId::NestingTooDeep, kMaxNesting);
    std::vector<Value *> operands(3, nullptr);
    Token inductionName = token_;
    if (!token_.is(TokenKind::ValueName))
      return expected("an induction variable such as `%i`");
    if (!reserveName(inductionName))
      return false;
    advance();
    if (!expectPunct('=') || !parseUse(operands[0]) || !expectKeyword("to", "`to`") || !parseUse(operands[1]) ||
        !expectKeyword("step", "`step`") || !parseUse(operands[2]))
      return false;

    std::vector<Token> iterNames;
    if (token_.isIdentifier("iter_args")) {
      advance();
      if (!expectPunct('('))
        return false;
      for (;;) {
        if (!token_.is(TokenKind::ValueName))
          return expected("a loop-carried value name such as `%acc`");
        if (!reserveName(token_))
          return false;
        iterNames.push_back(token_);
        advance();
        Value *init = nullptr;
        if (!expectPunct('=') || !parseUse(init))
          return false;
        operands.push_back(init);
        if (!token_.isPunct(','))
          break;
        advance();
      }
      if (!expectPunct(')'))
        return false;
    }
    std::map<std::string, Attr> attrs;
    if (startsAttrDict() && !parseAttrDict(attrs))
      return false;
    if (!token_.is(TokenKind::Arrow))
      return expected("`->` and the loop's result types");
    advance();
    std::vector<Type> types;
    Token typesAt = token_;
    if (!expectPunct('('))
      return false;
    if (!token_.isPunct(')') && !parseTypeList(types))
      return false;
    if (!expectPunct(')'))
      return false;
    if (types.size() != resultNames.size())
      return error(typesAt, DiagId::IRResultCount, resultNames.size(), types.size());

    auto body = std::make_unique<Block>();
    pushScope();
    bind(inductionName.text, body->addArg(Type::scalar(DType::I32), nameHintOf(inductionName.text)));
    for (size_t i = 0; i < iterNames.size(); ++i)
      bind(iterNames[i].text, body->addArg(operands[3 + i]->type, nameHintOf(iterNames[i].text)));
    bool ok = expectPunct('{') && parseOps(*body, /*inLaunch=*/false, depth + 1) && expectPunct('}');
    popScope();
    if (!ok || !parseOptionalLoc(loc))
      return false;

    Builder builder(block);
    builder.setLoc(loc);
    Op *op = builder.create(OpKind::For, std::move(operands), std::move(types), std::move(attrs));
    op->body = std::move(body);
    op->body->parentOp = op;
    bindResults(*op, resultNames);
    return true;
  }

  /// `loc(LINE:COL)`: where the op came from in the `.tk` source.
  bool parseOptionalLoc(SourceLocation &loc) {
    if (!token_.isIdentifier("loc") || !peek().isPunct('('))
      return true;
    advance();
    advance();
    uint32_t line = 0, column = 0;
    Token lineAt = token_;
    if (!parseInteger(line, "a line number") || !expectPunct(':') || !parseInteger(column, "a column number"))
      return false;
    if (line == 0)
      return error(lineAt, DiagId::IRNumberOutOfRange, "0", "a line number");
    if (!expectPunct(')'))
      return false;
    loc = {fileId_, line, column};
    return true;
  }

  // --- attributes ------------------------------------------------------------

  /// Tells `{attrs}` from a body's `{`: attributes open with `name =` or `}`.
  bool startsAttrDict() const {
    if (!token_.isPunct('{'))
      return false;
    Token first = peek();
    return first.isPunct('}') || (first.is(TokenKind::Identifier) && lexer_.lexAt(first.end).isPunct('='));
  }

  bool parseAttrDict(std::map<std::string, Attr> &attrs) {
    advance(); // '{'
    if (token_.isPunct('}')) {
      advance();
      return true;
    }
    for (;;) {
      if (!token_.is(TokenKind::Identifier))
        return expected("an attribute name");
      Token name = token_;
      advance();
      Attr value;
      if (!expectPunct('=') || !parseAttrValue(value))
        return false;
      if (!attrs.emplace(std::string(name.text), std::move(value)).second)
        return error(name, DiagId::IRDuplicateAttr, name.text);
      if (!token_.isPunct(','))
        break;
      advance();
    }
    return expectPunct('}');
  }

  bool parseAttrValue(Attr &value) {
    if (token_.is(TokenKind::Integer)) {
      int64_t v = 0;
      if (!parseInteger(v, "a 64-bit integer"))
        return false;
      value = v;
      return true;
    }
    if (token_.is(TokenKind::Float) || token_.isIdentifier("inf") || token_.isIdentifier("nan")) {
      std::string_view text = token_.text;
      double v = 0;
      if (text == "inf" || text == "-inf") {
        v = text[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      } else if (text == "nan") {
        v = std::numeric_limits<double>::quiet_NaN();
      } else {
        auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (status != std::errc() || end != text.data() + text.size())
          return error(token_, DiagId::IRNumberOutOfRange, text, "a double");
      }
      value = v;
      advance();
      return true;
    }
    if (token_.is(TokenKind::String)) {
      std::string decoded;
      if (!decodeStringLiteral(token_.text, decoded))
        return expected("a string with valid escapes (`\\\\`, `\\\"`, `\\n`, `\\t`, `\\XX`)");
      value = std::move(decoded);
      advance();
      return true;
    }
    if (token_.isPunct('[')) {
      advance();
      std::vector<int64_t> list;
      if (!token_.isPunct(']')) {
        for (;;) {
          int64_t v = 0;
          if (!parseInteger(v, "an integer"))
            return false;
          list.push_back(v);
          if (!token_.isPunct(','))
            break;
          advance();
        }
      }
      if (!expectPunct(']'))
        return false;
      value = std::move(list);
      return true;
    }
    return expected("an attribute value (integer, float, string or `[...]`)");
  }

  // --- types -----------------------------------------------------------------

  bool parseTypeList(std::vector<Type> &types) {
    for (;;) {
      Type type;
      if (!parseType(type))
        return false;
      types.push_back(std::move(type));
      if (!token_.isPunct(','))
        return true;
      advance();
    }
  }

  bool parseDTypeName(DType &dtype) {
    std::optional<DType> parsed;
    if (token_.is(TokenKind::Identifier))
      parsed = parseDType(token_.text);
    if (!parsed) {
      if (token_.is(TokenKind::Identifier))
        return error(token_, DiagId::IRBadType, token_.text);
      return expected("an element type (`i1`, `i32`, `f32`, `bf16`, `f16`)");
    }
    dtype = *parsed;
    advance();
    return true;
  }

  bool parseType(Type &type) {
    if (!token_.is(TokenKind::Identifier))
      return expected("a type");
    std::string_view word = token_.text;
    if (auto dtype = parseDType(word)) {
      type = Type::scalar(*dtype);
      advance();
      return true;
    }
    if (word == "global")
      return parseGlobalType(type);
    if (word == "tile" || word == "reg" || word == "smem")
      return parseTileType(type);
    return error(token_, DiagId::IRBadType, word);
  }

  /// `global<[out] dtype[dim, ...]>`; a dim is a number or a parameter name.
  bool parseGlobalType(Type &type) {
    advance();
    if (!expectPunct('<'))
      return false;
    bool isOutput = false;
    if (token_.isIdentifier("out")) {
      isOutput = true;
      advance();
    }
    DType dtype = DType::F32;
    if (!parseDTypeName(dtype) || !expectPunct('['))
      return false;
    std::vector<Dim> dims;
    for (;;) {
      Dim dim;
      if (token_.is(TokenKind::Identifier)) {
        dim.symbol = std::string(token_.text);
        advance();
      } else if (!parseNonNegative(dim.size, "a dimension (a number or a parameter name)")) {
        return false;
      }
      if (token_.isPunct('=')) { // a derived dim: `= "cdiv(M, 64)"`
        advance();
        if (!token_.is(TokenKind::String) || !decodeStringLiteral(token_.text, dim.derived) ||
            !parseDimExpr(dim.derived))
          return expected("a dimension expression in quotes, such as \"cdiv(M, 64)\"");
        advance();
      }
      dims.push_back(std::move(dim));
      if (!token_.isPunct(','))
        break;
      advance();
    }
    if (!expectPunct(']') || !expectPunct('>'))
      return false;
    type = Type::global(dtype, std::move(dims), isOutput);
    return true;
  }

  /// `tile|reg|smem<dtype[shape] [, #layout] [, stages = N]>`
  bool parseTileType(Type &type) {
    Token start = token_;
    MemSpace space = token_.text == "reg"    ? MemSpace::Register
                     : token_.text == "smem" ? MemSpace::Shared
                                             : MemSpace::Unplaced;
    advance();
    if (!expectPunct('<'))
      return false;
    DType dtype = DType::F32;
    if (!parseDTypeName(dtype) || !expectPunct('['))
      return false;
    std::vector<int64_t> shape;
    if (!token_.isPunct(']')) {
      for (;;) {
        int64_t extent = 0;
        if (!parseNonNegative(extent, "a tile extent"))
          return false;
        shape.push_back(extent);
        if (!token_.isPunct(','))
          break;
        advance();
      }
    }
    if (!expectPunct(']'))
      return false;
    type = Type::tile(dtype, std::move(shape), space);
    if (token_.isPunct(',') && peek().is(TokenKind::LayoutName)) {
      advance();
      if (!parseLayout(type.layout))
        return false;
    }
    if (token_.isPunct(',')) {
      advance();
      if (!expectKeyword("stages", "`stages` or a layout such as `#swizzle`") || !expectPunct('=') ||
          !parseInteger(type.stages, "a stage count"))
        return false;
    }
    // Passes and the emitter multiply element counts by element sizes and
    // stages in 64 bits; a bound here keeps those products from overflowing.
    __int128 elements = std::max(type.stages, 1);
    bool huge = false;
    for (int64_t extent : type.shape)
      huge = huge || __builtin_mul_overflow(elements, __int128(extent), &elements);
    if (huge || elements > kMaxIRTileElements)
      return error(start, DiagId::IRNumberOutOfRange, huge ? std::string("beyond 128 bits") : fmt::format("{}", elements),
                   fmt::format("the element count of {} (at most {}, stages counted)", type.str(), kMaxIRTileElements));
    return expectPunct('>');
  }

  bool parseLayout(Layout &layout) {
    static const std::pair<std::string_view, LayoutKind> kLayouts[] = {
        {"acc", LayoutKind::Acc},           {"opa", LayoutKind::OperandA},
        {"accrow", LayoutKind::AccRow},     {"acccol", LayoutKind::AccCol},
        {"strip", LayoutKind::Strip},
        {"striprow", LayoutKind::StripRow}, {"stripcol", LayoutKind::StripCol},
        {"swizzle", LayoutKind::Swizzle},   {"swizzle128", LayoutKind::Swizzle128},
        {"mbarrier", LayoutKind::Mbarrier}, {"vec", LayoutKind::Vec},
    };
    auto found = std::find_if(std::begin(kLayouts), std::end(kLayouts),
                              [&](auto &entry) { return entry.first == token_.text; });
    if (found == std::end(kLayouts))
      return error(token_, DiagId::IRBadType, fmt::format("#{}", token_.text));
    layout.kind = found->second;
    advance();
    if (layout.kind == LayoutKind::Swizzle || layout.kind == LayoutKind::Swizzle128 ||
        layout.kind == LayoutKind::Mbarrier || layout.kind == LayoutKind::Vec)
      return true;
    if (!expectPunct('<') || !parseInteger(layout.warpsM, "a warp count"))
      return false;
    bool twoDimensional = layout.kind == LayoutKind::Acc || layout.kind == LayoutKind::OperandA ||
                          layout.kind == LayoutKind::AccRow || layout.kind == LayoutKind::AccCol;
    if (twoDimensional && !parseWarpColumns(layout.warpsN))
      return false;
    // `#strip<W, L>`: L lanes per row (narrow strips); `#strip<W, L, V>`:
    // chunks of V elements a lane.
    if (!twoDimensional && token_.isPunct(',')) {
      advance();
      if (!parseInteger(layout.lanes, "a lane count"))
        return false;
      if (token_.isPunct(',')) {
        advance();
        if (!parseInteger(layout.chunk, "a chunk length"))
          return false;
      }
    }
    return expectPunct('>');
  }

  /// The `xN` of `#acc<MxN>`: the lexer reads `4x2` as `4` then `x2`.
  bool parseWarpColumns(int &warpsN) {
    if (token_.isIdentifier("x")) {
      advance();
      return parseInteger(warpsN, "a warp count");
    }
    if (token_.is(TokenKind::Identifier) && token_.text.size() > 1 && token_.text[0] == 'x' &&
        std::all_of(token_.text.begin() + 1, token_.text.end(), isDigit)) {
      std::string_view digits = token_.text.substr(1);
      auto [end, status] = std::from_chars(digits.data(), digits.data() + digits.size(), warpsN);
      if (status != std::errc())
        return error(token_, DiagId::IRNumberOutOfRange, digits, "a warp count");
      advance();
      return true;
    }
    return expected("`x` and a warp count, as in `#acc<4x1>`");
  }

  uint32_t fileId_;
  std::string_view source_;
  TextLexer lexer_;
  DiagnosticEngine &diags_;
  std::vector<size_t> lineStarts_;
  Token token_;

  std::set<std::string> definedNames_;
  std::set<std::string> closedNames_; ///< names whose defining block has ended
  std::unordered_map<std::string, Value *> visible_;
  std::vector<std::vector<std::string>> scopes_;
};

} // namespace

std::unique_ptr<Module> parseModule(uint32_t fileId, const SourceManager &sources, DiagnosticEngine &diags) {
  return IRParser(fileId, sources, diags).parse();
}

} // namespace tkc::ir
