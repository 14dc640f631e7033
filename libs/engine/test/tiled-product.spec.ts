import { InnerSplits, PRODUCT_TILES, ProductTile, productTiling, rowMajor, setProductSplits, setProductTiles, splitProductTiling, tiledProduct, tileMemory, trainingTiling, useSubgroupMatrices } from '../src/kernels/tiled-product.wgsl';

/** Splits of an inner dimension as the lm_head's input gradient splits its vocabulary (kernels/next-token-softmax.webgpu.ts). */
const VOCABULARY: InnerSplits = { target: 512, fewestInner: 2048, most: 32 };

/**
 * Which tiles a webgpu product takes (kernels/tiled-product.wgsl.ts): 128 where their grid still
 * has enough workgroups to fill a large GPU, 32 where 64-tiles would leave most of it idle, else
 * 64, or the one a bench sets; the programs the three sizes make are checked against the cpu
 * backend in webgpu-training-kernels.spec.ts and webgpu-half-weights.spec.ts.
 */
describe('tiled product tiling', () => {
  afterEach(() => {
    setProductTiles('auto');
    setProductSplits(false);
    useSubgroupMatrices(null);
  });

  it('takes 128-tiles for products with enough of them, 32 for those with few 64-tiles, 64 for the rest', () => {
    // Qwen2.5-3B's gate|up over a 4 x 256-token step: 8 x 172 tiles of 128.
    expect(productTiling(1024, 22016)).toEqual({ tile: 128, dispatch: [172, 8, 1] });
    // SmolLM2-135M's gate|up on the same rows: 4 x 24 tiles of 128, too few; 16 x 48 of 64.
    expect(productTiling(1024, 3072)).toEqual({ tile: 64, dispatch: [48, 16, 1] });
    // Its q|k|v: 16 x 15 tiles of 64, too few; 32 x 30 of 32. Qwen2.5-0.5B's (1,152 columns): 16 x 18 of 64.
    expect(productTiling(1024, 960)).toEqual({ tile: 32, dispatch: [30, 32, 1] });
    expect(productTiling(1024, 1152).tile).toBe(64);
    // Rows and columns past a whole tile take one more.
    expect(productTiling(65, 129).dispatch).toEqual([5, 3, 1]);
  });

  it('puts extra workgroups in rows of the grid after the product\'s', () => {
    // 48 x 16 tiles of 64, then 100 workgroups: three rows of 48 more (the last part-filled).
    expect(productTiling(1024, 3072, 100)).toEqual({ tile: 64, dispatch: [48, 19, 1] });
    expect(productTiling(1024, 3072, 96).dispatch).toEqual([48, 18, 1]);
    expect(productTiling(1024, 3072, 97).dispatch).toEqual([48, 19, 1]);
  });

  it('takes the tiles a bench sets, whatever the size', () => {
    setProductTiles(64);
    expect(productTiling(1024, 22016).tile).toBe(64);
    setProductTiles(128);
    expect(productTiling(8, 8)).toEqual({ tile: 128, dispatch: [1, 1, 1] });
  });

  it('takes the widest tile whose workgroups, split along the inner dimension, fill a large GPU', () => {
    // SmolLM2-135M's head gradient over 1,016 positions: 5 x 8 tiles of 128, split 8 ways (16 would pass 512 workgroups).
    expect(splitProductTiling(1016, 576, 49152, VOCABULARY)).toEqual({ tile: 128, dispatch: [5, 8, 8] });
    // Qwen2.5-0.5B's over 55 positions: 7 tiles of 128 make 224 at most; 14 of 64, 32 ways.
    expect(splitProductTiling(55, 896, 151936, VOCABULARY)).toEqual({ tile: 64, dispatch: [14, 1, 32] });
    // A vocabulary of 49,152 splits at most 16 ways (each split walks 2,048 or more): 3 tiles of 128 then make 48 workgroups, 5 of 64 80, 18 of 32 288.
    expect(splitProductTiling(40, 288, 49152, VOCABULARY)).toEqual({ tile: 32, dispatch: [9, 2, 16] });
    // Nothing fills the GPU: the tile of the most workgroups, unsplit where the inner dimension is short.
    expect(splitProductTiling(5, 72, 1003, VOCABULARY)).toEqual({ tile: 32, dispatch: [3, 1, 1] });
  });

  it('splits the tile a bench sets', () => {
    setProductTiles(32);
    expect(splitProductTiling(1016, 576, 49152, VOCABULARY)).toEqual({ tile: 32, dispatch: [18, 32, 1] });
    setProductTiles(128);
    expect(splitProductTiling(3, 72, 49157, VOCABULARY)).toEqual({ tile: 128, dispatch: [1, 1, 16] });
  });

  it("splits a training step's products only where setProductSplits says, the extra work's rows in each split's layer, within the program's memory", () => {
    // SmolLM2-135M's o projection over a 4 x 256-token step: 18 x 32 tiles of 32 unsplit; split, 9 x 16 of 64 in 2 splits of 288.
    expect(trainingTiling(1024, 576, 576)).toEqual({ tiling: { tile: 32, dispatch: [18, 32, 1] }, splits: 1, splitDepth: null });
    setProductSplits(true);
    expect(trainingTiling(1024, 576, 576)).toEqual({ tiling: { tile: 64, dispatch: [9, 16, 2] }, splits: 2, splitDepth: 288 });
    // Ten workgroups of extra work (a LoRA input gradient's dA sums) take two more rows of 9.
    expect(trainingTiling(1024, 576, 576, 10).tiling.dispatch).toEqual([9, 18, 2]);
    // Its gate|up, split: 8 x 24 tiles of 128 in 2; where the program has 15 KB for its product, 48 x 16 of 64, unsplit.
    expect(trainingTiling(1024, 3072, 576).tiling).toEqual({ tile: 128, dispatch: [24, 8, 2] });
    expect(trainingTiling(1024, 3072, 576, 0, 16384 - 1024).tiling).toEqual({ tile: 64, dispatch: [48, 16, 1] });
    // A tile a bench sets that the memory does not hold gives way to the widest that it does.
    setProductTiles(128);
    expect(trainingTiling(1024, 576, 576, 0, 16384 - 1024).tiling.tile).toBe(64);
  });

  it("keeps a thread's outputs in registers: 2 x 2 of a 32-tile, 4 x 4 of a 64-tile, 8 x 8 of a 128-tile", () => {
    const wgsl = (tile: 32 | 64 | 128) => tiledProduct(32, 32, tile, rowMajor('x', 32), (k, c) => `w[${k} * 32u + ${c}]`, true, (row, col, value) => `y[${row} * 32u + ${col}] = ${value};`);
    expect(wgsl(32)).toContain('var acc : array<vec2<f32>, 2>;');
    expect(wgsl(64)).toContain('var acc : array<vec4<f32>, 4>;');
    expect(wgsl(128)).toContain('var acc : array<vec4<f32>, 16>;');
  });

  it("keeps every tile's workgroup memory within WebGPU's default, 16,384 bytes", () => {
    const bytes = { 'vec4<f32>': 16, 'vec2<f32>': 8, f32: 4, f16: 2 } as Record<string, number>;
    // The bytes a program's var<workgroup> arrays declare.
    const declared = (wgsl: string) => [...wgsl.matchAll(/var<workgroup> \w+ : array<([\w<>0-9]+), (\d+)>;/g)].reduce((sum, [, type, n]) => sum + bytes[type] * Number(n), 0);
    const wgsl = (tile: ProductTile) => tiledProduct(4096, 4096, tile, rowMajor('x', 4096), (k, c) => `w[${c} * 4096u + ${k}]`, false, (row, col, value) => `y[${row} * 4096u + ${col}] = ${value};`);
    // The 128-tile's two staged slices take it all: 16 steps of k, 128 floats each.
    expect(declared(wgsl(128))).toBe(16384);
    expect(declared(wgsl(64))).toBe(8192);
    expect(declared(wgsl(32))).toBe(4096);
    for (const tile of PRODUCT_TILES) expect(tileMemory(tile)).toBe(declared(wgsl(tile)));
    useSubgroupMatrices({ M: 16, N: 16, K: 16, subgroupSize: 32 });
    expect(declared(wgsl('matrix'))).toBeLessThanOrEqual(16384);
    expect(tileMemory('matrix')).toBe(declared(wgsl('matrix')));
  });

  it('gives way to the widest tile within the workgroup memory a program has for its product', () => {
    // Qwen2.5-3B's down input gradient over a 4 x 256-token step: 8 x 86 tiles of 128, which fill 16 KB alone.
    expect(productTiling(1024, 11008, 0, 16384)).toEqual({ tile: 128, dispatch: [86, 8, 1] });
    // The LoRA program's dA sums beside it take 1 KB more: 64-tiles.
    expect(productTiling(1024, 11008, 0, 16384 - 1024)).toEqual({ tile: 64, dispatch: [172, 16, 1] });
    setProductTiles(128);
    expect(productTiling(1024, 11008, 0, 8191).tile).toBe(32);
    useSubgroupMatrices({ M: 16, N: 16, K: 16, subgroupSize: 32 });
    setProductTiles('auto');
    expect(productTiling(1024, 11008, 0, 16384 - 1024).tile).toBe('matrix');
    expect(productTiling(1024, 11008, 0, 8192).tile).toBe(64);
  });

  it('takes the matrix tile wherever the device multiplies in subgroup matrices, unless a bench sets another', () => {
    setProductTiles('matrix');
    // No subgroup matrices: the sizes decide.
    expect(productTiling(1024, 22016).tile).toBe(128);
    useSubgroupMatrices({ M: 16, N: 16, K: 16, subgroupSize: 32 });
    setProductTiles('auto');
    // 64 x 64 tiles, whatever the size.
    expect(productTiling(1024, 22016)).toEqual({ tile: 'matrix', dispatch: [344, 16, 1] });
    expect(productTiling(65, 129, 4)).toEqual({ tile: 'matrix', dispatch: [3, 4, 1] });
    // A product split along its inner dimension takes f32 tiles (its gradients would not survive f16), even where a bench asks for the matrix tile.
    expect(splitProductTiling(1016, 576, 49152, VOCABULARY).tile).toBe(128);
    setProductTiles('matrix');
    expect(splitProductTiling(1016, 576, 49152, VOCABULARY).tile).toBe(128);
    setProductTiles(64);
    expect(productTiling(1024, 22016).tile).toBe(64);
  });

  it('takes only subgroup matrices that tile the matrix tile evenly among its subgroups', () => {
    expect(() => useSubgroupMatrices({ M: 8, N: 8, K: 8, subgroupSize: 32 })).not.toThrow();
    // 48 does not divide 64; 256 invocations are not a whole number of subgroups of 96.
    expect(() => useSubgroupMatrices({ M: 48, N: 16, K: 16, subgroupSize: 32 })).toThrow(/do not fit/);
    expect(() => useSubgroupMatrices({ M: 16, N: 16, K: 16, subgroupSize: 96 })).toThrow(/do not fit/);
    // 16 blocks of 32 x 32... 4 blocks for 8 subgroups of 32: some subgroups would have none.
    expect(() => useSubgroupMatrices({ M: 32, N: 32, K: 16, subgroupSize: 32 })).toThrow(/do not fit/);
  });
});
