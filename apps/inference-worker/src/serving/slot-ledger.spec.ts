import { WorkerLoad } from '@trainyard/runtime';
import { SlotLedger } from './slot-ledger';

describe('SlotLedger', () => {
  let decoding: number;
  let load: WorkerLoad;
  let ledger: SlotLedger;

  beforeEach(() => {
    decoding = 0;
    load = new WorkerLoad();
    ledger = new SlotLedger(4, load, () => decoding);
  });

  it('reports its slots to the worker load', () => {
    expect(load.slots).toBe(4);
  });

  it('holds an admission’s sequences until each is seated, then counts them where they decode', () => {
    const admission = ledger.admit(3);
    expect(ledger.held).toBe(3);
    expect(load.active).toBe(3);
    // The batches take one sequence in as the admission seats it: the total stays.
    decoding = 1;
    admission.seated();
    expect(ledger.held).toBe(3);
    decoding = 2;
    admission.seated();
    admission.close();
    // Closed with one sequence never seated (its prefill failed): only those decoding stay held.
    expect(ledger.held).toBe(2);
    expect(load.active).toBe(2);
  });

  it('never counts more seats than an admission asked for', () => {
    const admission = ledger.admit(1);
    admission.seated();
    admission.seated();
    expect(admission.waiting).toBe(0);
    expect(ledger.held).toBe(0);
  });

  it('tells its listeners of each admission and of each close', () => {
    const seen: number[] = [];
    ledger.onChange(() => seen.push(ledger.held));
    const admission = ledger.admit(2);
    admission.close();
    expect(seen).toEqual([2, 0]);
  });

  it('wakes a slot waiter only once a slot is free', async () => {
    const admission = ledger.admit(4);
    let woken = false;
    void ledger.whenFree().then(() => (woken = true));
    ledger.changed();
    await Promise.resolve();
    expect(woken).toBe(false);
    decoding = 3;
    admission.seated();
    admission.seated();
    admission.seated();
    admission.close();
    await Promise.resolve();
    expect(woken).toBe(true);
  });

  it('wakes every slot waiter when it stops, and waits no more after', async () => {
    ledger.admit(4);
    const woken: number[] = [];
    void ledger.whenFree().then(() => woken.push(1));
    void ledger.whenFree().then(() => woken.push(2));
    ledger.stop();
    await Promise.resolve();
    expect(woken).toEqual([1, 2]);
    await expect(ledger.whenFree()).resolves.toBeUndefined();
  });
});
