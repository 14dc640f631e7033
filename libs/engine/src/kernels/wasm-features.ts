import { setFlagsFromString } from 'node:v8';

/**
 * The matmul kernels multiply and add in one instruction (`f32x4.relaxed_madd` of WebAssembly's
 * relaxed SIMD: a fused multiply-add on every x86-64 CPU with FMA3 and on arm64). Node 22's V8
 * accepts relaxed SIMD by default; Node 20's only behind `--experimental-wasm-relaxed-simd`,
 * which V8 reads when it compiles a module, so setting it here, before any kernel module is
 * compiled, is enough: no flag on the command line of every process. Importing this module
 * does it; it changes nothing else.
 */
setFlagsFromString('--experimental-wasm-relaxed-simd');
