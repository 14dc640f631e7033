/**
 * The ops the model is written in, each computed by the implementation that fits the backend
 * and the pass: a WebAssembly kernel on tfjs-wasm, a WGSL program on webgpu, or plain tfjs ops
 * (any backend, and the reference the kernels are tested against). Under a gradient tape an op
 * runs its kernel together with the kernel's gradient, or tfjs ops that tfjs differentiates.
 *
 * | op | wasm | webgpu | elsewhere |
 * |---|---|---|---|
 * | rmsNorm | kernels/rms-norm.ts (+ backward kernel) | WGSL (inference) | tfjs ops |
 * | rope | kernels/rope.ts (+ backward kernel) | WGSL (inference) | tfjs ops |
 * | swiglu | kernels/swiglu.ts (+ backward kernel) | tfjs ops | tfjs ops |
 * | geglu | tfjs ops, GELU's gradient written out (ops/gelu.ts) | tfjs ops | tfjs ops |
 * | attend | kernels/decode-attention.ts, kernels/prompt-attention.ts (+ backward kernel) | WGSL (decoding) | tfjs ops, tiled custom gradient |
 * | linear (FrozenLinear.forward) | kernels/matmul.ts, kernels/lora.ts; gradients ops/linear-gradient.ts | tfjs ops | tfjs ops |
 * | decoderBlock | kernels/decode-block.ts (decoding, one call per block) | Block.forward | Block.forward |
 *
 * A whole decoding step on webgpu runs as one encoded step instead (kernels/decode-step.webgpu.ts,
 * chosen by DecodeBatch).
 */
export { attend } from './attention';
export { decoderBlock } from './decoder-block';
export { geglu } from './gelu';
export { rmsNorm } from './norm';
export { rope } from './rope';
export { swiglu } from './swiglu';
