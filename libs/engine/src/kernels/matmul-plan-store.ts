import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { MatMulPlan } from './matmul';

/**
 * Matmul plans chosen by timing (tuneMatMul), kept in a file per machine so that every process
 * on one machine takes the plan the first one timed: timing at load can come out either way
 * when two plans are close (bf16's paired layout against the plain one, say), and a worker
 * that decodes slower than its neighbour for that alone is worse than either choice. A plan is
 * kept under the machine's processor (model, cores, architecture) and tuneMatMul's own key
 * (the weights' shapes and formats and the fixed settings). Written whole to a temporary file
 * and renamed, so a reader never sees half a file; two processes tuning at once may each
 * write, and the later file wins.
 */
export class MatMulPlanStore {
  private plans: Record<string, MatMulPlan> | null = null;

  constructor(readonly file: string) {}

  get(key: string): MatMulPlan | undefined {
    return this.read()[machineKey(key)];
  }

  set(key: string, plan: MatMulPlan): void {
    // Read again first: another process may have kept a plan since this one last read.
    this.plans = null;
    const plans = { ...this.read(), [machineKey(key)]: plan };
    this.plans = plans;
    try {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      const temporary = `${this.file}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, JSON.stringify(plans, null, 1));
      fs.renameSync(temporary, this.file);
    } catch {
      // A read-only home: the plan holds for this process, and the next one times again.
    }
  }

  private read(): Record<string, MatMulPlan> {
    if (!this.plans) {
      try {
        this.plans = JSON.parse(fs.readFileSync(this.file, 'utf8')) as Record<string, MatMulPlan>;
      } catch {
        this.plans = {};
      }
    }
    return this.plans;
  }
}

/** The key under the machine's processor: a plan timed on one processor says nothing of another. */
function machineKey(key: string): string {
  const cpus = os.cpus();
  return JSON.stringify([cpus[0]?.model ?? 'unknown', cpus.length, process.arch, key]);
}

/** The store in the user's cache directory: ~/.cache/trainyard/matmul-plans.json. */
export function defaultMatMulPlanStore(): MatMulPlanStore {
  return new MatMulPlanStore(path.join(os.homedir(), '.cache', 'trainyard', 'matmul-plans.json'));
}
