import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { MatMulPlan } from '../src/kernels/matmul';
import { MatMulPlanStore } from '../src/kernels/matmul-plan-store';

describe('MatMulPlanStore', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'plan-store-'));
  const plan: MatMulPlan = { oneRowTile: 'paired', oneRowReadAhead: false, rowsReadAhead: true };
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives every store on the same file (every process on the machine) the plan one kept', () => {
    const file = path.join(dir, 'a', 'plans.json');
    new MatMulPlanStore(file).set('shapes-1', plan);
    const other = new MatMulPlanStore(file);
    expect(other.get('shapes-1')).toEqual(plan);
    expect(other.get('shapes-2')).toBeUndefined();
  });

  it('keeps the plans another store wrote since it last read', () => {
    const file = path.join(dir, 'b.json');
    const first = new MatMulPlanStore(file);
    const second = new MatMulPlanStore(file);
    expect(first.get('x')).toBeUndefined();
    second.set('y', plan);
    first.set('x', { ...plan, oneRowTile: 'wide' });
    const third = new MatMulPlanStore(file);
    expect([third.get('x')?.oneRowTile, third.get('y')?.oneRowTile]).toEqual(['wide', 'paired']);
  });

  it('reads a damaged file as empty, and a store it cannot write still holds the plan for its process', () => {
    const damaged = path.join(dir, 'damaged.json');
    fs.writeFileSync(damaged, '{"half');
    expect(new MatMulPlanStore(damaged).get('x')).toBeUndefined();
    // A file where a directory must be: writing fails, quietly.
    const blocked = path.join(damaged, 'plans.json');
    const store = new MatMulPlanStore(blocked);
    store.set('x', plan);
    expect(store.get('x')).toEqual(plan);
    expect(fs.existsSync(blocked)).toBe(false);
  });
});
