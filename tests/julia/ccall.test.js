// Every ccall of the Julia package calls a function that c_api.h declares and libweft.so
// exports, with the header's number of arguments and, argument by argument and for the
// result, the Julia type that matches the C type. Every @cfunction matches one of the
// header's callback typedefs. The library is WEFT_LIBRARY (CTest passes this build's).
'use strict';

const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { REPO, juliaFiles, parseFile, walk, namedChildren, where, squash } = require('./lib/julia');
const { readHeader, juliaType, exportedSymbols } = require('./lib/c_api');

const LIB = process.env.WEFT_LIBRARY || path.join(REPO, 'build', 'libweft.so');
const header = readHeader();

function calleeName(call) {
  const callee = call.namedChild(0);
  return callee && callee.type === 'identifier' ? callee.text : null;
}

function argsOf(call) {
  const list = namedChildren(call).find((n) => n.type === 'argument_list');
  return list ? namedChildren(list) : [];
}

// The element types of a Julia tuple expression `(A, B)`, `(A,)` or `()`.
function tupleTypes(node) {
  if (node.type === 'tuple_expression') return namedChildren(node).map((n) => squash(n.text));
  if (node.type === 'parenthesized_expression') return namedChildren(node).map((n) => squash(n.text));
  return null;
}

// Everything the package says about C calls: each ccall, the Ref each C function's pointer
// lives in (`_SYMBOLS` entries and `_fp_x[] = Libdl.dlsym(lib, :x)` assignments), and
// every @cfunction.
async function collect() {
  const calls = [];
  const bindings = [];   // { ref, symbol, at }
  const cfunctions = [];
  for (const file of juliaFiles('frontends/julia', 'examples/julia')) {
    const { tree } = await parseFile(file);
    for (const node of walk(tree.rootNode)) {
      if (node.type === 'call_expression' && calleeName(node) === 'ccall') {
        calls.push({ file, node, args: argsOf(node) });
      } else if (node.type === 'macrocall_expression' && /^@cfunction\b/.test(node.text)) {
        cfunctions.push({ file, node, args: argsOf(node) });
      } else if (node.type === 'tuple_expression') {
        // (:weft_name, _fp_weft_name): an entry of _SYMBOLS.
        const items = namedChildren(node);
        if (items.length === 2 && items[0].type === 'quote_expression' && /^_fp_/.test(items[1].text)) {
          bindings.push({ ref: items[1].text, symbol: items[0].text.replace(/^:/, ''), at: where(file, node) });
        }
      } else if (node.type === 'assignment') {
        const m = /^(_fp_\w+)\[\]\s*=\s*Libdl\.dlsym\(\s*\w+\s*,\s*:(\w+)\s*\)$/.exec(node.text);
        if (m) bindings.push({ ref: m[1], symbol: m[2], at: where(file, node) });
      }
    }
  }
  return { calls, bindings, cfunctions };
}

const collected = collect();

test('the header parses: every WEFT_API declaration was read', () => {
  assert.ok(header.functions.size > 100, `only ${header.functions.size} functions read from c_api.h`);
  assert.strictEqual(header.functions.size, header.declared,
    `${header.declared} WEFT_API declarations but ${header.functions.size} read`);
});

test('every C function of the header has its ccall', async () => {
  const { calls, bindings } = await collected;
  const byRef = new Map(bindings.map((b) => [b.ref, b.symbol]));
  const called = new Set(calls.map((c) => byRef.get(c.args[0] && c.args[0].text.replace(/\[\]$/, ''))));
  const missing = [...header.functions.keys()].filter((n) => !called.has(n));
  assert.deepStrictEqual(missing, [], `C functions without a ccall: ${missing.join(', ')}`);
});

