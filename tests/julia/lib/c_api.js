// Reads c_api.h (its declarations, handles and callback typedefs) and libweft's exported
// symbols, and maps C types to the Julia types a ccall must use. Written apart from
// tools/codegen (c_header.py, gen_julia.py) on purpose: the checks compare two readings.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { REPO } = require('./julia');

const HEADER = path.join(REPO, 'c_api', 'include', 'weft', 'c_api.h');

function stripComments(src) {
  return src.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, ' ');
}

function splitParam(text) {
  const t = text.replace(/\s+/g, ' ').trim();
  const m = /^(.*?)([A-Za-z_]\w*)$/.exec(t);
  if (!m) throw new Error(`c_api.js: cannot read the parameter "${t}"`);
  return { ctype: m[1].trim(), name: m[2] };
}

function params(text) {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t === '' || t === 'void') return [];
  return t.split(',').map(splitParam);
}

function readHeader(file = HEADER) {
  const src = stripComments(fs.readFileSync(file, 'utf8'));
  const functions = new Map();
  const fnRe = /WEFT_API\s+([\w\s*]+?)\s*\b(weft_\w+)\s*\(([^;]*?)\)\s*;/g;
  for (const m of src.matchAll(fnRe)) {
    functions.set(m[2], { name: m[2], ret: m[1].trim(), params: params(m[3]) });
  }
  const callbacks = new Map();
  const cbRe = /typedef\s+([\w\s*]+?)\s*\(\s*\*\s*(\w+)\s*\)\s*\(([^;]*?)\)\s*;/g;
  for (const m of src.matchAll(cbRe)) {
    callbacks.set(m[2], { name: m[2], ret: m[1].trim(), params: params(m[3]) });
  }
  const handles = new Set([...src.matchAll(/typedef\s+struct\s+\w+\s+(weft_\w+_t)\s*;/g)].map((m) => m[1]));
  const structs = new Set([...src.matchAll(/typedef\s+struct\s+\w+\s*\{[^}]*\}\s*(\w+)\s*;/g)].map((m) => m[1]));
  const enums = new Set([...src.matchAll(/typedef\s+enum\s+\w+\s*\{[^}]*\}\s*(\w+)\s*;/g)].map((m) => m[1]));
  const abi = /#define\s+WEFT_ABI_VERSION\s+(\d+)/.exec(src);
  // Declarations start a line with WEFT_API (the macro's own #defines do not).
  const declared = (src.match(/^\s*WEFT_API\s/gm) || []).length;
  return { functions, callbacks, handles, structs, enums, abiVersion: abi ? Number(abi[1]) : null, declared };
}

const SCALARS = {
  void: 'Cvoid', char: 'Cchar', int: 'Cint', int32_t: 'Int32', int64_t: 'Int64', uint64_t: 'UInt64',
  size_t: 'Csize_t', double: 'Cdouble', float: 'Cfloat',
};

// The Julia type that passes a value of C type `ctype` through ccall.
function juliaType(header, ctype) {
  const stars = (ctype.match(/\*/g) || []).length;
  const base = ctype.replace(/\*/g, ' ').replace(/\bconst\b/g, ' ').replace(/\s+/g, ' ').trim();
  let jl;
  if (base === 'char' && stars === 1) return 'Cstring';
  if (base.startsWith('struct ')) jl = 'Cvoid';
  else if (base in SCALARS) jl = SCALARS[base];
  else if (header.enums.has(base)) jl = 'Cint';
  else if (header.handles.has(base) || header.structs.has(base)) jl = base;
  else if (header.callbacks.has(base)) jl = 'Ptr{Cvoid}';
  else throw new Error(`c_api.js: no Julia type known for the C type "${ctype}"`);
  for (let i = 0; i < stars; i++) jl = `Ptr{${jl}}`;
  return jl;
}

// The defined dynamic symbols of the library (what dlsym can find).
function exportedSymbols(lib) {
  const out = execFileSync('nm', ['-D', '--defined-only', lib], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const names = new Set();
  for (const line of out.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length === 3 && /^[TtWi]$/.test(parts[1])) names.add(parts[2].replace(/@.*$/, ''));
  }
  return names;
}

module.exports = { HEADER, readHeader, juliaType, exportedSymbols };
