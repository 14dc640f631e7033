#!/usr/bin/env node
// Supervises every app of the stack (built under dist/apps) as child processes with prefixed
// logs. An app that exits on its own (a crash, an OOM kill, kill -9) is started again after a
// back-off that doubles with each quick exit (RESTART_DELAY_MS, 500 ms by default, up to 30 s),
// while the other apps keep serving. An app that keeps exiting soon after each start (a crash
// loop: RESTART_LIMIT exits in a row, each within STABLE_AFTER_MS of its start) is given up
// on, loudly; the rest of the stack still serves and /v1/system-check reports it failing.
// Only Ctrl-C (SIGINT), SIGTERM or SIGHUP to this process stops every app, gracefully.
//
// INFERENCE_WORKERS (default: one per CPU core) inference-worker processes share the
// inference queue: the wasm backend computes on one thread, so a second process is how a
// CPU machine uses its second core. Each holds its own copy of the weights it serves; set
// INFERENCE_WORKERS=1 for a model that fills memory, or on a GPU machine.
// PORT_OFFSET (default 0) is added to every app's port (scripts/stack.json), so that a second
// stack can run beside the first.
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { apps } = JSON.parse(readFileSync(join(root, 'scripts/stack.json'), 'utf8'));
const COLORS = [31, 32, 33, 34, 35, 36, 91, 92, 93, 94];
const STOP_GRACE_MS = 30_000;
const MAX_RESTART_DELAY_MS = 30_000;

/** A whole number from the environment, at least `min`; the process exits with a clear message otherwise. */
function setting(name, fallback, min) {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(value) || value < min) {
    console.error(`${name} must be a whole number of at least ${min}, not "${raw}"`);
    process.exit(2);
  }
  return value;
}

const inferenceWorkers = setting('INFERENCE_WORKERS', availableParallelism(), 1);
const portOffset = setting('PORT_OFFSET', 0, 0);
const restartDelayMs = setting('RESTART_DELAY_MS', 500, 1);
const restartLimit = setting('RESTART_LIMIT', 10, 1);
const stableAfterMs = setting('STABLE_AFTER_MS', 30_000, 1);

/** The extra inference workers listen on the first one's health port plus 100, 200... */
const replicas = Array.from({ length: inferenceWorkers - 1 }, (_, i) => {
  const worker = apps.find((app) => app.name === 'inference-worker');
  return { ...worker, port: worker.port + 100 * (i + 1), label: `inference-worker-${i + 2}` };
});

const color = (index, text) => (process.stdout.isTTY ? `\x1b[${COLORS[index % COLORS.length]}m${text}\x1b[0m` : text);
const say = (text) => process.stdout.write(`${'supervisor'.padEnd(21)}| ${text}\n`);
const shout = (text) => process.stderr.write(`${'supervisor'.padEnd(21)}| ${process.stderr.isTTY ? `\x1b[1;31m${text}\x1b[0m` : text}\n`);

/** Every supervised app by label: its process (while it runs), its restart timer (while it waits), its quick exits in a row. */
const units = new Map();
let stopping = false;

function start(unit) {
  const { app, name, label } = unit;
  const env = { ...process.env, HTTP_PORT: String(app.port + portOffset) };
  if (!app.database) delete env.DATABASE_URL;
  // Each app in its own process group: Ctrl-C in a terminal signals the foreground group, and the
  // apps must get one SIGTERM from here, not that SIGINT too (a second signal cuts their shutdown short).
  const child = spawn(process.execPath, [join(root, 'dist/apps', app.name, 'main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  unit.child = child;
  unit.startedAt = Date.now();
  say(`${name} started, pid ${child.pid}`);
  for (const stream of [child.stdout, child.stderr]) {
    let pending = '';
    stream.on('data', (chunk) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop();
      for (const line of lines) process.stdout.write(`${label} ${line}\n`);
    });
  }
  child.on('error', (err) => shout(`${name} could not be started: ${err.message}`));
  child.on('exit', (code, signal) => exited(unit, code, signal));
}

function exited(unit, code, signal) {
  // The pid goes in the line: an exit is said on stderr and a start on stdout, which a reader of
  // both may see in either order.
  const pid = unit.child?.pid;
  unit.child = undefined;
  const how = signal ?? `code ${code}`;
  if (stopping) {
    say(`${unit.name} stopped (${how}), pid ${pid}`);
    if ([...units.values()].every((u) => !u.child)) process.exit(process.exitCode ?? 0);
    return;
  }
  const ranMs = Date.now() - unit.startedAt;
  unit.quickExits = ranMs < stableAfterMs ? unit.quickExits + 1 : 1;
  if (unit.quickExits > restartLimit) {
    shout(`${unit.name} exited (${how}) ${restartLimit + 1} times in a row, each within ${stableAfterMs} ms of starting: a crash loop.`);
    shout(`GIVING UP on ${unit.name}: it stays down and /v1/system-check reports it failing; the other apps keep serving.`);
    shout(`Fix the cause (its log is above), then restart the stack (Ctrl-C, npm start).`);
    return;
  }
  const delay = Math.min(MAX_RESTART_DELAY_MS, restartDelayMs * 2 ** (unit.quickExits - 1));
  shout(`${unit.name} exited (${how}) after ${ranMs} ms, pid ${pid}; restarting in ${delay} ms (restart ${unit.quickExits} of at most ${restartLimit} in a row)`);
  unit.timer = setTimeout(() => {
    unit.timer = undefined;
    if (!stopping) start(unit);
  }, delay);
}

function stop(signal) {
  if (stopping) return;
  stopping = true;
  say(`${signal}: stopping every app`);
  for (const unit of units.values()) {
    clearTimeout(unit.timer);
    unit.child?.kill('SIGTERM');
  }
  setTimeout(() => {
    for (const unit of units.values()) unit.child?.kill('SIGKILL');
    process.exit(1);
  }, STOP_GRACE_MS).unref();
  if ([...units.values()].every((u) => !u.child)) process.exit(0);
}

process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
// The terminal closing: the apps, in their own process groups, would not hear of it otherwise.
process.on('SIGHUP', () => stop('SIGHUP'));
[...apps, ...replicas].forEach((app, index) => {
  const name = app.label ?? app.name;
  units.set(name, { app, name, label: `${color(index, name.padEnd(21))}|`, quickExits: 0 });
});
for (const unit of units.values()) start(unit);
