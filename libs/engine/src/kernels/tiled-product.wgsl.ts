/**
 * The tiled product the webgpu projections share (kernels/lora.webgpu.ts's training products,
 * kernels/half-linear.webgpu.ts's 16-bit ones): a workgroup a TILE x TILE block of the output.
 */

/** The products' output tiles: TILE x TILE a workgroup of THREADS (16 x 16, 4 x 4 outputs each), DEPTH of the inner dimension a step. */
export const TILE = 64;
const DEPTH = 16;
const THREADS = 256;

/** Floats a row of the left operand's staged slice takes: TILE and 4 of padding, so that the threads staging one row's DEPTH values write apart in workgroup memory's banks. */
const LEFT_STRIDE = TILE + 4;

/**
 * A tiled product out [M, cols] = left [M, inner] right, with right read as [inner, cols]
 * (`rightAt(k, c)`: W [K, N] for y, W^T for dx, `rightRowMajor` telling which of k and c is
 * contiguous in memory, so that neighbouring threads load neighbouring floats). A workgroup of
 * 16 x 16 threads computes a TILE x TILE block of the output, each thread 4 x 4 of it in
 * registers, stepping through `inner` DEPTH at a time with both operands' slices staged in
 * workgroup memory, k-major, so that a thread reads its 4 rows of the left and its 4 columns of
 * the right as one vec4 each a step (two loads for 16 multiply-adds); `finish(row, col, acc)`
 * gives the value (the epilogue: bias, the adapters' part), which `store` writes. The program
 * around it binds the uniform `u.M` (the left's rows) and defines `finish`.
 */
export function tiledProduct(inner: number, cols: number, left: string, rightAt: (k: string, c: string) => string, rightRowMajor: boolean, store: (row: string, col: string, value: string) => string): string {
  const loads = (TILE * DEPTH) / THREADS;
  return `// ls [DEPTH][LEFT_STRIDE] (the left's TILE rows of each k, padded), rs [DEPTH][TILE cols], as vec4s.
var<workgroup> ls : array<vec4<f32>, ${(DEPTH * LEFT_STRIDE) / 4}>;
var<workgroup> rs : array<vec4<f32>, ${(DEPTH * TILE) / 4}>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg : vec3<u32>, @builtin(local_invocation_id) lid : vec3<u32>, @builtin(local_invocation_index) tid : u32) {
  let row0 = wg.y * ${TILE}u;
  let col0 = wg.x * ${TILE}u;
  var acc : array<vec4<f32>, 4>;
  for (var k0 = 0u; k0 < ${inner}u; k0 += ${DEPTH}u) {
    // ${loads} loads a thread of each operand, neighbouring threads reading neighbouring floats.
    for (var n = 0u; n < ${loads}u; n++) {
      let e = tid + n * ${THREADS}u;
      let r = e / ${DEPTH}u;
      let kl = e % ${DEPTH}u;
      var lv = 0.0;
      if (row0 + r < u.M && k0 + kl < ${inner}u) { lv = ${left}[(row0 + r) * ${inner}u + k0 + kl]; }
      let at = kl * ${LEFT_STRIDE}u + r;
      ls[at / 4u][at % 4u] = lv;
      ${
        rightRowMajor
          ? `let kk = e / ${TILE}u;
      let c = e % ${TILE}u;`
          : `let c = e / ${DEPTH}u;
      let kk = e % ${DEPTH}u;`
      }
      let kr = k0 + kk;
      var rv = 0.0;
      if (kr < ${inner}u && col0 + c < ${cols}u) { rv = ${rightAt('kr', '(col0 + c)')}; }
      let rat = kk * ${TILE}u + c;
      rs[rat / 4u][rat % 4u] = rv;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${DEPTH}u; kk++) {
      let a = ls[kk * ${LEFT_STRIDE / 4}u + lid.y];
      let b = rs[kk * ${TILE / 4}u + lid.x];
      for (var i = 0u; i < 4u; i++) { acc[i] += a[i] * b; }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    for (var j = 0u; j < 4u; j++) {
      let row = row0 + lid.y * 4u + i;
      let col = col0 + lid.x * 4u + j;
      if (row < u.M && col < ${cols}u) { ${store('row', 'col', 'finish(row, col, acc[i][j])')} }
    }
  }
}`;
}
