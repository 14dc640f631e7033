import { join } from 'node:path';

/**
 * The tree whose dist/apps, scripts and prisma/migrations the test stack runs: this repository,
 * or where TRAINYARD_ROOT points (a packed copy of those, as tools/bench/gpu/pack-stack.sh writes,
 * whose bundled scripts sit elsewhere than libs/testing).
 */
export function repoRoot(): string {
  return process.env['TRAINYARD_ROOT'] || join(__dirname, '../../..');
}
