#!/usr/bin/env node
// npm audit of the production dependencies: fails on any high or critical advisory, printing
// each with its path and fix. Advisories that are explained in docs/reliability.md (Security)
// may be listed in ACCEPTED below, with the reason there. Where the registry's advisory
// endpoint cannot be reached (an offline or mirrored registry), it says so and passes: that is
// an audit not run, not an audit passed, and the output makes the difference plain.
import { spawnSync } from 'node:child_process';

/** GHSA ids accepted after review; each one explained in docs/reliability.md. */
const ACCEPTED = new Set([]);

const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  console.error(`npm audit printed no JSON:\n${run.stderr}`);
  process.exit(1);
}
if (!report.vulnerabilities) {
  console.log(`npm audit NOT RUN: the registry's advisory endpoint did not answer (${report.message ?? report.error?.summary ?? 'no report'})`);
  process.exit(0);
}
const serious = Object.values(report.vulnerabilities).filter((v) => v.severity === 'high' || v.severity === 'critical');
const unexplained = serious.filter((v) =>
  v.via.some((via) => typeof via === 'object' && !ACCEPTED.has(via.url?.split('/').pop())),
);
const counts = report.metadata?.vulnerabilities ?? {};
console.log(`npm audit --omit=dev: ${JSON.stringify(counts)}`);
for (const v of unexplained) {
  const advisories = v.via.filter((via) => typeof via === 'object').map((via) => `${via.title} (${via.url}, ${via.range})`);
  console.log(`  ${v.severity}: ${v.name} ${v.range} at ${v.nodes.join(', ')}; fix: ${JSON.stringify(v.fixAvailable)}\n    ${advisories.join('\n    ')}`);
}
process.exit(unexplained.length === 0 ? 0 : 1);
