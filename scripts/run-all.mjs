#!/usr/bin/env node
// Runs every app of the stack (built under dist/apps) as child processes with prefixed
// logs. Ctrl-C (or SIGTERM) stops them all cleanly; if one dies, the rest are stopped too,
// so a broken stack never looks healthy.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { apps } = JSON.parse(readFileSync(join(root, 'scripts/stack.json'), 'utf8'));
const COLORS = [31, 32, 33, 34, 35, 36, 91, 92, 93, 94];
const STOP_GRACE_MS = 10_000;

const children = new Map();
let stopping = false;

function start(app, index) {
  const env = { ...process.env, HTTP_PORT: String(app.port) };
  if (!app.database) delete env.DATABASE_URL;
  const child = spawn(process.execPath, [join(root, 'dist/apps', app.name, 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const label = `\x1b[${COLORS[index % COLORS.length]}m${app.name.padEnd(21)}\x1b[0m|`;
  for (const stream of [child.stdout, child.stderr]) {
    let pending = '';
    stream.on('data', (chunk) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop();
      for (const line of lines) process.stdout.write(`${label} ${line}\n`);
    });
  }
  child.on('exit', (code, signal) => {
    children.delete(app.name);
    if (!stopping) {
      console.error(`${label} exited (${signal ?? `code ${code}`}); stopping the stack`);
      stop(1);
    } else if (children.size === 0) {
      process.exit(process.exitCode ?? 0);
    }
  });
  children.set(app.name, child);
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
apps.forEach(start);
