// Every .jl file of the Julia package and its examples parses cleanly with tree-sitter's
// Julia grammar: no ERROR node, no MISSING node.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const { juliaFiles, parseFile, walk, where } = require('./lib/julia');

const FOLDERS = ['frontends/julia', 'examples/julia'];

test('the package has Julia files to check', () => {
  const files = juliaFiles(...FOLDERS);
  assert.ok(files.some((f) => f.endsWith('/src/Weft.jl')), 'frontends/julia/Weft/src/Weft.jl is missing');
  assert.ok(files.some((f) => f.endsWith('/test/runtests.jl')), 'frontends/julia/Weft/test/runtests.jl is missing');
  assert.ok(files.some((f) => f.includes('examples/julia/')), 'no example under examples/julia');
});

for (const file of juliaFiles(...FOLDERS)) {
  test(`parses: ${file}`, async () => {
    const { tree } = await parseFile(file);
    const problems = [];
    for (const node of walk(tree.rootNode)) {
      if (node.type === 'ERROR' || node.isMissing) {
        problems.push(`${where(file, node)}: ${node.isMissing ? 'MISSING ' + node.type : 'ERROR'} near ` +
                      JSON.stringify(node.text.slice(0, 60)));
      }
      if (problems.length >= 10) break;
    }
    assert.deepStrictEqual(problems, [], problems.join('\n'));
  });
}
