/**
 * The ops the model is written in, each computed by the implementation that fits the backend
 * and the pass: a WebAssembly kernel on tfjs-wasm, a WGSL program on webgpu, or plain tfjs ops
 * (any backend, and the reference the kernels are tested against). Under a gradient tape an op
 * runs its kernel together with the kernel's gradient, or tfjs ops that tfjs differentiates.
 * Without a tape, each op's gradient is also a function of its own beside it (rmsNormBackward,
 * ropeBackward, attendBackward, swigluBackward, gegluBackward, linearBackward), which a training
 * step's one forward pass differentiates a block with (decoder-block-gradient.ts): the ops save
 * what those read (saved-activations.ts).
 *
 * | op | wasm | webgpu | elsewhere |
 * |---|---|---|---|
 * | rmsNorm | kernels/rms-norm.ts (+ backward kernel) | WGSL, forward and explicit backward (the residual's gradient added), outside a tape | tfjs ops |
 * | rope | kernels/rope.ts (+ backward kernel) | WGSL outside a tape; with q\|k\|v's split and layouts (and the head norms, where the family has them) in one WGSL dispatch, forward (ropeQkv, ropeQkvNormed) and explicit backward (ropeQkvBackward, ropeQkvNormedBackward) | tfjs ops |
 * | swiglu | kernels/swiglu.ts (+ backward kernel) | WGSL outside a tape, forward and explicit backward (with the down projection's LoRA backward, in its program) | tfjs ops |
 * | geglu | tfjs ops, GELU's gradient written out (ops/gelu.ts) | tfjs ops | tfjs ops |
 * | attend | kernels/decode-attention.ts, kernels/prompt-attention.ts (+ backward kernel) | WGSL outside a tape: decoding, and T tokens (kernels/prompt-attention.webgpu.ts, forward and explicit backward) | tfjs ops, tiled custom gradient; explicit backward batched |
 * | linear (FrozenLinear.forward) | kernels/matmul.ts, kernels/lora.ts; gradients ops/linear-gradient.ts | training with low-rank adapters outside a tape: WGSL forward and explicit backward (kernels/lora.webgpu.ts); else tfjs ops | tfjs ops |
 * | decoderBlock | kernels/decode-block.ts (decoding, one call per block) | Block.forward | Block.forward |
 * | embed (no gradient) | rows copied from the host's table | tied embeddings outside a tape: WGSL reads the rows from the lm_head's weight (kernels/embedding-rows.webgpu.ts); else the host's rows | the host's rows |
 *
 * A whole decoding step on webgpu runs as one encoded step instead (kernels/decode-step.webgpu.ts,
 * chosen by DecodeBatch).
 */
export { attend } from './attention';
export { decoderBlock } from './decoder-block';
export { embed } from './embedding';
export { geglu } from './gelu';
export { rmsNorm } from './norm';
export { rope, ropeQkv, ropeQkvNormed } from './rope';
export { swiglu } from './swiglu';
