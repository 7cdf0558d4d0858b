// No C status is dropped: outside the generated layer, a call of a C API function that
// returns a weft_status_t is used (checked with `check`, assigned, returned, passed on),
// never a statement whose value is thrown away, except for the `*_free` functions, whose
// failure a finalizer or `finally` block has nowhere to report. A dropped status would turn
// Weft's error into silence.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { juliaFiles, parseFile, walk, namedChildren, where } = require('./lib/julia');
const { readHeader } = require('./lib/c_api');

const header = readHeader();
const STATEMENT_PARENTS = new Set([
  'source_file', 'module_definition', 'function_definition', 'macro_definition', 'compound_statement',
  'let_statement', 'if_statement', 'elseif_clause', 'else_clause', 'for_statement', 'while_statement',
  'try_statement', 'catch_clause', 'finally_clause', 'do_clause',
]);

// Whether `node`'s value is thrown away: a statement that is not the last of its block
// (the last one is the block's value), or one side of `a || f()` used as a statement.
function discarded(node) {
  const parent = node.parent;
  if (!parent) return false;
  if (parent.type === 'binary_expression' && /^(\|\||&&)$/.test(parent.child(1).text)) return discarded(parent);
  if (!STATEMENT_PARENTS.has(parent.type)) return false;
  const siblings = namedChildren(parent);
  const last = siblings[siblings.length - 1];
  const valued = ['function_definition', 'do_clause', 'compound_statement', 'let_statement'].includes(parent.type);
  return !(valued && last && last.id === node.id);
}

function statusCalls(tree) {
  const out = [];
  for (const node of walk(tree.rootNode)) {
    if (node.type !== 'call_expression') continue;
    const callee = node.namedChild(0);
    if (!callee || callee.type !== 'identifier') continue;
    const fn = header.functions.get(callee.text);
    if (fn && fn.ret === 'weft_status_t') out.push({ node, name: callee.text });
  }
  return out;
}

const handWritten = juliaFiles('frontends/julia', 'examples/julia').filter((f) => !path.basename(f).endsWith('_gen.jl'));

test('the hand-written code calls the C API', async () => {
  let n = 0;
  for (const file of handWritten) n += statusCalls((await parseFile(file)).tree).length;
  assert.ok(n > 50, `only ${n} C calls found in the hand-written files`);
});

for (const file of handWritten) {
  test(`no dropped status: ${file}`, async () => {
    const { tree } = await parseFile(file);
    const dropped = statusCalls(tree)
      .filter(({ node, name }) => discarded(node) && !name.endsWith('_free'))
      .map(({ node, name }) => `${where(file, node)}: the status of ${name} is dropped (wrap it in check(...))`);
    assert.deepStrictEqual(dropped, [], dropped.join('\n'));
  });
}
