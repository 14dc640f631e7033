import type { HelperData, WebAssemblyApi } from './matmul-threads';

/**
 * A helper thread of MatMulThreads (matmul-threads.ts): it runs the kernels' exports on the
 * ranges of each product that it takes, and nothing else; everything else happens on the
 * calling thread. MatMulThreads starts it with this file as the thread's script: from the
 * sources (jest, tsx), Node strips its types and runs it as it is; in an app, its bundle holds
 * it compiled, beside main.js, as an entry of its own (tools/webpack). So it imports nothing
 * but types, and takes worker_threads from process.getBuiltinModule: an import would make Node
 * read this file as an ES module, and look for the modules it names without their extension.
 */

declare const WebAssembly: WebAssemblyApi;

type Export = (...args: number[]) => void;

const { workerData } = process.getBuiltinModule('node:worker_threads');
const { memory, modules, productTable, control, spinMs, slots, thread } = workerData as HelperData;
const instances = modules.map((module) => new WebAssembly.Instance(module, { env: { memory } }).exports);
const products = productTable.map(({ module, name, arity }) => ({ run: instances[module][name] as Export, arity }));
const ctl = new Int32Array(control);
let seen = 0;
for (;;) {
  let since = performance.now();
  let generation: number;
  while ((generation = Atomics.load(ctl, slots.Generation)) === seen || generation % 2 === 1) {
    if (performance.now() - since > spinMs) {
      Atomics.wait(ctl, slots.Generation, generation);
      since = performance.now();
    }
  }
  if (Atomics.load(ctl, slots.Stop) === 1) break;
  Atomics.add(ctl, slots.Active, 1);
  // Counted as active first, then checked: a caller that has begun writing the next product
  // has changed the generation, and its arguments are not read.
  if (Atomics.load(ctl, slots.Generation) === generation) {
    seen = generation;
    const { run, arity } = products[ctl[slots.Product]];
    const args = Array.from(ctl.subarray(slots.Args, slots.Args + arity));
    const [units, unit, divisor] = [ctl[slots.Units], ctl[slots.Unit], ctl[slots.Divisor]];
    for (;;) {
      const from = Atomics.load(ctl, slots.Next);
      if (from >= units) break;
      const to = Math.min(units, from + Math.ceil((units - from) / divisor));
      if (Atomics.compareExchange(ctl, slots.Next, from, to) !== from) continue;
      try {
        run(...args, unit * from, unit * to, thread);
      } catch {
        Atomics.store(ctl, slots.Failed, 1);
      }
      if (Atomics.add(ctl, slots.Finished, to - from) + to - from === units) Atomics.notify(ctl, slots.Finished);
    }
  }
  Atomics.sub(ctl, slots.Active, 1);
}
