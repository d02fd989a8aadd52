#!/usr/bin/env python3
"""Checks the tree-sitter grammar of .tk files against the compiler.

usage: check-tree-sitter.py SRC_ROOT --npm DIR [--cache DIR] [--grammar-dir DIR]
                            [--tkc TKC] [--parse FILE...] [--build-only]

The current tree-sitter CLI is a prebuilt binary that its npm package
downloads when it is installed, from outside the npm registry. This check
uses what the npm registry itself holds instead: the packages of tree-sitter
0.13 (tree-sitter-cli and tree-sitter, in DIR as the .tgz files that
`npm pack` writes), which carry the C++ sources of the parser generator and
the C sources of the runtime. It builds both once (into --cache), then:

1. evaluates grammar.js (with tree-sitter-dsl.js beside this script) and has
   the generator build the parse tables: a conflict the grammar does not
   declare, or a rule it cannot read, fails the check;
2. compares the words the grammar singles out with the compiler's: its
   reserved words must be those of the lexer (and of grammar/tk.ebnf and
   grammar/reference.md), and every other word must be an element type or a
   word the parser singles out by spelling; every fixed token spelling of the
   lexer is a token of the grammar;
3. checks queries/highlights.scm against the grammar: the node types, fields
   and tokens it names exist, it gives every word of the grammar a capture,
   and the operations it highlights are those of the semantic checker;
4. parses a few snippets that the scanner (src/scanner.c) must read as tkc
   does (`0..n`, `2.`, `x^T`; `64k` and `x^Tx` are errors);
5. parses every example and every .tk file under test/: each file that
   `tkc --emit=ast` accepts must parse without an ERROR or MISSING node, and
   each that tkc rejects for its syntax (a lexer or parser diagnostic of
   compiler/support/DiagnosticKinds.def) must have one, unless each such
   diagnostic is one that the grammar leaves to tkc (see SYNTAX_LEFT_TO_TKC).
   Without --tkc only the examples are parsed. So is every ```tk block of
   docs/*.md.

With --parse, it parses the given files instead and reports each error.
Prints a summary; on a failure, says what differs and exits with 1.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

# Bumped when the way the tools are built changes, so that a cache built the
# old way is not used.
BUILD_RECIPE = "1"

# Diagnostics of tkc's lexer and parser for text that the grammar accepts:
# limits tkc enforces, and checks it makes once a construct is parsed.
SYNTAX_LEFT_TO_TKC = {
    "NestingTooDeep",
    "ExpressionTooDeep",
    "DuplicateAnnotation",
    "ChainedComparison",
    "InvalidNumber",  # only for an integer literal out of range; see syntax_errors()
}

# A kernel around each snippet; {} is the statement.
SNIPPET_KERNEL = "kernel k(X: f32[N], Y: out f32[N]) grid(1) {{\n  {}\n}}\n"
SNIPPETS = [
    # (statement, parses without error)
    ("for i in 0..n { a = i }", True),
    ("for i in n..8 pipelined(stages = 2) { a = i }", True),
    ("a = 2. + 1.5 + 1e-5 + 3E+2 + 0.25e1 + 007 + inf", True),
    ("a = mma(x^T, y)^T", True),
    ("a = x[:, new] * y[new, :] /* note */ // end", True),
    ("store(Y[i +: 64, :], max(v[:, new], s)); atomic_add(Y[0], 1)", True),
    ("a = 64k", False),
    ("a = 1e + 2", False),
    ("a = x^Tx", False),
    ("a = x ^ T", False),
    ("a = (1 + 2", False),
    ("for i in 0...n { }", False),
]

PARSE_DRIVER = r"""
#include <tree_sitter/runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const TSLanguage *tree_sitter_tk(void);

/* The first ERROR or MISSING node under `node`, in document order. */
static int first_error(TSNode node, TSPoint *at, const char **what) {
  if (ts_node_is_missing(node)) {
    *at = ts_node_start_point(node);
    *what = "MISSING";
    return 1;
  }
  if (strcmp(ts_node_type(node), "ERROR") == 0) {
    *at = ts_node_start_point(node);
    *what = "ERROR";
    return 1;
  }
  if (!ts_node_has_error(node))
    return 0;
  for (uint32_t i = 0; i < ts_node_child_count(node); i++)
    if (first_error(ts_node_child(node, i), at, what))
      return 1;
  *at = ts_node_start_point(node);
  *what = "ERROR";
  return 1;
}

