#!/usr/bin/env node
// Runs every app of the stack (built under dist/apps) as child processes with prefixed
// logs. Ctrl-C (or SIGTERM) stops them all cleanly; if one dies, the rest are stopped too,
// so a broken stack never looks healthy.
//
// INFERENCE_WORKERS (default: one per CPU core) inference-worker processes share the
// inference queue: the wasm backend computes on one thread, so a second process is how a
// CPU machine uses its second core. Each holds its own copy of the weights it serves; set
// INFERENCE_WORKERS=1 for a model that fills memory, or on a GPU machine.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { apps } = JSON.parse(readFileSync(join(root, 'scripts/stack.json'), 'utf8'));
const COLORS = [31, 32, 33, 34, 35, 36, 91, 92, 93, 94];
const STOP_GRACE_MS = 10_000;

const inferenceWorkers = Number(process.env.INFERENCE_WORKERS || availableParallelism());
if (!Number.isInteger(inferenceWorkers) || inferenceWorkers < 1) {
  console.error(`INFERENCE_WORKERS must be a whole number of at least 1, not "${process.env.INFERENCE_WORKERS}"`);
  process.exit(2);
}
/** The extra inference workers listen on the first one's health port plus 100, 200... */
const replicas = Array.from({ length: inferenceWorkers - 1 }, (_, i) => {
  const worker = apps.find((app) => app.name === 'inference-worker');
  return { ...worker, port: worker.port + 100 * (i + 1), label: `inference-worker-${i + 2}` };
});

const children = new Map();
let stopping = false;

function start(app, index) {
  const env = { ...process.env, HTTP_PORT: String(app.port) };
  if (!app.database) delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(root, 'dist/apps', app.name, 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const name = app.label ?? app.name;
  const label = `\x1b[${COLORS[index % COLORS.length]}m${name.padEnd(21)}\x1b[0m|`;
  for (const stream of [child.stdout, child.stderr]) {
    let pending = '';
    stream.on('data', (chunk) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop();
      for (const line of lines) process.stdout.write(`${label} ${line}\n`);
    });
  }
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (!stopping) {
      console.error(`${label} exited (${signal ?? `code ${code}`}); stopping the stack`);
      stop(1);
    } else if (children.size === 0) {
      process.exit(process.exitCode ?? 0);
    }
  });
  children.set(name, child);
}

function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  process.exitCode = code;
  for (const child of children.values()) child.kill('SIGTERM');
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL');
    process.exit(code || 1);
  }, STOP_GRACE_MS).unref();
  if (children.size === 0) process.exit(code);
}

process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));
[...apps, ...replicas].forEach(start);
