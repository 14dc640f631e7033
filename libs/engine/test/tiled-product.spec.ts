import { productTiling, rowMajor, setProductTiles, tiledProduct, useSubgroupMatrices } from '../src/kernels/tiled-product.wgsl';

/**
 * Which tiles a webgpu product takes (kernels/tiled-product.wgsl.ts): 128 where their grid still
 * has enough workgroups to fill a large GPU, 32 where 64-tiles would leave most of it idle, else
 * 64, or the one a bench sets; the programs the three sizes make are checked against the cpu
 * backend in webgpu-training-kernels.spec.ts and webgpu-half-weights.spec.ts.
 */
describe('tiled product tiling', () => {
  afterEach(() => {
    setProductTiles('auto');
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

  it("keeps a thread's outputs in registers: 2 x 2 of a 32-tile, 4 x 4 of a 64-tile, 8 x 8 of a 128-tile", () => {
    const wgsl = (tile: 32 | 64 | 128) => tiledProduct(32, 32, tile, rowMajor('x', 32), (k, c) => `w[${k} * 32u + ${c}]`, true, (row, col, value) => `y[${row} * 32u + ${col}] = ${value};`);
    expect(wgsl(32)).toContain('var acc : array<vec2<f32>, 2>;');
    expect(wgsl(64)).toContain('var acc : array<vec4<f32>, 4>;');
    expect(wgsl(128)).toContain('var acc : array<vec4<f32>, 16>;');
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
    // A product that cannot take f16 operands (the lm_head's input gradient) takes the f32 tiles by its size, even where a bench asks for the matrix tile.
    expect(productTiling(1024, 22016, 0, false)).toEqual({ tile: 128, dispatch: [172, 8, 1] });
    setProductTiles('matrix');
    expect(productTiling(1024, 960, 0, false).tile).toBe(32);
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
