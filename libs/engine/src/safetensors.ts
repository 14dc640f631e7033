import * as fs from 'node:fs';
import * as path from 'node:path';
import { BYTES_PER_ELEMENT, StorageDtype, fromFloat32, toFloat32 } from './dtype';
import { ModelLoadError } from './errors';

/**
 * The safetensors format: an 8-byte little-endian header length N, N bytes of JSON mapping
 * each tensor name to {dtype, shape, data_offsets}, then the raw row-major data. Files are
 * read tensor by tensor with positioned reads, so a multi-GB checkpoint never sits in one buffer.
 */

export interface TensorInfo {
  dtype: string;
  shape: number[];
  /** Byte range relative to the end of the header. */
  data_offsets: [number, number];
}

export interface FloatTensor {
  shape: number[];
  data: Float32Array;
}

const SUPPORTED: ReadonlySet<string> = new Set(['F32', 'F16', 'BF16']);
const MAX_HEADER_BYTES = 100 * 1024 * 1024;

export class SafetensorsFile {
  readonly tensors: ReadonlyMap<string, TensorInfo>;
  readonly metadata: Record<string, string>;
  private readonly fd: number;
  private readonly dataStart: number;

  private constructor(
    readonly file: string,
    fd: number,
    dataStart: number,
    tensors: Map<string, TensorInfo>,
    metadata: Record<string, string>,
  ) {
    this.fd = fd;
    this.dataStart = dataStart;
    this.tensors = tensors;
    this.metadata = metadata;
  }