/* usage: parse [--sexp] FILE...; prints `FILE: ok` or `FILE:LINE:COLUMN: ERROR`
   (or MISSING) for each file. */
int main(int argc, char **argv) {
  int sexp = 0, errors = 0;
  TSParser *parser = ts_parser_new();
  if (!ts_parser_set_language(parser, tree_sitter_tk())) {
    fprintf(stderr, "the parser's language version is not the runtime's\n");
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sexp") == 0) {
      sexp = 1;
      continue;
    }
    FILE *file = fopen(argv[i], "rb");
    if (!file) {
      printf("%s: cannot read\n", argv[i]);
      errors++;
      continue;
    }
    char *text = NULL;
    size_t size = 0, capacity = 0, n;
    char chunk[65536];
    while ((n = fread(chunk, 1, sizeof chunk, file)) > 0) {
      if (size + n > capacity) {
        capacity = 2 * (size + n);
        text = realloc(text, capacity);
      }
      memcpy(text + size, chunk, n);
      size += n;
    }
    fclose(file);
    TSTree *tree = ts_parser_parse_string(parser, NULL, text ? text : "", (uint32_t)size);
    TSNode root = ts_tree_root_node(tree);
    if (sexp) {
      char *string = ts_node_string(root);
      printf("%s\n", string);
      free(string);
    }
    TSPoint at;
    const char *what;
    if (first_error(root, &at, &what)) {
      printf("%s:%u:%u: %s\n", argv[i], at.row + 1, at.column + 1, what);
      errors++;
    } else {
      printf("%s: ok\n", argv[i]);
    }
    ts_tree_delete(tree);
    free(text);
  }
  ts_parser_delete(parser);
  return errors ? 1 : 0;
}
"""

GENERATE_DRIVER = r"""
#include <tree_sitter/compiler.h>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