test('every function pointer is bound to the symbol of its name, and the library exports it', async () => {
  const { bindings } = await collected;
  const exported = exportedSymbols(LIB);
  const problems = [];
  for (const b of bindings) {
    if (b.ref !== `_fp_${b.symbol}`) problems.push(`${b.at}: ${b.ref} bound to :${b.symbol}`);
    if (!header.functions.has(b.symbol)) problems.push(`${b.at}: :${b.symbol} is not declared in c_api.h`);
    if (!exported.has(b.symbol)) problems.push(`${b.at}: :${b.symbol} is not exported by ${LIB}`);
  }
  assert.ok(bindings.length >= header.functions.size, `only ${bindings.length} bindings found`);
  assert.deepStrictEqual(problems, [], problems.join('\n'));
});

test('every ccall matches its C declaration: symbol, argument count, argument and result types', async () => {
  const { calls, bindings } = await collected;
  const byRef = new Map(bindings.map((b) => [b.ref, b.symbol]));
  const exported = exportedSymbols(LIB);
  const problems = [];
  for (const { file, node, args } of calls) {
    const at = where(file, node);
    if (args.length < 3) {
      problems.push(`${at}: ccall with ${args.length} arguments`);
      continue;
    }
    // Calls go through a Ref filled by dlsym (see capi_gen.jl): `_fp_<name>[]`.
    const m = /^(_fp_\w+)\[\]$/.exec(squash(args[0].text));
    const symbol = m ? byRef.get(m[1]) : undefined;
    if (!symbol) {
      problems.push(`${at}: ccall target ${args[0].text} is not a bound _fp_<name>[] pointer`);
      continue;
    }
    const fn = header.functions.get(symbol);
    if (!fn) {
      problems.push(`${at}: ${symbol} is not declared in c_api.h`);
      continue;
    }
    if (!exported.has(symbol)) problems.push(`${at}: ${symbol} is not exported by ${LIB}`);
    const ret = squash(args[1].text);
    const wantRet = juliaType(header, fn.ret);
    if (ret !== wantRet) problems.push(`${at}: ${symbol} returns ${fn.ret} (${wantRet}), ccall says ${ret}`);
    const types = tupleTypes(args[2]);
    if (types === null) {
      problems.push(`${at}: ${symbol}: the argument types are not a tuple: ${args[2].text}`);
      continue;
    }
    if (types.length !== fn.params.length) {
      problems.push(`${at}: ${symbol} takes ${fn.params.length} arguments, ccall declares ${types.length}`);
      continue;
    }
    const values = args.length - 3;
    if (values !== types.length) problems.push(`${at}: ${symbol}: ${types.length} argument types but ${values} values`);
    fn.params.forEach((p, i) => {
      const want = juliaType(header, p.ctype);
      if (types[i] !== want) problems.push(`${at}: ${symbol} argument ${i + 1} (${p.ctype} ${p.name}) is ${want}, ccall says ${types[i]}`);
    });
  }
  assert.ok(calls.length >= header.functions.size, `only ${calls.length} ccalls found`);
  assert.deepStrictEqual(problems, [], problems.join('\n'));
});

test('every @cfunction has the signature of one of the header\'s callback typedefs', async () => {
  const { cfunctions } = await collected;
  const signatures = [...header.callbacks.values()].map((cb) => ({
    name: cb.name,
    ret: juliaType(header, cb.ret),
    params: cb.params.map((p) => juliaType(header, p.ctype)),
  }));
  const problems = [];
  for (const { file, node, args } of cfunctions) {
    if (args.length !== 3) {
      problems.push(`${where(file, node)}: @cfunction with ${args.length} arguments`);
      continue;
    }
    const ret = squash(args[1].text);
    const types = tupleTypes(args[2]) || [];
    const match = signatures.find((s) => s.ret === ret && s.params.length === types.length &&
                                         s.params.every((t, i) => t === types[i]));
    if (!match) problems.push(`${where(file, node)}: @cfunction ${ret} (${types.join(', ')}) matches no callback typedef of c_api.h`);
  }
  assert.ok(cfunctions.length >= 1, 'no @cfunction found (the KVStore updater has one)');
  assert.deepStrictEqual(problems, [], problems.join('\n'));
});
