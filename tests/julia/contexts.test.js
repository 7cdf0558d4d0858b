// Every device type of c_api.h has its Context in the Julia package, under the name Python
// and MXNet give it: `_DEVICE_CODES` (context.jl) maps one symbol to each WEFT_DEVICE_*
// constant, the inner constructor accepts exactly those symbols, and each symbol is the
// device name of Python's Context.devtype2str for that code. Without this, an array the
// library reports on a newer device (cpu_shared, type 5) makes `context(a)` throw at run time.
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { REPO, SRC, parseFile, walk } = require('./lib/julia');
const { HEADER } = require('./lib/c_api');

// WEFT_DEVICE_* name -> code, from the header's weft_device_type enum.
function headerDevices() {
  const src = fs.readFileSync(HEADER, 'utf8');
  const out = new Map();
  for (const m of src.matchAll(/\b(WEFT_DEVICE_\w+)\s*=\s*(\d+)/g)) out.set(m[1], Number(m[2]));
  return out;
}

// code -> name, from Python's Context.devtype2str (the names MXNet prints).
function pythonNames() {
  const src = fs.readFileSync(path.join(REPO, 'frontends', 'python', 'weft', 'context.py'), 'utf8');
  const m = src.match(/devtype2str\s*=\s*\{([^}]*)\}/);
  assert.ok(m, 'frontends/python/weft/context.py: no devtype2str table');
  const out = new Map();
  for (const e of m[1].matchAll(/(\d+)\s*:\s*"(\w+)"/g)) out.set(Number(e[1]), e[2]);
  return out;
}

async function juliaContexts() {
  const { tree } = await parseFile(path.join(SRC, 'context.jl'));
  let codes = null;
  let accepted = null;
  for (const node of walk(tree.rootNode)) {
    if (node.type === 'assignment' && node.namedChild(0) && node.namedChild(0).text === '_DEVICE_CODES') {
      codes = new Map();
      for (const m of node.text.matchAll(/:(\w+)\s*=>\s*(WEFT_DEVICE_\w+)/g)) codes.set(m[1], m[2]);
    }
    if (node.type === 'binary_expression' && /^device_type\s+in\s*\(/.test(node.text)) {
      accepted = new Set([...node.text.matchAll(/:(\w+)/g)].map((m) => m[1]));
    }
  }
  return { codes, accepted };
}

test('every device type of c_api.h has a Julia Context of its MXNet name', async () => {
  const devices = headerDevices();
  const names = pythonNames();
  const { codes, accepted } = await juliaContexts();
  assert.ok(devices.size >= 4, `c_api.h: expected the WEFT_DEVICE_* constants, found ${devices.size}`);
  assert.ok(codes, 'context.jl: no `_DEVICE_CODES = Dict(...)` assignment');
  assert.ok(accepted, 'context.jl: no `device_type in (...)` check in the Context constructor');
  const mapped = new Map([...codes].map(([sym, constant]) => [constant, sym]));
  for (const [constant, code] of devices) {
    assert.ok(mapped.has(constant), `context.jl: _DEVICE_CODES has no symbol for ${constant} (${code})`);
    assert.strictEqual(mapped.get(constant), names.get(code),
      `context.jl: ${constant} (${code}) is :${mapped.get(constant)}, Python names it "${names.get(code)}"`);
  }
  for (const constant of mapped.keys())
    assert.ok(devices.has(constant), `context.jl: _DEVICE_CODES names ${constant}, which c_api.h does not declare`);
  assert.deepStrictEqual([...accepted].sort(), [...codes.keys()].sort(),
    'context.jl: the constructor must accept exactly the device types of _DEVICE_CODES');
});
