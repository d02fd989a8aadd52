/**
 * Tree-sitter grammar for tk, the tile language of tkc.
 *
 * It follows grammar/tk.ebnf rule by rule; the comments give the names of
 * the rules there. It accepts a little more than tkc: chained comparisons
 * (`a < b < c`), a repeated annotation, integers past 2147483647 and nesting
 * past tkc's limits, which tkc's parser reports. And a little less than
 * tkc's parser, which reads a tile type or a slice anywhere in an
 * expression and any number of `grid` extents so that its semantic checks
 * can say what is wrong with them: here they are syntax errors, as in
 * grammar/tk.ebnf.
 *
 * Its keywords are the reserved words, the element types and the annotation
 * words (`grid`, `warps`, `persistent`, `stages`), which are names where no
 * annotation can stand, as in tkc. test/editors/tree-sitter.test checks the
 * list against the compiler's.
 *
 * Numbers and `^T` come from src/scanner.c, since a token rule cannot say
 * what tkc's lexer does with the characters after them: `0..n` is `0` `..`
 * `n` although `0.` alone is a float, `^T` is one token only when the `T`
 * ends a word, and a number may not run on into a letter (`64k`).
 */

const PREC = {
  or: 1,
  and: 2,
  compare: 3,
  add: 4,
  multiply: 5,
  unary: 6,
  postfix: 7,
};

function commaSep1(rule) {
  return seq(rule, repeat(seq(',', rule)));
}

