// AssemblyScript helpers shared by the kernels (imported, not a kernel of its own: scripts/
// build-kernels.mjs compiles only the files directly under assembly/). No static data, as
// everywhere in the kernels: exp is a polynomial, not Mathf.exp and its tables.

/** The largest of S floats (-Infinity for none but -Infinity). */
export function maxOf(row: usize, S: i32): f32 {
  const bytes = (<usize>S) << 2;
  let mm = f32x4.splat(<f32>-Infinity);
  let at: usize = 0;
  for (; at + 16 <= bytes; at += 16) mm = f32x4.max(mm, v128.load(row + at));
  let m = max(max(f32x4.extract_lane(mm, 0), f32x4.extract_lane(mm, 1)), max(f32x4.extract_lane(mm, 2), f32x4.extract_lane(mm, 3)));
  for (; at < bytes; at += 4) m = max(m, load<f32>(row + at));
  return m;
}

/**
 * e^x for x <= 0, as in Cephes' expf: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two
 * parts so that n ln2 is exact), e^r by its degree-7 minimax polynomial, and 2^n put
 * straight into the float's exponent bits. Relative error about 1e-7; 0 below -87, where
 * 2^n would leave float32's normal range.
 */
export function expf(x: f32): f32 {
  if (x < <f32>-87) return 0;
  const n = nearest<f32>(x * <f32>1.44269504088896341);
  const r = x - n * <f32>0.693359375 + n * <f32>2.12194440e-4;
  let p = <f32>1.9875691500e-4;
  p = p * r + <f32>1.3981999507e-3;
  p = p * r + <f32>8.3334519073e-3;
  p = p * r + <f32>4.1665795894e-2;
  p = p * r + <f32>1.6666665459e-1;
  p = p * r + <f32>5.0000001201e-1;
  return (p * r * r + r + 1) * reinterpret<f32>((<i32>n + 127) << 23);
}

/** expf for four lanes at once: the same operations in the same order, so the same bits per lane. */
export function expf4(x: v128): v128 {
  const n = f32x4.nearest(f32x4.mul(x, f32x4.splat(<f32>1.44269504088896341)));
  const r = f32x4.add(f32x4.sub(x, f32x4.mul(n, f32x4.splat(<f32>0.693359375))), f32x4.mul(n, f32x4.splat(<f32>2.12194440e-4)));
  let p = f32x4.splat(<f32>1.9875691500e-4);
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(<f32>1.3981999507e-3));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(<f32>8.3334519073e-3));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(<f32>4.1665795894e-2));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(<f32>1.6666665459e-1));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(<f32>5.0000001201e-1));
  const twoToN = i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(n), i32x4.splat(127)), 23);
  const e = f32x4.mul(f32x4.add(f32x4.add(f32x4.mul(f32x4.mul(p, r), r), r), f32x4.splat(1)), twoToN);
  // 0 below -87 (and for -Infinity, a masked column), as expf.
  return v128.andnot(e, f32x4.lt(x, f32x4.splat(<f32>-87)));
}
