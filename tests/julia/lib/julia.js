// Shared helpers of the Julia package checks: the tree-sitter Julia parser, the package's
// files, and walking syntax trees. Julia itself is not needed (nor available here).
'use strict';

const fs = require('node:fs');
const path = require('node:path');

// The repository: given by CTest, else two folders up from tests/julia.
const REPO = process.env.WEFT_SOURCE_DIR || path.resolve(__dirname, '..', '..', '..');
const PACKAGE = path.join(REPO, 'frontends', 'julia', 'Weft');
const SRC = path.join(PACKAGE, 'src');

function loadModules() {
  // A clear failure when the npm install (the julia.npm_ci fixture) did not happen.
  try {
    const Parser = require('web-tree-sitter');
    const wasm = path.join(path.dirname(require.resolve('tree-sitter-julia/package.json')), 'tree-sitter-julia.wasm');
    if (!fs.existsSync(wasm)) throw new Error(`${wasm} is missing: tree-sitter-julia ships no wasm grammar`);
    return { Parser, wasm };
  } catch (err) {
    throw new Error('the Julia checks need web-tree-sitter and tree-sitter-julia from npm ' +
                    '(npm ci in tests/julia, or the julia.npm_ci CTest fixture): ' + err.message);
  }
}

let parserPromise = null;

// One parser for the process; web-tree-sitter loads its runtime and the grammar once.
function parser() {
  if (!parserPromise) {
    parserPromise = (async () => {
      const { Parser, wasm } = loadModules();
      await Parser.init();
      const Julia = await Parser.Language.load(wasm);
      const p = new Parser();
      p.setLanguage(Julia);
      return p;
    })();
  }
  return parserPromise;
}

// Every .jl file under the given folders (repository-relative), sorted.
function juliaFiles(...folders) {
  const out = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.jl')) out.push(full);
    }
  };
  for (const f of folders) {
    const dir = path.join(REPO, f);
    if (fs.existsSync(dir)) walk(dir);
  }
  return out.sort();
}

async function parseFile(file) {
  const p = await parser();
  const text = fs.readFileSync(file, 'utf8');
  return { file, text, tree: p.parse(text) };
}

// Depth-first over every node (named or not).
function* walk(node) {
  yield node;
  for (let i = 0; i < node.childCount; i++) yield* walk(node.child(i));
}

function namedChildren(node) {
  const out = [];
  for (let i = 0; i < node.namedChildCount; i++) out.push(node.namedChild(i));
  return out;
}

const where = (file, node) => `${path.relative(REPO, file)}:${node.startPosition.row + 1}:${node.startPosition.column + 1}`;

// Text without blanks, for comparing type expressions.
const squash = (s) => s.replace(/\s+/g, '');

module.exports = { REPO, PACKAGE, SRC, parser, juliaFiles, parseFile, walk, namedChildren, where, squash };