// Reads a grammar.json on stdin and writes parser.c on stdout.
int main() {
  std::stringstream input;
  input << std::cin.rdbuf();
  std::string grammar = input.str();
  TSCompileResult result = ts_compile_grammar(grammar.c_str(), nullptr);
  if (result.error_type != TSCompileErrorTypeNone) {
    std::fprintf(stderr, "%s\n", result.error_message);
    return 1;
  }
  std::fputs(result.code, stdout);
  return 0;
}
"""


class CheckError(Exception):
    pass


def load_textmate_check():
    """compiler_words() of the TextMate grammar's check: the compiler's word
    lists, read from its sources."""
    spec = importlib.util.spec_from_file_location("check_textmate", os.path.join(HERE, "check-textmate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- building tree-sitter 0.13 ----------------------------------------------------


def run(command, what, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise CheckError(f"{what} failed: {' '.join(command[:3])} ...\n{result.stderr.strip()[-3000:]}")
    return result.stdout


def find_package(npm_dir, name):
    found = sorted(glob.glob(os.path.join(npm_dir, f"{name}-[0-9]*.tgz")))
    if not found:
        raise CheckError(f"no {name}-VERSION.tgz in {npm_dir} (tools/setup.sh fetches it with `npm pack`)")
    return found[-1]


def extract(archive, into):
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if member.name.startswith("/") or ".." in member.name.split("/"):
                raise CheckError(f"{archive}: unsafe path {member.name}")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    return os.path.join(into, "package")


def build_tools(npm_dir, cache_dir):
    """Builds the generator and the runtime of the npm packages in npm_dir
    into cache_dir (once for each pair of packages); returns (generator,
    runtime object, runtime include dir, generator include dir, version)."""
    cli_tgz = find_package(npm_dir, "tree-sitter-cli")
    runtime_tgz = find_package(npm_dir, "tree-sitter")
    digest = hashlib.sha256(BUILD_RECIPE.encode())
    for path in (cli_tgz, runtime_tgz):
        with open(path, "rb") as f:
            digest.update(f.read())
    done = os.path.join(cache_dir, digest.hexdigest()[:16])
    if not os.path.exists(os.path.join(done, "stamp")):
        os.makedirs(cache_dir, exist_ok=True)
        work = tempfile.mkdtemp(prefix="build-", dir=cache_dir)
        try:
            build_into(work, cli_tgz, runtime_tgz)
            shutil.rmtree(done, ignore_errors=True)
            os.rename(work, done)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    with open(os.path.join(done, "stamp")) as f:
        version = f.read().strip()
    return (os.path.join(done, "tree-sitter-generate"), os.path.join(done, "runtime.o"),
            os.path.join(done, "runtime", "vendor", "tree-sitter", "include"),
            os.path.join(done, "cli", "vendor", "tree-sitter", "include"), version)


def build_into(work, cli_tgz, runtime_tgz):
    cc = os.environ.get("CC", "cc")
    cxx = os.environ.get("CXX", "c++")
    cli = extract(cli_tgz, os.path.join(work, "x-cli"))
    os.rename(cli, os.path.join(work, "cli"))
    runtime = extract(runtime_tgz, os.path.join(work, "x-runtime"))
    os.rename(runtime, os.path.join(work, "runtime"))
    with open(os.path.join(work, "cli", "package.json")) as f:
        version = json.load(f)["version"]
    vendor = os.path.join(work, "cli", "vendor", "tree-sitter")
    includes = [f"-I{os.path.join(vendor, d)}" for d in
                ("include", "src", "externals/utf8proc", "externals/json-parser")]
    sources = sorted(glob.glob(os.path.join(vendor, "src", "compiler", "**", "*.cc"), recursive=True))
    sources += [os.path.join(vendor, "externals", "json-parser", "json.c"),
                os.path.join(vendor, "externals", "utf8proc", "utf8proc.c")]
    driver = os.path.join(work, "generate.cc")
    with open(driver, "w") as f:
        f.write(GENERATE_DRIVER)

    # -O0: the 2018 sources are not free of undefined behaviour, and -O1
    # builds a generator that makes external tokens anonymous.
    def compile_one(index, source):
        obj = os.path.join(work, f"{index}.o")
        command = ([cxx, "-std=c++14"] if source.endswith(".cc") else [cc]) + ["-O0", "-w"] + includes
        run(command + ["-c", source, "-o", obj], f"compiling {os.path.relpath(source, work)}")
        return obj

    jobs = max(1, min(2, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        objects = list(pool.map(compile_one, range(len(sources)), sources))
    run([cxx, "-std=c++14", "-O0", f"-I{os.path.join(vendor, 'include')}", driver] + objects +
        ["-o", os.path.join(work, "tree-sitter-generate")], "linking the generator")
    rt = os.path.join(work, "runtime", "vendor", "tree-sitter")
    run([cc, "-O2", "-w", f"-I{rt}/include", f"-I{rt}/src", f"-I{rt}/externals/utf8proc", "-c",
         f"{rt}/src/runtime/runtime.c", "-o", os.path.join(work, "runtime.o")], "compiling the runtime")
    for obj in objects:
        os.remove(obj)
    with open(os.path.join(work, "stamp"), "w") as f:
        f.write(version + "\n")


# --- the grammar ----------------------------------------------------------------


def load_grammar(grammar_dir):
    """grammar.js evaluated into the grammar.json of `tree-sitter generate`."""
    node = shutil.which("node")
    if not node:
        raise CheckError("node is not on PATH")
    output = run([node, os.path.join(HERE, "tree-sitter-dsl.js"), os.path.join(grammar_dir, "grammar.js")],
                 "evaluating grammar.js")
    return json.loads(output)


def walk(rule, inside_token=False):
    """Every rule object under `rule`, with whether it is inside token()."""
    yield rule, inside_token
    inside_token = inside_token or rule["type"] in ("TOKEN", "IMMEDIATE_TOKEN")
    for member in rule.get("members", []):
        yield from walk(member, inside_token)
    if "content" in rule:
        yield from walk(rule["content"], inside_token)


def grammar_strings(grammar):
    """The fixed strings that are tokens of their own (not parts of token())."""
    strings = set()
    for rule in list(grammar["rules"].values()) + grammar["externals"]:
        for sub, inside_token in walk(rule):
            if sub["type"] == "STRING" and not inside_token:
                strings.add(sub["value"])
    return strings


def node_types(grammar):
    """The named node types, each with its fields, and the anonymous ones."""
    rules = grammar["rules"]

    def fields(rule, seen):
        names = set()
        for sub, _ in walk(rule):
            if sub["type"] == "FIELD":
                names.add(sub["name"])
            elif sub["type"] == "SYMBOL" and sub["name"].startswith("_") and sub["name"] in rules \
                    and sub["name"] not in seen:
                names |= fields(rules[sub["name"]], seen | {sub["name"]})
        return names

    named = {name: fields(rule, {name}) for name, rule in rules.items() if not name.startswith("_")}
    for rule in rules.values():
        for sub, _ in walk(rule):
            if sub["type"] == "ALIAS" and sub["named"]:
                named.setdefault(sub["value"], set())
    for external in grammar["externals"]:
        if external["type"] == "SYMBOL" and not external["name"].startswith("_"):
            named.setdefault(external["name"], set())
    return named, grammar_strings(grammar)


def legacy_grammar(grammar):
    """The grammar in the JSON of tree-sitter 0.13, which has no fields."""
    def strip(value):
        if isinstance(value, dict):
            if value.get("type") == "FIELD":
                return strip(value["content"])
            return {key: strip(v) for key, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    legacy = strip(grammar)
    for key in ("supertypes",):
        if legacy.get(key):
            raise CheckError(f"tree-sitter 0.13 has no {key}")
        legacy.pop(key, None)
    if legacy.get("word") is None:
        legacy.pop("word", None)
    return legacy


def build_parser(tools, grammar, grammar_dir, work):
    generator, runtime_obj, runtime_include, cli_include, _ = tools
    with open(os.path.join(work, "grammar.json"), "w") as f:
        json.dump(legacy_grammar(grammar), f)
    with open(os.path.join(work, "grammar.json")) as f:
        generated = subprocess.run([generator], stdin=f, capture_output=True, text=True)
    if generated.returncode != 0:
        raise CheckError(f"generating the parser failed:\n{generated.stderr.strip()}")
    with open(os.path.join(work, "parser.c"), "w") as f:
        f.write(generated.stdout)
    with open(os.path.join(work, "parse.c"), "w") as f:
        f.write(PARSE_DRIVER)
    cc = os.environ.get("CC", "cc")
    objects = []
    for source, flags in ((os.path.join(work, "parser.c"), ["-O0", "-w"]),
                          (os.path.join(grammar_dir, "src", "scanner.c"), ["-O1", "-Wall", "-Wextra", "-Werror"])):
        obj = os.path.join(work, os.path.basename(source) + ".o")
        run([cc, "-std=c99"] + flags + [f"-I{cli_include}", "-c", source, "-o", obj],
            f"compiling {os.path.basename(source)}")
        objects.append(obj)
    parse = os.path.join(work, "parse")
    run([cc, "-std=c99", "-O1", f"-I{runtime_include}", os.path.join(work, "parse.c")] + objects +
        [runtime_obj, "-o", parse], "linking the parser")
    return parse


def parse_files(parse, files):
    """{file: None, or `LINE:COLUMN: ERROR` (or MISSING)}."""
    results = {}
    for start in range(0, len(files), 200):
        chunk = files[start:start + 200]
        output = subprocess.run([parse] + chunk, capture_output=True, text=True)
        if output.returncode not in (0, 1):
            raise CheckError(f"the parser failed: {output.stderr.strip()}")
        for line, file in zip(output.stdout.splitlines(), chunk):
            if line == f"{file}: ok":
                results[file] = None
            elif line.startswith(f"{file}:"):
                results[file] = line[len(file) + 1:]
            else:
                raise CheckError(f"unexpected parser output for {file}: {line}")
    return results


# --- the checks ---------------------------------------------------------------------


def check_words(grammar, textmate, root):
    words, _, spellings, problems = textmate.compiler_words(root)
    strings = grammar_strings(grammar)
    grammar_words = {s for s in strings if re.fullmatch(IDENT, s)}
    reserved = words["reserved words"]
    others = words["element types"] | words["annotation words"]
    if reserved - grammar_words:
        problems.append(f"reserved words of the compiler the grammar does not use: {' '.join(sorted(reserved - grammar_words))}")
    if grammar_words - reserved - others:
        problems.append("words the grammar treats as keywords that the compiler does not reserve or single out: "
                        f"{' '.join(sorted(grammar_words - reserved - others))}")
    if others - grammar_words:
        problems.append(f"element types and annotation words the grammar does not single out: "
                        f"{' '.join(sorted(others - grammar_words))}")
    missing = [s for s in spellings if s not in strings]
    if missing:
        problems.append(f"token spellings of the lexer that are no token of the grammar: {' '.join(missing)}")
    summary = (f"words: {len(reserved & grammar_words)} reserved words, "
               f"{len(words['element types'] & grammar_words)} element types, "
               f"{len(words['annotation words'] & grammar_words)} annotation words; "
               f"{len(spellings) - len(missing)} token spellings")
    return summary, problems, words


QUERY_TOKEN = re.compile(r'\s+|;[^\n]*|"(?:[^"\\]|\\.)*"|[()\[\]]|@[\w.]+|[A-Za-z_][\w]*:|#[\w?!-]+|[\w.-]+|[*+?!_]')


def parse_query(text):
    """The query as nested lists: a list per parenthesised or bracketed
    group, its first element "(" or "["."""
    stack = [["top"]]
    for match in QUERY_TOKEN.finditer(text):
        token = match.group()
        if token.isspace() or token.startswith(";"):
            continue
        if token in "([":
            stack.append([token])
        elif token in ")]":
            group = stack.pop()
            if len(stack) == 0 or group[0] != {")": "(", "]": "["}[token]:
                raise CheckError(f"highlights.scm: unbalanced `{token}`")
            stack[-1].append(group)
        else:
            stack[-1].append(token)
    covered = sum(len(m.group()) for m in QUERY_TOKEN.finditer(text))
    if covered != len(text):
        raise CheckError("highlights.scm: text that is no query token")
    if len(stack) != 1:
        raise CheckError("highlights.scm: unbalanced `(`")
    return stack[0][1:]


def check_highlights(grammar, grammar_dir, words):
    path = os.path.join(grammar_dir, "queries", "highlights.scm")
    with open(path, encoding="utf-8") as f:
        patterns = parse_query(f.read())
    named, anonymous = node_types(grammar)
    # The words of node types that are nothing but words: `(element_type)`
    # gives each element type a capture.
    word_nodes = {}
    for name, rule in grammar["rules"].items():
        members = rule["members"] if rule["type"] == "CHOICE" else [rule]
        if all(m["type"] == "STRING" for m in members):
            word_nodes[name] = {m["value"] for m in members}
        for sub, _ in walk(rule):
            if sub["type"] == "ALIAS" and sub["named"] and sub["content"]["type"] == "STRING":
                word_nodes.setdefault(sub["value"], set()).add(sub["content"]["value"])
    problems = []
    highlighted_words = set()
    operations = None

    def visit(item, node_type):
        nonlocal operations
        if isinstance(item, str):
            if item.startswith('"'):
                value = json.loads(item)
                if value not in anonymous:
                    problems.append(f"highlights.scm: `{item}` is no token of the grammar")
                if re.fullmatch(IDENT, value):
                    highlighted_words.add(value)
            elif item.endswith(":"):
                if node_type is not None and item[:-1] not in named.get(node_type, set()):
                    problems.append(f"highlights.scm: `{node_type}` has no field `{item[:-1]}`")
            return
        if item[0] == "(" and len(item) > 1 and isinstance(item[1], str) and item[1].startswith("#"):
            predicate = item[1]
            if predicate not in ("#eq?", "#not-eq?", "#match?", "#not-match?", "#any-of?"):
                problems.append(f"highlights.scm: unknown predicate {predicate}")
            if predicate == "#match?" and len(item) == 4:
                regex = json.loads(item[3])
                try:
                    re.compile(regex)
                except re.error as error:
                    problems.append(f"highlights.scm: regex {regex} does not compile: {error}")
                if item[2] == "@function.builtin":
                    operations = set(re.fullmatch(r"\^\((.*)\)\$", regex).group(1).split("|"))
            return
        if item[0] == "(" and len(item) > 1 and isinstance(item[1], str) and re.fullmatch(IDENT, item[1]):
            if item[1] != "ERROR" and item[1] not in named:
                problems.append(f"highlights.scm: `({item[1]})` is no node type of the grammar")
            highlighted_words.update(word_nodes.get(item[1], ()))
            for sub in item[2:]:
                visit(sub, item[1])
            return
        for sub in item[1:]:
            visit(sub, node_type)

    for pattern in patterns:
        visit(pattern, None)
    grammar_words = {s for s in anonymous if re.fullmatch(IDENT, s)}
    if grammar_words - highlighted_words:
        problems.append(f"highlights.scm gives no capture to the words {' '.join(sorted(grammar_words - highlighted_words))}")
    if operations is None:
        problems.append("highlights.scm: found no `#match? @function.builtin` of the operations")
    elif operations != words["operations"]:
        differ = sorted(operations ^ words["operations"])
        problems.append(f"highlights.scm: the operations differ from the semantic checker's: {' '.join(differ)}")
    top = [p for p in patterns if not isinstance(p, str)]
    return f"highlights: {len(top)} patterns, on the grammar's node types, fields and tokens", problems


def check_snippets(parse, work):
    problems = []
    files = []
    for i, (statement, _) in enumerate(SNIPPETS):
        path = os.path.join(work, f"snippet{i}.tk")
        with open(path, "w") as f:
            f.write(SNIPPET_KERNEL.format(statement))
        files.append(path)
    results = parse_files(parse, files)
    for path, (statement, valid) in zip(files, SNIPPETS):
        error = results[path]
        if valid and error:
            problems.append(f"snippet `{statement}`: {error}")
        elif not valid and not error:
            problems.append(f"snippet `{statement}` parses without an error")
    return f"snippets: {len(SNIPPETS)}, read as tkc reads them", problems


def syntax_diagnostics(root):
    """(DiagId, regex of its message) of the lexer's and the parser's
    diagnostics, from compiler/support/DiagnosticKinds.def."""
    path = os.path.join(root, "compiler", "support", "DiagnosticKinds.def")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    section = None
    result = []
    for line in text.splitlines():
        heading = re.match(r"//\s*---\s*(.*?)\s*-+\s*$", line)
        if heading:
            section = heading.group(1)
            continue
        diag = re.match(r'DIAG\((\w+),\s*Error,\s*"(.*)"\)', line)
        if diag and section in ("lexer", "parser"):
            message = diag.group(2).replace('\\"', '"')
            pattern = ".*".join(re.escape(part) for part in message.split("{}"))
            result.append((diag.group(1), re.compile(pattern + "$")))
    if not {d for d, _ in result} >= {"UnexpectedCharacter", "ExpectedToken"}:
        raise CheckError(f"found no lexer and parser diagnostics in {path}: was it restructured?")
    return result


def syntax_errors(diagnostics, stderr):
    """The lexer and parser diagnostics of tkc's output, as DiagIds. An
    InvalidNumber of a literal that is not all digits (`64k`) counts as
    MalformedNumber, which the grammar rejects too; one of digits alone is
    out of range, which is left to tkc."""
    found = []
    for line in stderr.splitlines():
        m = re.search(r": error: (.*)$", line)
        if not m:
            continue
        for diag, pattern in diagnostics:
            if pattern.match(m.group(1)):
                if diag == "InvalidNumber" and not re.search(r"`[0-9]+`$", m.group(1)):
                    diag = "MalformedNumber"
                found.append(diag)
                break
    return found


def doc_blocks(root, work):
    """Each ```tk block of docs/*.md, written to a file of its own; with the
    place it comes from."""
    blocks = []
    for doc in sorted(glob.glob(os.path.join(root, "docs", "*.md"))):
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"^```tk[ \t]*\n(.*?)^```", text, re.M | re.S):
            path = os.path.join(work, f"doc{len(blocks)}.tk")
            with open(path, "w", encoding="utf-8") as f:
                f.write(m.group(1))
            line = text.count("\n", 0, m.start()) + 2
            blocks.append((path, f"{os.path.relpath(doc, root)}:{line}"))
    return blocks


def check_files(parse, root, tkc, work):
    problems = []
    examples = sorted(glob.glob(os.path.join(root, "examples", "*.tk")))
    tests = sorted(set(glob.glob(os.path.join(root, "test", "**", "*.tk"), recursive=True)))
    accepted, rejected = [], []
    if tkc:
        diagnostics = syntax_diagnostics(root)
        for file in examples + tests:
            result = subprocess.run([tkc, file, "--emit=ast", "-o", os.devnull], capture_output=True, text=True)
            if result.returncode == 0:
                accepted.append(file)
                continue
            errors = syntax_errors(diagnostics, result.stderr)
            if errors:
                rejected.append((file, set(errors) - SYNTAX_LEFT_TO_TKC))
            elif file in examples:
                problems.append(f"{file}: tkc rejects the example")
    else:
        accepted = examples
    results = parse_files(parse, accepted + [file for file, _ in rejected])
    errors = 0
    for file in accepted:
        if results[file]:
            errors += 1
            problems.append(f"{file}:{results[file]} (tkc accepts the file)")
    summary = [f"{len(accepted)} files, {errors} errors"]
    blocks = doc_blocks(root, work)
    block_results = parse_files(parse, [path for path, _ in blocks])
    for path, where in blocks:
        if block_results[path]:
            problems.append(f"the ```tk block at {where}: {block_results[path]}")
    summary.append(f"{len(blocks)} tk blocks of docs/, {sum(1 for r in block_results.values() if r)} errors")
    if tkc:
        must_fail = [(file, diags) for file, diags in rejected if diags]
        missed = [file for file, _ in must_fail if not results[file]]
        for file in missed:
            problems.append(f"{file}: parses without an error, but tkc reports a syntax error")
        summary.append(f"{len(must_fail)} files that tkc rejects for their syntax, "
                       f"{len(must_fail) - len(missed)} with an error")
    return summary, problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--npm", required=True, help="the folder of tree-sitter-cli-VERSION.tgz and tree-sitter-VERSION.tgz")
    parser.add_argument("--cache", help="where to build tree-sitter (default: NPM/cache)")
    parser.add_argument("--grammar-dir", help="the grammar to check (default: editors/tree-sitter-tk)")
    parser.add_argument("--tkc", help="check every test file against `TKC --emit=ast`")
    parser.add_argument("--parse", nargs="+", metavar="FILE", help="only parse these files")
    parser.add_argument("--sexp", action="store_true", help="with --parse, print each syntax tree")
    parser.add_argument("--build-only", action="store_true", help="only build tree-sitter into the cache")
    args = parser.parse_args()
    grammar_dir = args.grammar_dir or os.path.join(args.root, "editors", "tree-sitter-tk")
    problems = []
    work = tempfile.mkdtemp(prefix="tk-tree-sitter-")
    try:
        tools = build_tools(args.npm, args.cache or os.path.join(args.npm, "cache"))
        if args.build_only:
            print(f"tree-sitter {tools[4]}: built")
            return 0
        grammar = load_grammar(grammar_dir)
        parse = build_parser(tools, grammar, grammar_dir, work)
        if args.parse:
            if args.sexp:
                result = subprocess.run([parse, "--sexp"] + args.parse, capture_output=True, text=True)
                sys.stdout.write(result.stdout)
                return result.returncode
            results = parse_files(parse, args.parse)
            for file in args.parse:
                print(f"{file}:{results[file]}" if results[file] else f"{file}: ok")
            return 1 if any(results.values()) else 0
        conflicts = len(grammar["conflicts"])
        print(f"grammar: {grammar['name']}, {len(grammar['rules'])} rules, {conflicts} declared "
              f"conflict{'s' if conflicts != 1 else ''}; parser generated by tree-sitter {tools[4]}")
        textmate = load_textmate_check()
        summary, word_problems, words = check_words(grammar, textmate, args.root)
        print(summary)
        problems += word_problems
        summary, highlight_problems = check_highlights(grammar, grammar_dir, words)
        print(summary)
        problems += highlight_problems
        summary, snippet_problems = check_snippets(parse, work)
        print(summary)
        problems += snippet_problems
        summaries, file_problems = check_files(parse, args.root, args.tkc, work)
        for summary in summaries:
            print(summary)
        problems += file_problems
    except (CheckError, OSError, ValueError) as error:
        print(f"error: {error}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for problem in problems:
        print(f"error: {problem}")
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
