#!/usr/bin/env node
// Compiles the engine's WebAssembly kernels (AssemblyScript sources in libs/engine/assembly/)
// into TypeScript modules holding the binary, libs/engine/src/kernels/<kernel>.wasm.ts: one
// module per kernel, generated at build and never committed (.gitignore). npm test, npm start
// and the images run it before anything compiles, bundles or imports the engine; after a
// fresh clone, run it once before running jest or tsx by hand:
//
//   node scripts/build-kernels.mjs
//
// Each module records a hash of what it was compiled from (every source, the compiler's
// version, the flags); when every module's is current, nothing is compiled again.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sourceDir = join(root, 'libs/engine/assembly');
const outDir = join(root, 'libs/engine/src/kernels');

// The kernels run on tfjs-wasm's memory (imported), use SIMD, and have no runtime, no
// assertions and no abort import: nothing but the exported functions.
const FLAGS = ['-O3', '--runtime', 'stub', '--importMemory', '--enable', 'simd', '--enable', 'relaxed-simd', '--noAssert', '--use', 'abort='];

// Kernels that also run on a shared memory of the engine's own, from several threads at once
// (src/kernels/matmul-threads.ts): compiled a second time, importing a shared memory of up to
// 4 GB, into the same module's <KERNEL>_SHARED_WASM.
const SHARED = new Set(['matmul', 'matmul-transposed', 'attention', 'lora']);
const SHARED_FLAGS = ['--sharedMemory', '--maximumMemory', '65536', '--enable', 'threads'];

const kernels = readdirSync(sourceDir).filter((f) => f.endsWith('.ts'));
const targetOf = (file) => join(outDir, `${basename(file, '.ts')}.wasm.ts`);
const hash = sourceHash();
if (kernels.every((file) => readOr(targetOf(file)).includes(hash))) {
  console.log(`engine kernels: up to date (${kernels.length} modules in ${relative(root, outDir)})`);
  process.exit(0);
}
// Loaded only to compile: loading the compiler takes longer than the check above.
const { default: asc } = await import('assemblyscript/asc');
for (const file of kernels) {
  const kernel = basename(file, '.ts');
  const path = join(sourceDir, file);
  const builds = [{ constant: constantOf(kernel), binary: await compile(path, FLAGS) }];
  if (SHARED.has(kernel)) builds.push({ constant: constantOf(`${kernel}-shared`), binary: await compile(path, [...FLAGS, ...SHARED_FLAGS]) });
  const target = targetOf(file);
  const module = render(relative(root, path), builds);
  if (readOr(target) !== module) writeFileSync(target, module);
  console.log(`${relative(root, target)}: ${builds.map(({ constant, binary }) => `${constant} ${binary.length} bytes`).join(', ')}`);
}

/** What every module is compiled from: each source file (shared helpers included), the compiler's version and the flags. */
function sourceHash() {
  const { version } = createRequire(import.meta.url)('assemblyscript/package.json');
  const h = createHash('sha256').update(JSON.stringify([version, FLAGS, SHARED_FLAGS, [...SHARED]]));
  for (const entry of readdirSync(sourceDir, { recursive: true, withFileTypes: true }).sort((a, b) => join(a.parentPath, a.name).localeCompare(join(b.parentPath, b.name)))) {
    if (entry.isFile()) h.update(relative(sourceDir, join(entry.parentPath, entry.name))).update(readFileSync(join(entry.parentPath, entry.name)));
  }
  return `sources ${h.digest('hex')}`;
}

function readOr(path) {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function constantOf(name) {
  return `${name.toUpperCase().replace(/-/g, '_')}_WASM`;
}

async function compile(path, flags) {
  let binary;
  const stderr = asc.createMemoryStream();
  const { error } = await asc.main([path, ...flags, '--outFile', 'kernel.wasm'], {
    stderr,
    writeFile: (filename, contents) => {
      if (filename.endsWith('.wasm')) binary = Buffer.from(contents);
    },
  });
  if (error) throw new Error(`${path} did not compile:\n${stderr.toString()}`);
  assertNoDataSegments(path, binary);
  return binary;
}

/** A data segment would be written into tfjs's heap at instantiation: refuse it. */
function assertNoDataSegments(path, binary) {
  // Section id 11 is the data section (WebAssembly core spec, binary format, 5.5.2).
  let offset = 8;
  while (offset < binary.length) {
    const id = binary[offset++];
    let size = 0;
    let shift = 0;
    let byte;
    do {
      byte = binary[offset++];
      size |= (byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    if (id === 11) throw new Error(`${path} compiled to a module with static data; kernels must not have any (see its header)`);
    offset += size;
  }
}

function render(source, builds) {
  const constants = builds.flatMap(({ constant, binary }) => {
    const lines = binary.toString('base64').match(/.{1,96}/g).map((line) => `  '${line}' +`);
    lines[lines.length - 1] = lines[lines.length - 1].slice(0, -2) + ',';
    return [`/** ${binary.length} bytes of WebAssembly. */`, `export const ${constant} = Buffer.from(`, ...lines, `  'base64',`, `);`, ''];
  });
  return [`// Generated by scripts/build-kernels.mjs from ${source}: do not edit, do not commit.`, `// ${hash}`, '', ...constants].join('\n');
}
