#!/usr/bin/env python3
"""Checks the TextMate grammar of .tk files against the compiler.

usage: check-textmate.py SRC_ROOT [--grammar JSON] [--tkc TKC]

1. Every regex of the grammar compiles with Python's re (the grammar keeps
   to the syntax that re and the Oniguruma of editors read alike).
2. The words the grammar singles out (reserved words, element types,
   operations, annotation words, built-in values) are exactly those of the
   lexer, the parser and the semantic checker, and of grammar/tk.ebnf; every
   fixed token spelling of the lexer is one grammar token.
3. Every example and test input (with --tkc, also every other test file
   that tkc lexes) is tokenized the way an editor does (line by line,
   earliest match first, then rule order): every character outside
   whitespace has a scope and none is marked invalid, and with --tkc the
   tokens are exactly the ones `tkc --emit=tokens` reports.
4. A few scopes on a snippet.
Prints a summary; on a failure, says what differs and exits with 1.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


class GrammarError(Exception):
    pass


class Grammar:
    def __init__(self, doc):
        self.doc = doc
        self.repository = doc.get("repository", {})
        self.regex_count = 0
        self.regex_sources = []
        self._compiled = {}
        self.top = self.expand(doc.get("patterns", []))

    def regex(self, source, where):
        if source not in self._compiled:
            try:
                self._compiled[source] = re.compile(source)
            except re.error as error:
                raise GrammarError(f"{where}: regex {source!r} does not compile: {error}")
            self.regex_count += 1
            self.regex_sources.append(source)
        return self._compiled[source]

    def expand(self, patterns, seen=()):
        """The rules a pattern list stands for, includes resolved in order."""
        rules = []
        for pattern in patterns:
            include = pattern.get("include")
            if include is not None:
                if include in ("$self", "$base"):
                    target = {"patterns": self.doc.get("patterns", [])}
                elif include.startswith("#") and include[1:] in self.repository:
                    target = self.repository[include[1:]]
                else:
                    raise GrammarError(f"include {include!r} names no rule of the repository")
                if include in seen:
                    continue
                rules.extend(self.expand([target], seen + (include,)))
            elif "match" in pattern:
                pattern["_match"] = self.regex(pattern["match"], pattern.get("name", "match"))
                rules.append(pattern)
            elif "begin" in pattern:
                pattern["_begin"] = self.regex(pattern["begin"], pattern.get("name", "begin"))
                pattern["_end"] = self.regex(pattern["end"], pattern.get("name", "end"))
                pattern["_inner"] = self.expand(pattern.get("patterns", []), seen)
                rules.append(pattern)
            elif "patterns" in pattern:
                rules.extend(self.expand(pattern["patterns"], seen))
            else:
                raise GrammarError(f"a rule with neither match, begin nor patterns: {pattern}")
        return rules


class Tokens:
    """Scopes of every character of a text, and its tokens (the spans of a
    match, or of each capture of a match that has captures)."""

    def __init__(self, text):
        self.text = text
        self.scopes = [[] for _ in text]
        self.leaves = []  # (start, end, innermost scope, every scope)

    def scope(self, start, end, names):
        for i in range(start, end):
            self.scopes[i].extend(names)

    def leaf(self, start, end):
        if end > start:
            names = list(self.scopes[start])
            self.leaves.append((start, end, names[-1] if names else None, names))


def apply_match(tokens, base, match, name, captures):
    start, end = base + match.start(), base + match.end()
    if name:
        tokens.scope(start, end, [name])
    groups = sorted((int(group), capture) for group, capture in captures.items())
    for group, capture in groups:
        span = match.span(group)
        if span[0] >= 0 and "name" in capture:
            tokens.scope(base + span[0], base + span[1], [capture["name"]])
    inner = [match.span(group) for group, _ in groups if group > 0 and match.span(group)[0] >= 0]
    if inner:
        for span in inner:
            tokens.leaf(base + span[0], base + span[1])
    else:
        tokens.leaf(start, end)


def tokenize(grammar, text):
    """Scopes a text as editors do: line by line; at each position the rule
    whose match starts first wins, ties going to the earlier rule (and to the
    end of an open begin/end rule)."""
    tokens = Tokens(text)
    stack = []  # the begin/end rules open at this point
    offset = 0
    for line in text.splitlines(keepends=True):
        pos = 0
        while pos < len(line):
            best = None
            if stack:
                end = stack[-1]["_end"].search(line, pos)
                if end:
                    best = (end.start(), end, None)
            for rule in stack[-1]["_inner"] if stack else grammar.top:
                match = (rule.get("_match") or rule["_begin"]).search(line, pos)
                if match and (best is None or match.start() < best[0]):
                    best = (match.start(), match, rule)
            outer = [r["name"] for r in stack if "name" in r]
            if best is None:
                tokens.scope(offset + pos, offset + len(line), outer)
                break
            _, match, rule = best
            tokens.scope(offset + pos, offset + match.end(), outer)
            if rule is None:
                closing = stack.pop()
                apply_match(tokens, offset, match, None, closing.get("endCaptures", closing.get("captures", {})))
            elif "_match" in rule:
                apply_match(tokens, offset, match, rule.get("name"), rule.get("captures", {}))
            else:
                apply_match(tokens, offset, match, rule.get("name"), rule.get("beginCaptures", rule.get("captures", {})))
                stack.append(rule)
            # An empty match still moves on, as editors do.
            pos = match.end() if match.end() > pos else pos + 1
        offset += len(line)
    return tokens


def first_scope(grammar, text):
    tokens = tokenize(grammar, text)
    for start, end, name, _ in tokens.leaves:
        if start == 0:
            return name, end
    return None, 0


def word_class(scope):
    if scope is None:
        return None
    if scope.startswith("keyword.other.annotation."):
        return "annotation words"
    if scope.startswith("keyword.") or scope.startswith("constant.language."):
        return "reserved words"
    if scope.startswith("storage.type."):
        return "element types"
    if scope.startswith("support.function."):
        return "operations"
    if scope.startswith("variable.language."):
        return "built-in values"
    return None


# --- what the compiler and the normative grammar say ------------------------------


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def found(values, what, path):
    if not values:
        raise GrammarError(f"found no {what} in {path}: was it restructured? update check-textmate.py")
    return values


def function_body(source, signature, path):
    start = source.find(signature)
    if start < 0:
        raise GrammarError(f"found no `{signature}` in {path}")
    end = source.find("\n}\n", start)
    return source[start:end]


def compiler_words(root):
    """Each class of words, from the sources that define it; and the
    consistency problems between those sources."""
    problems = []
    lexer = read(root, "compiler/frontend/Lexer.cpp")
    reserved = set(found(re.findall(r'\{"(' + IDENT + r')",\s*TokenKind::Kw\w+\}', lexer),
                         "keyword table", "compiler/frontend/Lexer.cpp"))

    ebnf = read(root, "grammar/tk.ebnf")
    ebnf_reserved = re.search(r"Reserved words:\s*(.*?)\.", ebnf, re.S)
    ebnf_reserved = set(found(ebnf_reserved and ebnf_reserved.group(1).split(), "reserved words", "grammar/tk.ebnf"))
    rules = re.sub(r"\(\*.*?\*\)", "", ebnf, flags=re.S)
    dtype_rule = re.search(r"^dtype\s*=(.*?);", rules, re.M | re.S)
    ebnf_dtypes = set(found(dtype_rule and re.findall(r'"(' + IDENT + ')"', dtype_rule.group(1)),
                            "dtype rule", "grammar/tk.ebnf"))
    ebnf_words = {w for w in re.findall(r'"(' + IDENT + ')"', rules) if len(w) > 1}

    reference = read(root, "grammar/reference.md")
    reference_reserved = re.search(r"Reserved:\s*`([^`]*)`", reference)
    reference_reserved = set(found(reference_reserved and reference_reserved.group(1).split(),
                                   "reserved words", "grammar/reference.md"))

    sema_types = read(root, "compiler/frontend/SemaTypes.cpp")
    names = dict(re.findall(r'case ElemType::(\w+): return "(\w+)";', sema_types))
    parse = function_body(sema_types, "parseElemType(const std::string &name)", "compiler/frontend/SemaTypes.cpp")
    spelled = re.search(r"for \(ElemType elem : \{([^}]*)\}", parse)
    dtypes = {names.get(e, e) for e in found(spelled and re.findall(r"ElemType::(\w+)", spelled.group(1)),
                                              "element types parseElemType accepts", "compiler/frontend/SemaTypes.cpp")}

    parser = read(root, "compiler/frontend/Parser.cpp")
    annotations = set(found(re.findall(r'\.text\s*[!=]=\s*"(' + IDENT + ')"', parser),
                            "names compared by spelling", "compiler/frontend/Parser.cpp"))

    calls = function_body(read(root, "compiler/frontend/SemaCalls.cpp"), "Type KernelChecker::checkCall(",
                          "compiler/frontend/SemaCalls.cpp")
    operations = set(found(re.findall(r'"(' + IDENT + ')"', calls), "operation names",
                           "compiler/frontend/SemaCalls.cpp")) - reserved - dtypes

    sema_expr = read(root, "compiler/frontend/SemaExpr.cpp")
    block = found(re.findall(r'expr\.name\s*!=\s*"(' + IDENT + ')"', sema_expr), "block name",
                  "compiler/frontend/SemaExpr.cpp")
    axes = found(re.findall(r'expr\.field\s*!=\s*"(' + IDENT + ')"', sema_expr), "block axes",
                 "compiler/frontend/SemaExpr.cpp")
    sm = found(re.findall(r'kBuiltin\w*\s*=\s*"(' + IDENT + ')"', read(root, "compiler/frontend/Sema.cpp")),
               "built-in constants", "compiler/frontend/Sema.cpp")

    def differ(a, a_name, b, b_name, what):
        if a - b:
            problems.append(f"{what} in {a_name} but not in {b_name}: {' '.join(sorted(a - b))}")
        if b - a:
            problems.append(f"{what} in {b_name} but not in {a_name}: {' '.join(sorted(b - a))}")

    differ(reserved, "the lexer", ebnf_reserved, "grammar/tk.ebnf", "reserved words")
    differ(reserved, "the lexer", reference_reserved, "grammar/reference.md", "reserved words")
    differ(dtypes, "the semantic checker", ebnf_dtypes, "grammar/tk.ebnf", "element types")
    differ(annotations | reserved | dtypes, "the compiler", ebnf_words, "the rules of grammar/tk.ebnf", "words")

    spelling = function_body(lexer, "const char *fixedSpelling(TokenKind kind)", "compiler/frontend/Lexer.cpp")
    fixed = re.findall(r'case TokenKind::(\w+): return "([^"]+)";', spelling)
    spellings = found([s for kind, s in fixed if not kind.startswith("Kw")], "token spellings",
                      "compiler/frontend/Lexer.cpp")
    words = {
        "reserved words": reserved,
        "element types": dtypes,
        "operations": operations,
        "annotation words": annotations,
        "built-in values": set(block) | set(sm),
    }
    return words, axes, spellings, problems


# --- the checks ---------------------------------------------------------------------


def check_words(grammar, words, axes, spellings):
    problems = []
    universe = set().union(*words.values())
    for source in grammar.regex_sources:
        universe |= set(re.findall(IDENT, source))
    got = {what: set() for what in words}
    for word in sorted(universe):
        classes = set()
        for context in ("{}(", "{}.x", "{} = 1"):
            scope, end = first_scope(grammar, context.format(word))
            if end == len(word) and word_class(scope):
                classes.add(word_class(scope))
        if len(classes) > 1:
            problems.append(f"`{word}` is scoped as {' and as '.join(sorted(classes))}")
        for what in classes:
            got[what].add(word)
    for what, expected in words.items():
        if expected - got[what]:
            problems.append(f"{what} of the compiler the grammar does not scope as such: "
                            f"{' '.join(sorted(expected - got[what]))}")
        if got[what] - expected:
            problems.append(f"the grammar scopes as {what} what the compiler does not: "
                            f"{' '.join(sorted(got[what] - expected))}")
    block = sorted(words["built-in values"] & {"block"}) or ["block"]
    for axis in axes:
        text = f"{block[0]}.{axis}"
        tokens = tokenize(grammar, text)
        if not any(s == len(text) - 1 and e == len(text) and n for s, e, n, _ in tokens.leaves):
            problems.append(f"`{text}`: the axis is not a token of its own")
    for spelling in spellings:
        text = f"a {spelling} b"
        tokens = tokenize(grammar, text)
        if not any(s == 2 and e == 2 + len(spelling) and n for s, e, n, _ in tokens.leaves):
            problems.append(f"the token `{spelling}` is not one grammar token in `{text}`")
    return problems


def line_starts(text):
    starts, offset = [], 0
    for line in text.splitlines(keepends=True):
        starts.append(offset)
        offset += len(line)
    return starts


def check_file(grammar, path, tkc):
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    lexed = None
    if tkc:
        run = subprocess.run([tkc, path, "--emit=tokens", "-o", "-"], capture_output=True, text=True)
        if run.returncode != 0:
            return None, [f"{path}: tkc --emit=tokens failed: {run.stderr.strip()}"], 0
        lexed = run.stdout
    tokens = tokenize(grammar, text)
    starts = line_starts(text)
    problems = []
    for i, ch in enumerate(text):
        invalid = [n for n in tokens.scopes[i] if n.startswith("invalid.")]
        if not ch.isspace() and (invalid or not tokens.scopes[i]):
            line = next(n for n in range(len(starts) - 1, -1, -1) if starts[n] <= i)
            problems.append(f"{path}:{line + 1}:{i - starts[line] + 1}: `{ch}` is scoped "
                            f"{invalid[0] if invalid else 'not at all'}")
            break
    code = {(s, e) for s, e, _, names in tokens.leaves if not any(n.startswith("comment.") for n in names)}
    if lexed is not None:
        output, lexed = lexed, set()
        for entry in output.splitlines():
            m = re.match(r"(\d+):(\d+) (\w+) '(.*)'$", entry)
            if m and m.group(3) != "eof":
                # tkc counts columns in bytes.
                line = int(m.group(1)) - 1
                line_text = text[starts[line]:]
                start = starts[line] + len(line_text.encode()[:int(m.group(2)) - 1].decode())
                lexed.add((start, start + len(m.group(4))))
        for start, end in sorted(lexed - code)[:3]:
            problems.append(f"{path}: tkc's token `{text[start:end]}` at offset {start} is not a grammar token")
        for start, end in sorted(code - lexed)[:3]:
            problems.append(f"{path}: the grammar's token `{text[start:end]}` at offset {start} is not one of tkc's")
    return True, problems, len(code)


SNIPPET = """kernel k(X: bf16[N], Y: out f32[N]) /* a
block comment */ grid(cdiv(N, 64)) {
  // x
  v = rowsum(load(X[block.x * 64 +: 64, :]))^T
  for i in 0..n pipelined(stages = 2) { s = 1.5e-3 + inf + 64k }
}
"""

EXPECTED_SCOPES = [
    ("kernel", "keyword.other.kernel.tk"),
    ("k", "entity.name.function.kernel.tk"),
    ("X", "variable.parameter.tk"),
    ("bf16", "storage.type.tk"),
    ("out", "keyword.other.tk"),
    ("a\nblock comment", "comment.block.tk"),
    ("grid", "keyword.other.annotation.tk"),
    ("cdiv", "support.function.tk"),
    ("// x", "comment.line.double-slash.tk"),
    ("v", "variable.other.tk"),
    ("rowsum", "support.function.tk"),
    ("block", "variable.language.block.tk"),
    ("x", "variable.other.property.tk"),
    ("+:", "keyword.operator.slice.tk"),
    ("^T", "keyword.operator.transpose.tk"),
    ("for", "keyword.control.tk"),
    ("..", "keyword.operator.range.tk"),
    ("pipelined", "keyword.other.tk"),
    ("stages", "keyword.other.annotation.tk"),
    ("1.5e-3", "constant.numeric.float.tk"),
    ("inf", "constant.language.inf.tk"),
    ("64k", "invalid.illegal.number.tk"),
]


def check_snippet(grammar):
    tokens = tokenize(grammar, SNIPPET)
    problems, start = [], 0
    for text, scope in EXPECTED_SCOPES:
        at = SNIPPET.find(text, start)
        start = at + len(text)
        got = {n for i in range(at, at + len(text)) for n in tokens.scopes[i] if not text[i - at].isspace()}
        if got != {scope} and not (scope.startswith("comment.") and scope in got):
            problems.append(f"snippet: `{text}` is scoped {' '.join(sorted(got)) or 'not at all'}, not {scope}")
    return problems


def check_vscode_package(root, doc):
    """The VS Code extension names the grammar's scope and files that the
    install steps of editors/README.md copy next to it."""
    try:
        with open(os.path.join(root, "editors", "vscode", "package.json"), encoding="utf-8") as f:
            contributes = json.load(f)["contributes"]
    except (OSError, ValueError, KeyError) as error:
        return [f"editors/vscode/package.json: {error}"]
    problems = []
    grammars = contributes.get("grammars", [])
    if [g.get("scopeName") for g in grammars] != [doc["scopeName"]]:
        problems.append("editors/vscode/package.json does not name the grammar's scope")
    files = [g.get("path", "") for g in grammars] + [l.get("configuration", "") for l in contributes.get("languages", [])]
    for path in files:
        if not os.path.isfile(os.path.join(root, "editors", "textmate", os.path.basename(path))):
            problems.append(f"editors/vscode/package.json names {path}, which editors/textmate lacks")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--grammar", help="the grammar to check (default: editors/textmate/tk.tmLanguage.json)")
    parser.add_argument("--tkc", help="compare the tokens with `TKC --emit=tokens`")
    args = parser.parse_args()
    path = args.grammar or os.path.join(args.root, "editors", "textmate", "tk.tmLanguage.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("scopeName") != "source.tk" or "tk" not in doc.get("fileTypes", []):
            raise GrammarError("the grammar's scopeName is not source.tk or its fileTypes lack tk")
        grammar = Grammar(doc)
        grammar.expand([{"include": "#" + name} for name in grammar.repository])
        words, axes, spellings, problems = compiler_words(args.root)
    except (GrammarError, OSError, ValueError) as error:
        print(f"error: {error}")
        return 1
    problems += check_vscode_package(args.root, doc)
    print(f"grammar: {doc['scopeName']}, {grammar.regex_count} regexes compile")
    print(", ".join(f"{what}: {len(ws)}" for what, ws in words.items()))
    problems += check_words(grammar, words, axes, spellings)

    # The examples and test inputs must all be valid; other tests are when
    # tkc lexes them.
    files = sorted(glob.glob(os.path.join(args.root, "examples", "*.tk")) +
                   glob.glob(os.path.join(args.root, "test", "**", "Inputs", "**", "*.tk"), recursive=True))
    tests = []
    if args.tkc:
        tests = sorted(set(glob.glob(os.path.join(args.root, "test", "**", "*.tk"), recursive=True)) - set(files))
    count = skipped = 0
    for file in files + tests:
        lexed, file_problems, file_tokens = check_file(grammar, file, args.tkc)
        if not lexed and file in tests:
            skipped += 1
            continue
        problems += file_problems
        count += file_tokens
    print(f"{len(files) + len(tests) - skipped} files, {count} tokens" +
          (f", the same as tkc's ({skipped} it does not lex skipped)" if args.tkc else ""))
    problems += check_snippet(grammar)
    for problem in problems:
        print(f"error: {problem}")
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
