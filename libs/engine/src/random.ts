// Math's functions held in module constants: inside a vm context (jest's test environment)
// every read of a global such as Math goes through the context's interceptor, which made
// normals() about 12 times slower there than in a plain process (a model for tests took 34 s).
const { cos, log, sin, sqrt } = Math;
const TWO_PI = 2 * Math.PI;

/** A small seeded PRNG (sfc32) with normal draws: the same seed makes the same weights everywhere. */
export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | null = null;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 16; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.a >>>= 0;
    this.b >>>= 0;
    this.c >>>= 0;
    this.d >>>= 0;
    let t = (this.a + this.b) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.d = (this.d + 1) | 0;
    t = (t + this.d) | 0;
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  normal(): number {
    if (this.spare !== null) {
      const s = this.spare;
      this.spare = null;
      return s;
    }
    let u = 0;
    while (u === 0) u = this.next();
    const v = this.next();
    const r = sqrt(-2 * log(u));
    this.spare = r * sin(TWO_PI * v);
    return r * cos(TWO_PI * v);
  }

  normals(n: number, std: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal() * std;
    return out;
  }
}
