; Highlights for tk, with the capture names common to tree-sitter
; highlighters. Where several patterns capture a node the first one counts,
; as in the tree-sitter CLI: the specific patterns come before
; `(identifier) @variable`.

(comment) @comment

; The reserved words of grammar/tk.ebnf.
[
  "kernel"
  "out"
  "where"
  "in"
  "store"
  "atomic_add"
  "new"
  "pipelined"
] @keyword

[
  "for"
] @keyword.repeat

[
  "if"
  "else"
] @keyword.conditional

(inf) @constant.builtin

; Kernel annotations and the loop hint's `stages`.
[
  "grid"
  "warps"
  "persistent"
  "stages"
] @attribute

(element_type) @type.builtin

(kernel
  name: (identifier) @function)

(parameter
  name: (identifier) @variable.parameter)

(where_parameter
  name: (identifier) @constant)

(where_constant
  name: (identifier) @constant)

(for_statement
  variable: (identifier) @variable)

; The operations of tkc (a name called as an operation that tkc does not
; know is an error there).
(call_expression
  function: (identifier) @function.builtin
  (#match? @function.builtin "^(abs|cdiv|colidx|colmax|colmin|colsum|erf|exp|exp2|fill|load|log|log2|max|min|mma|rowidx|rowmax|rowmin|rowsum|rsqrt|sigmoid|silu|sqrt|tanh|zeros)$"))

; `cdiv` in a derived dimension (`f32[cdiv(M, 64), D]`).
(dimension_call
  function: (identifier) @function.builtin)

; block.x, block.y, block.z
(member_expression
  object: (identifier) @variable.builtin
  (#eq? @variable.builtin "block"))

(member_expression
  property: (identifier) @property)

; The target's compute capability.
((identifier) @variable.builtin
  (#eq? @variable.builtin "sm"))

(identifier) @variable

(integer) @number

(float) @number.float

(whole_dimension) @operator

[
  "+"
  "-"
  "*"
  "/"
  "%"
  "=="
  "!="
  "<"
  "<="
  ">"
  ">="
  "&&"
  "||"
  "!"
  "="
  "^T"
  "+:"
  ".."
] @operator

[
  "("
  ")"
  "["
  "]"
  "{"
  "}"
] @punctuation.bracket

[
  ","
  ":"
  ";"
  "."
] @punctuation.delimiter
