// Evaluates a tree-sitter grammar.js and prints its grammar.json: the rule
// functions (seq, choice, repeat, prec, field, ...) build the JSON rule
// objects that `tree-sitter generate` reads, so that the grammar can be
// checked without the tree-sitter CLI.
//
// usage: node tree-sitter-dsl.js GRAMMAR_JS > grammar.json
'use strict';

function normalize(value) {
  if (typeof value === 'string') return {type: 'STRING', value};
  if (value instanceof RegExp) {
    if (value.flags) throw new Error(`regex /${value.source}/ has flags`);
    return {type: 'PATTERN', value: value.source};
  }
  if (value && typeof value.type === 'string') return value;
  throw new Error(`not a rule: ${JSON.stringify(value)}`);
}

function precedence(type) {
  return (number, rule) => {
    if (rule === undefined) {
      rule = number;
      number = 0;
    }
    return {type, value: number, content: normalize(rule)};
  };
}

const dsl = {
  blank: () => ({type: 'BLANK'}),
  seq: (...members) => ({type: 'SEQ', members: members.map(normalize)}),
  choice: (...members) => ({type: 'CHOICE', members: members.map(normalize)}),
  optional: rule => ({type: 'CHOICE', members: [normalize(rule), {type: 'BLANK'}]}),
  repeat: rule => ({type: 'REPEAT', content: normalize(rule)}),
  repeat1: rule => ({type: 'REPEAT1', content: normalize(rule)}),
  token: Object.assign(rule => ({type: 'TOKEN', content: normalize(rule)}), {
    immediate: rule => ({type: 'IMMEDIATE_TOKEN', content: normalize(rule)}),
  }),
  field: (name, rule) => ({type: 'FIELD', name, content: normalize(rule)}),
  alias: (rule, value) => {
    if (typeof value === 'string') return {type: 'ALIAS', content: normalize(rule), named: false, value};
    if (value && value.type === 'SYMBOL') return {type: 'ALIAS', content: normalize(rule), named: true, value: value.name};
    throw new Error(`alias to ${JSON.stringify(value)}`);
  },
  prec: Object.assign(precedence('PREC'), {
    left: precedence('PREC_LEFT'),
    right: precedence('PREC_RIGHT'),
    dynamic: precedence('PREC_DYNAMIC'),
  }),
  grammar: options => {
    const symbols = new Proxy({}, {get: (_, name) => ({type: 'SYMBOL', name})});
    const rules = {};
    for (const [name, build] of Object.entries(options.rules)) rules[name] = normalize(build(symbols));
    for (const key of Object.keys(options)) {
      if (!['name', 'rules', 'word', 'extras', 'externals', 'conflicts', 'inline', 'supertypes'].includes(key))
        throw new Error(`grammar option ${key} is not supported here`);
    }
    const list = key => (options[key] ? options[key](symbols) : []);
    return {
      name: options.name,
      word: options.word ? options.word(symbols).name : null,
      rules,
      extras: options.extras ? list('extras').map(normalize) : [{type: 'PATTERN', value: '\\s'}],
      conflicts: list('conflicts').map(set => set.map(symbol => symbol.name)),
      externals: list('externals').map(normalize),
      inline: list('inline').map(symbol => symbol.name),
      supertypes: list('supertypes').map(symbol => symbol.name),
    };
  },
};

Object.assign(globalThis, dsl);
const path = require('path');
const grammar = require(path.resolve(process.argv[2]));
process.stdout.write(JSON.stringify(grammar, null, 2) + '\n');