module.exports = grammar({
  name: 'tk',

  word: $ => $.identifier,

  extras: $ => [/\s/, $.comment],

  externals: $ => [$.integer, $.float, '^T'],

  conflicts: $ => [
    // In an argument, `v[` starts a slice (`load(X[i, :])`) or a broadcast
    // of the vector `v` (`max(v[:, new], s)`); the token after `[:,` tells.
    [$._expression, $.slice],
  ],

  rules: {
    // file = { kernel }
    source_file: $ => repeat($.kernel),

    // kernel = "kernel" ident "(" [ param { "," param } ] ")" { annotation } block
    kernel: $ => seq(
      'kernel',
      field('name', $.identifier),
      field('parameters', $.parameter_list),
      repeat(field('annotation', $._annotation)),
      field('body', $.block),
    ),

    parameter_list: $ => seq('(', optional(commaSep1($.parameter)), ')'),

    // param = ident ":" [ "out" ] dtype "[" dim { "," dim } "]"
    parameter: $ => seq(
      field('name', $.identifier),
      ':',
      optional(field('output', 'out')),
      field('type', $.tensor_type),
    ),

    tensor_type: $ => seq(
      field('element', $.element_type),
      '[',
      commaSep1(field('dimension', $._dimension)),
      ']',
    ),

    // dim = dim_term { ("+" | "-") dim_term }, dim_term = dim_atom { ("*" | "/" | "%") dim_atom },
    // dim_atom = int | ident | ident "(" dim "," dim ")" (`cdiv`) | "(" dim ")"
    _dimension: $ => choice(
      $.identifier,
      $.integer,
      $.dimension_expression,
      $.dimension_call,
      $.parenthesized_dimension,
    ),

    dimension_expression: $ => choice(
      prec.left(PREC.add, seq(field('left', $._dimension), field('operator', choice('+', '-')),
                              field('right', $._dimension))),
      prec.left(PREC.multiply, seq(field('left', $._dimension), field('operator', choice('*', '/', '%')),
                                   field('right', $._dimension))),
    ),

    dimension_call: $ => seq(
      field('function', $.identifier),
      '(',
      field('argument', $._dimension),
      ',',
      field('argument', $._dimension),
      ')',
    ),

    parenthesized_dimension: $ => seq('(', $._dimension, ')'),

    // annotation
    _annotation: $ => choice(
      $.where_parameter,
      $.where_constant,
      $.grid_annotation,
      $.warps_annotation,
      $.persistent_annotation,
    ),

    // "where" ident "in" "{" int { "," int } "}"
    where_parameter: $ => seq(
      'where',
      field('name', $.identifier),
      'in',
      '{',
      commaSep1(field('value', $.integer)),
      '}',
    ),

    // "where" ident "=" expr
    where_constant: $ => seq(
      'where',
      field('name', $.identifier),
      '=',
      field('value', $._expression),
    ),

    // "grid" "(" expr [ "," expr [ "," expr ] ] ")"
    grid_annotation: $ => seq(
      'grid',
      '(',
      field('x', $._expression),
      optional(seq(
        ',',
        field('y', $._expression),
        optional(seq(',', field('z', $._expression))),
      )),
      ')',
    ),

    // "warps" "(" expr ")"
    warps_annotation: $ => seq('warps', '(', field('count', $._expression), ')'),

    // "persistent" "(" expr ")"
    persistent_annotation: $ => seq('persistent', '(', field('condition', $._expression), ')'),

    // block = "{" { statement [ ";" ] } "}"
    block: $ => seq('{', repeat(seq($._statement, optional(';'))), '}'),

    // statement
    _statement: $ => choice(
      $.assignment,
      $.store_statement,
      $.atomic_add_statement,
      $.for_statement,
      $.if_statement,
    ),

    // ident "=" expr
    assignment: $ => seq(field('left', $.identifier), '=', field('right', $._expression)),

    // "store" "(" slice "," expr ")"
    store_statement: $ => seq(
      'store', '(', field('target', $.slice), ',', field('value', $._expression), ')',
    ),

    // "atomic_add" "(" slice "," expr ")"
    atomic_add_statement: $ => seq(
      'atomic_add', '(', field('target', $.slice), ',', field('value', $._expression), ')',
    ),

    // "for" ident "in" expr ".." expr { loop_hint } block
    for_statement: $ => seq(
      'for',
      field('variable', $.identifier),
      'in',
      field('start', $._expression),
      '..',
      field('end', $._expression),
      repeat(field('hint', $.loop_hint)),
      field('body', $.block),
    ),

    // loop_hint = "pipelined" [ "(" "stages" "=" expr ")" ]
    loop_hint: $ => seq(
      'pipelined',
      optional(seq('(', 'stages', '=', field('stages', $._expression), ')')),
    ),

    // if_stmt = "if" expr block [ "else" ( if_stmt | block ) ]
    if_statement: $ => seq(
      'if',
      field('condition', $._expression),
      field('consequence', $.block),
      optional(seq('else', field('alternative', choice($.if_statement, $.block)))),
    ),

    // expr, or_expr ... primary
    _expression: $ => choice(
      $.binary_expression,
      $.unary_expression,
      $.transpose_expression,
      $.broadcast_expression,
      $.call_expression,
      $.member_expression,
      $.parenthesized_expression,
      $.identifier,
      $.integer,
      $.float,
      alias('inf', $.inf),
    ),

    binary_expression: $ => {
      const levels = [
        [PREC.or, '||'],
        [PREC.and, '&&'],
        [PREC.compare, choice('==', '!=', '<', '<=', '>', '>=')],
        [PREC.add, choice('+', '-')],
        [PREC.multiply, choice('*', '/', '%')],
      ];
      return choice(...levels.map(([precedence, operator]) => prec.left(precedence, seq(
        field('left', $._expression),
        field('operator', operator),
        field('right', $._expression),
      ))));
    },

    // unary = [ "-" | "!" ] postfix
    unary_expression: $ => prec(PREC.unary, seq(
      field('operator', choice('-', '!')),
      field('operand', $._expression),
    )),

    // postfix = primary { "^T" | "[" ":" "," "new" "]" | "[" "new" "," ":" "]" }
    transpose_expression: $ => prec(PREC.postfix, seq(field('operand', $._expression), '^T')),

    broadcast_expression: $ => prec(PREC.postfix, seq(
      field('operand', $._expression),
      choice(
        seq('[', ':', ',', 'new', ']'),
        seq('[', 'new', ',', ':', ']'),
      ),
    )),

    // callee "(" [ arg { "," arg } ] ")" with callee = ident | "where";
    // a cast's callee is an element type.
    call_expression: $ => seq(
      field('function', choice($.identifier, $.element_type, 'where')),
      field('arguments', $.argument_list),
    ),

    argument_list: $ => seq(
      '(',
      optional(commaSep1(choice($._expression, $.tile_type, $.slice))),
      ')',
    ),

    // ident "." ident (block.x, block.y, block.z)
    member_expression: $ => seq(
      field('object', $.identifier),
      '.',
      field('property', $.identifier),
    ),

    parenthesized_expression: $ => seq('(', $._expression, ')'),

    // tile_type = dtype "[" expr { "," expr } "]"
    tile_type: $ => seq(
      field('element', $.element_type),
      '[',
      commaSep1(field('extent', $._expression)),
      ']',
    ),

    // slice = ident "[" subscript { "," subscript } "]"
    slice: $ => seq(
      field('tensor', $.identifier),
      '[',
      commaSep1(field('subscript', choice(alias(':', $.whole_dimension), $.range_subscript, $._expression))),
      ']',
    ),

    // expr "+:" expr (start +: extent)
    range_subscript: $ => seq(field('start', $._expression), '+:', field('extent', $._expression)),

    // dtype = "bf16" | "f16" | "f32" | "i32" | "f8e4m3" | "f8e5m2"
    element_type: $ => choice('bf16', 'f16', 'f32', 'i32', 'f8e4m3', 'f8e5m2'),

    identifier: $ => /[A-Za-z_][A-Za-z0-9_]*/,

    // Whitespace and comments: // to the end of the line, /* ... */ not nested.
    comment: $ => token(choice(
      seq('//', /[^\r\n]*/),
      seq('/*', /[^*]*\*+([^/*][^*]*\*+)*/, '/'),
    )),
  },
});
