// Every keyword argument passed to one of the package's own functions (in the package, its
// tests and the examples) is a keyword that some method of that function declares, unless
// one of its methods takes `kwargs...`. Julia reports a misspelt keyword only when the call
// runs; here it is caught without Julia.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { juliaFiles, parseFile, walk, namedChildren, where } = require('./lib/julia');

// The name and the argument list of a definition's head: `f(a; k=1)`, `f(...) where T`,
// `f(...)::T`. Methods of other modules' functions (`Base.f`) are not the package's.
function head(sig) {
  let node = sig;
  while (node && (node.type === 'signature' || node.type === 'where_expression' || node.type === 'typed_expression')) {
    node = node.namedChild(0);
  }
  if (!node || node.type !== 'call_expression') return null;
  const callee = node.namedChild(0);
  if (!callee || callee.type !== 'identifier') return null;
  return { name: callee.text, args: namedChildren(node).find((c) => c.type === 'argument_list') };
}

// Keywords declared after the `;` of a definition's argument list; `splat` when one is `kw...`.
function declaredKeywords(args) {
  const out = { names: new Set(), splat: false };
  if (!args) return out;
  let afterSemicolon = false;
  for (let i = 0; i < args.childCount; i++) {
    const c = args.child(i);
    if (c.type === ';') {
      afterSemicolon = true;
      continue;
    }
    if (!afterSemicolon || !c.isNamed) continue;
    if (c.type === 'splat_expression') out.splat = true;
    else if (c.type === 'named_argument' || c.type === 'typed_expression' || c.type === 'identifier') {
      let n = c.type === 'named_argument' ? c.namedChild(0) : c;
      if (n.type === 'typed_expression') n = n.namedChild(0);
      out.names.add(n.text);
    }
  }
  return out;
}

async function signatures() {
  const byName = new Map();
  for (const file of juliaFiles('frontends/julia/Weft/src')) {
    const { tree } = await parseFile(file);
    for (const node of walk(tree.rootNode)) {
      let h = null;
      if (node.type === 'function_definition') h = head(namedChildren(node).find((c) => c.type === 'signature'));
      else if (node.type === 'assignment' && node.parent && ['source_file', 'module_definition'].includes(node.parent.type)) {
        h = head(node.namedChild(0));
      }
      if (!h || !h.args) continue;
      const kw = declaredKeywords(h.args);
      const entry = byName.get(h.name) || { names: new Set(), splat: false };
      kw.names.forEach((n) => entry.names.add(n));
      entry.splat = entry.splat || kw.splat;
      byName.set(h.name, entry);
    }
  }
  return byName;
}

// Whether a call expression is the head of a definition (`function f(a; k=1)`,
// `f(a; k=1) = ...`, with `where` or a return type), not a call.
function isDefinitionHead(call) {
  let node = call;
  while (node.parent && (node.parent.type === 'where_expression' || node.parent.type === 'typed_expression')) {
    node = node.parent;
  }
  const parent = node.parent;
  if (!parent) return false;
  if (parent.type === 'signature') return true;
  return parent.type === 'assignment' && parent.namedChild(0).id === node.id;
}

// The function a call names: `f(...)`, `mx.f(...)`, `Weft.f(...)`.
function calleeOf(call) {
  const c = call.namedChild(0);
  if (!c) return null;
  if (c.type === 'identifier') return c.text;
  if (c.type === 'field_expression') {
    const value = c.namedChild(0);
    if (value && value.type === 'identifier' && (value.text === 'mx' || value.text === 'Weft')) {
      return c.namedChild(c.namedChildCount - 1).text;
    }
  }
  return null;
}

test('every keyword passed to a package function is declared by it', async () => {
  const sigs = await signatures();
  assert.ok(sigs.has('fit') && sigs.get('fit').names.has('n_epoch'), 'the signature of fit was not read');
  const problems = [];
  let checked = 0;
  for (const file of juliaFiles('frontends/julia', 'examples/julia')) {
    const { tree } = await parseFile(file);
    for (const node of walk(tree.rootNode)) {
      if (node.type !== 'call_expression') continue;
      const name = calleeOf(node);
      const sig = name && sigs.get(name);
      if (!sig || sig.splat) continue;
      if (isDefinitionHead(node)) continue;
      const args = namedChildren(node).find((c) => c.type === 'argument_list');
      for (const a of args ? namedChildren(args) : []) {
        if (a.type !== 'named_argument') continue;
        const kw = a.namedChild(0).text;
        checked += 1;
        if (!sig.names.has(kw)) problems.push(`${where(file, a)}: ${name} has no keyword ${kw} (it has ${[...sig.names].join(', ') || 'none'})`);
      }
    }
  }
  assert.ok(checked > 20, `only ${checked} keyword arguments checked`);
  assert.deepStrictEqual(problems, [], problems.join('\n'));
});
