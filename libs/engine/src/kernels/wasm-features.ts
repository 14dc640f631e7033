import { setFlagsFromString } from 'node:v8';

/**
 * The matmul kernels multiply and add in one instruction (`f32x4.relaxed_madd` of WebAssembly's
 * relaxed SIMD: a fused multiply-add on every x86-64 CPU with FMA3 and on arm64). Node 22 and
 * later (the project runs on Node 24) accept relaxed SIMD by default, and their V8 no longer
 * knows the flag. Node 20's V8 accepts it only behind `--experimental-wasm-relaxed-simd`, which
 * it reads when it compiles a module: there it is set here, before any kernel module is
 * compiled, so that the engine still loads on an older Node. Importing this module does it; it
 * changes nothing else.
 */
if (Number(process.versions.node.split('.')[0]) < 22) setFlagsFromString('--experimental-wasm-relaxed-simd');