  static open(file: string): SafetensorsFile {
    if (!fs.existsSync(file)) throw new ModelLoadError('file not found', file);
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const lengthBytes = Buffer.alloc(8);
      if (size < 8 || fs.readSync(fd, lengthBytes, 0, 8, 0) !== 8) throw new ModelLoadError('truncated header', file);
      const headerLength = Number(lengthBytes.readBigUInt64LE(0));
      if (headerLength > MAX_HEADER_BYTES || 8 + headerLength > size) throw new ModelLoadError('invalid header length', file);
      const headerBytes = Buffer.alloc(headerLength);
      fs.readSync(fd, headerBytes, 0, headerLength, 8);
      let header: Record<string, unknown>;
      try {
        header = JSON.parse(headerBytes.toString('utf8'));
      } catch {
        throw new ModelLoadError('header is not valid JSON', file);
      }
      const tensors = new Map<string, TensorInfo>();
      let metadata: Record<string, string> = {};
      const dataBytes = size - 8 - headerLength;
      for (const [name, value] of Object.entries(header)) {
        if (name === '__metadata__') {
          metadata = value as Record<string, string>;
          continue;
        }
        const info = value as TensorInfo;
        const [begin, end] = info.data_offsets ?? [];
        const expected = info.shape.reduce((a, b) => a * b, 1) * (BYTES_PER_ELEMENT[info.dtype as StorageDtype] ?? 0);
        if (SUPPORTED.has(info.dtype) && (end - begin !== expected || end > dataBytes)) {
          throw new ModelLoadError(`data_offsets [${begin}, ${end}] do not match shape [${info.shape}] ${info.dtype}`, file, name);
        }
        tensors.set(name, info);
      }
      return new SafetensorsFile(file, fd, 8 + headerLength, tensors, metadata);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** Reads one tensor and widens it to float32. */
  read(name: string): FloatTensor {
    const info = this.tensors.get(name);
    if (!info) throw new ModelLoadError('tensor not found', this.file, name);
    if (!SUPPORTED.has(info.dtype)) throw new ModelLoadError(`unsupported dtype ${info.dtype} (F32, F16, BF16 are)`, this.file, name);
    const [begin, end] = info.data_offsets;
    // Its own ArrayBuffer at offset 0 (never the shared pool): F32 data can then be viewed in place.
    const bytes = Buffer.allocUnsafeSlow(end - begin);
    let done = 0;
    while (done < bytes.length) {
      const n = fs.readSync(this.fd, bytes, done, bytes.length - done, this.dataStart + begin + done);
      if (n <= 0) throw new ModelLoadError('unexpected end of file', this.file, name);
      done += n;
    }
    return { shape: [...info.shape], data: toFloat32(bytes, info.dtype as StorageDtype) };
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

export interface TensorToWrite {
  shape: number[];
  /** The values, or a function giving the stored bytes at write time (a writer that holds no whole model in memory). */
  data: Float32Array | (() => Uint8Array);
  /** Stored dtype; float32 data is narrowed on write. Default F32. */
  dtype?: StorageDtype;
}

/** Bytes a tensor takes in the file. */
export function storedBytes(t: Pick<TensorToWrite, 'shape' | 'dtype'>): number {
  return t.shape.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[t.dtype ?? 'F32'];
}

/**
 * Writes tensors in name order (as the Python writer does), streaming each one to disk.
 */
export function writeSafetensors(
  file: string,
  tensors: Record<string, TensorToWrite>,
  metadata: Record<string, string> = {},
): void {
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header['__metadata__'] = metadata;
  let offset = 0;
  for (const name of names) {
    const t = tensors[name];
    const dtype = t.dtype ?? 'F32';
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (typeof t.data !== 'function' && count !== t.data.length) throw new Error(`${name}: shape [${t.shape}] does not match ${t.data.length} values`);
    const bytes = storedBytes(t);
    header[name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  // Pad with spaces so the data starts 8-byte aligned, as the reference writer does.
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const headerBytes = Buffer.from(json, 'utf8');
  const lengthBytes = Buffer.alloc(8);
  lengthBytes.writeBigUInt64LE(BigInt(headerBytes.length));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, lengthBytes);
    fs.writeSync(fd, headerBytes);
    for (const name of names) {
      const t = tensors[name];
      const bytes = typeof t.data === 'function' ? t.data() : fromFloat32(t.data, t.dtype ?? 'F32');
      if (bytes.byteLength !== storedBytes(t)) throw new Error(`${name}: ${bytes.byteLength} bytes for shape [${t.shape}] ${t.dtype ?? 'F32'}`);
      fs.writeSync(fd, bytes);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A checkpoint as HF stores it: one model.safetensors, or shards listed by
 * model.safetensors.index.json. Lets the loader ask for tensors by name only.
 */
export class Checkpoint {
  private readonly files = new Map<string, SafetensorsFile>();
  private readonly location = new Map<string, string>();

  constructor(readonly dir: string) {
    const index = path.join(dir, 'model.safetensors.index.json');
    const single = path.join(dir, 'model.safetensors');
    if (fs.existsSync(index)) {
      let weightMap: Record<string, string>;
      try {
        weightMap = JSON.parse(fs.readFileSync(index, 'utf8')).weight_map;
      } catch (err) {
        throw new ModelLoadError(`cannot parse: ${(err as Error).message}`, index);
      }
      if (!weightMap) throw new ModelLoadError('no weight_map', index);
      for (const [name, shard] of Object.entries(weightMap)) this.location.set(name, path.join(dir, shard));
    } else if (fs.existsSync(single)) {
      const file = SafetensorsFile.open(single);
      this.files.set(single, file);
      for (const name of file.tensors.keys()) this.location.set(name, single);
    } else {
      throw new ModelLoadError('missing: neither model.safetensors nor model.safetensors.index.json exists', single);
    }
  }

  has(name: string): boolean {
    return this.location.has(name);
  }

  /** A tensor's stored dtype (F32, F16, BF16...). */
  dtypeOf(name: string): string {
    const info = this.open(name).tensors.get(name);
    if (!info) throw new ModelLoadError('tensor missing from checkpoint', this.fileOf(name), name);
    return info.dtype;
  }

  /** A tensor's shape, from the header: no data is read. */
  shapeOf(name: string): number[] {
    const info = this.open(name).tensors.get(name);
    if (!info) throw new ModelLoadError('tensor missing from checkpoint', this.fileOf(name), name);
    return [...info.shape];
  }

  /** The file a tensor lives in, for error messages. */
  fileOf(name: string): string {
    return this.location.get(name) ?? path.join(this.dir, 'model.safetensors');
  }

  read(name: string, expectedShape?: number[]): FloatTensor {
    const tensor = this.open(name).read(name);
    if (expectedShape && !sameShape(tensor.shape, expectedShape)) {
      throw new ModelLoadError(`shape [${tensor.shape}] does not match the config's [${expectedShape}]`, this.fileOf(name), name);
    }
    return tensor;
  }

  /** The file holding `name`, opened on first use. */
  private open(name: string): SafetensorsFile {
    const file = this.location.get(name);
    if (!file) throw new ModelLoadError('tensor missing from checkpoint', this.fileOf(name), name);
    let st = this.files.get(file);
    if (!st) {
      st = SafetensorsFile.open(file);
      this.files.set(file, st);
    }
    return st;
  }

  close(): void {
    for (const f of this.files.values()) f.close();
    this.files.clear();
  }
}

function sameShape(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
