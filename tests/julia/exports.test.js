// Every name the Weft module exports is defined in the package, every package-internal
// name the code calls or refers to (`_helpers`, `weft_*` C wrappers, `_op_*` operator
// definitions, `_fp_*` pointers) is defined somewhere in it, and every `mx.name` /
// `Weft.name` of the tests and examples is: a typo in a name, which Julia would only report
// when the line runs, is caught here.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { SRC, juliaFiles, parseFile, walk, namedChildren, where } = require('./lib/julia');

// The name a definition's head introduces, or null for Base.f / (obj::T)(...) methods.
function headName(node) {
  if (!node) return null;
  switch (node.type) {
    case 'identifier':
      return node.text;
    case 'call_expression':
    case 'where_expression':
    case 'typed_expression':
    case 'binary_expression':   // `T <: Super` in a type head
    case 'parametrized_type_expression':
    case 'type_head':
    case 'signature':
      return headName(node.namedChild(0));
    default:
      return null;
  }
}

async function definitions() {
  const defined = new Set();
  const exported = [];
  const uses = [];
  for (const file of juliaFiles('frontends/julia/Weft/src')) {
    const { tree } = await parseFile(file);
    for (const node of walk(tree.rootNode)) {
      switch (node.type) {
        case 'function_definition':
        case 'macro_definition': {
          const sig = namedChildren(node).find((c) => c.type === 'signature');
          const name = headName(sig);
          if (name) defined.add(node.type === 'macro_definition' ? '@' + name : name);
          break;
        }
        case 'struct_definition':
        case 'abstract_definition':
        case 'primitive_definition': {
          const name = headName(namedChildren(node).find((c) => c.type === 'type_head'));
          if (name) defined.add(name);
          break;
        }
        case 'assignment': {
          // `f(x) = ...` (a method), `const X = ...`, `X = ...` at any level.
          const name = headName(node.namedChild(0));
          if (name) defined.add(name);
          break;
        }
        case 'module_definition': {
          const name = node.childForFieldName('name');
          if (name) defined.add(name.text);
          break;
        }
        case 'export_statement':
          for (const c of namedChildren(node)) exported.push({ name: c.text, at: where(file, c) });
          break;
        case 'call_expression': {
          const callee = node.namedChild(0);
          if (callee && callee.type === 'identifier') uses.push({ name: callee.text, at: where(file, callee) });
          break;
        }
        case 'identifier':
          if (/^_(op|fp)_/.test(node.text)) uses.push({ name: node.text, at: where(file, node) });
          break;
        default:
          break;
      }
    }
  }
  return { defined, exported, uses };
}

const collected = definitions();

// Base functions the package adds methods to (`Base.sum(x::NDArray, ...) = ...`), which
// `mx.sum` also reaches.
async function baseExtensions() {
  const names = new Set();
  for (const file of juliaFiles('frontends/julia/Weft/src')) {
    const { text } = await parseFile(file);
    for (const m of text.matchAll(/^(?:function\s+)?Base\.(?:Broadcast\.)?(\w+!?|:\S+?)\(/gm)) names.add(m[1]);
  }
  return names;
}

test('the module exports names', async () => {
  const { exported } = await collected;
  for (const name of ['mx', 'NDArray', 'SymbolicNode', 'Executor', 'KVStore', 'WeftError', 'FeedForward']) {
    assert.ok(exported.some((e) => e.name === name), `${name} is not exported`);
  }
});

test('every exported name is defined in the package', async () => {
  const { defined, exported } = await collected;
  const undefinedNames = exported.filter((e) => !defined.has(e.name)).map((e) => `${e.at}: ${e.name}`);
  assert.deepStrictEqual(undefinedNames, [], `exported but not defined:\n${undefinedNames.join('\n')}`);
});

test('every package-internal name used is defined in the package', async () => {
  const { defined, uses } = await collected;
  const internal = (n) => /^_/.test(n) || /^weft_/.test(n);
  const missing = uses.filter((u) => internal(u.name) && !defined.has(u.name)).map((u) => `${u.at}: ${u.name}`);
  assert.deepStrictEqual(missing, [], `used but never defined:\n${missing.join('\n')}`);
});

test('the module includes every source file, and only existing ones', async () => {
  const { text } = await parseFile(path.join(SRC, 'Weft.jl'));
  const included = [...text.matchAll(/^include\("([^"]+)"\)/gm)].map((m) => m[1]).sort();
  const files = juliaFiles('frontends/julia/Weft/src').map((f) => path.basename(f)).filter((f) => f !== 'Weft.jl').sort();
  assert.deepStrictEqual(included, files);
});

test('every mx.<name> and Weft.<name> in the tests and examples is defined in the package', async () => {
  const { defined } = await collected;
  const extended = await baseExtensions();
  const problems = [];
  let count = 0;
  for (const file of juliaFiles('frontends/julia/Weft/test', 'examples/julia')) {
    const { tree } = await parseFile(file);
    for (const node of walk(tree.rootNode)) {
      let name = null;
      if (node.type === 'field_expression') {
        const value = node.childForFieldName('value') || node.namedChild(0);
        if (value && value.type === 'identifier' && (value.text === 'mx' || value.text === 'Weft')) {
          name = node.namedChild(node.namedChildCount - 1).text;
        }
      } else if (node.type === 'macro_identifier') {
        const m = /^@(mx|Weft)\.(\w+)$/.exec(node.text);
        if (m) name = '@' + m[2];
      }
      if (name === null) continue;
      count += 1;
      if (!defined.has(name) && !extended.has(name)) problems.push(`${where(file, node)}: ${node.text}`);
    }
  }
  assert.ok(count > 50, `only ${count} mx./Weft. references found`);
  assert.deepStrictEqual(problems, [], `not defined in the package:\n${problems.join('\n')}`);
});
