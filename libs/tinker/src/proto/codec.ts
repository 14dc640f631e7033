import * as protobuf from 'protobufjs';
import { TINKER_PUBLIC_DESCRIPTOR } from './tinker-public.descriptor';

/**
 * The protobuf messages the Tinker SDK exchanges (package tinker_public), with the byte layouts
 * its request_conv.py and response_conv.py use: every array is packed little-endian bytes, token
 * ids int32, loss inputs dense (or CSR) in the tensor's dtype, per-datum outputs one
 * BatchedTensor per field with int64 byte offsets (num_datums + 1 of them).
 */

// Map fields (keyType) are IMapField, which the INamespace type does not list.
const root = protobuf.Root.fromJSON(TINKER_PUBLIC_DESCRIPTOR as unknown as protobuf.INamespace);
const ForwardBackwardRequestType = root.lookupType('tinker_public.ForwardBackwardRequest');
const ForwardBackwardOutputType = root.lookupType('tinker_public.ForwardBackwardOutput');
const SampleResponseType = root.lookupType('tinker_public.SampleResponse');

/** A protobuf body that cannot be what the SDK sends: the gateway answers 400 with the message. */
export class TinkerProtocolError extends Error {
  override name = 'TinkerProtocolError';
}

export type TensorDType = 'float32' | 'int64' | 'int32' | 'bfloat16';
const DTYPES: Record<number, TensorDType> = { 1: 'float32', 2: 'int64', 3: 'int32', 4: 'bfloat16' };
const DTYPE_NUMBERS: Record<TensorDType, number> = { float32: 1, int64: 2, int32: 3, bfloat16: 4 };
const BYTES_PER: Record<TensorDType, number> = { float32: 4, int64: 8, int32: 4, bfloat16: 2 };

/** A decoded loss input: its values as numbers, row-major in `shape`. */
export interface TensorValue {
  dtype: TensorDType;
  shape: number[];
  values: number[];
}

export interface DatumMessage {
  /** The model input's tokens, every encoded_text chunk in order. */
  modelInput: number[];
  lossFnInputs: Record<string, TensorValue>;
}

export interface ForwardBackwardRequestMessage {
  modelId: string;
  seqId: number;
  data: DatumMessage[];
  lossFn: string;
  lossFnConfig: Record<string, number>;
  forwardOnly: boolean;
}

/** One datum's outputs: float32 arrays by field name (`logprobs`). */
export type DatumOutputs = Record<string, ArrayLike<number>>;

export interface ForwardBackwardOutputMessage {
  lossFnOutputs: DatumOutputs[];
  metrics: Record<string, number>;
}

export interface SampledSequenceMessage {
  stopReason: 'stop' | 'length';
  tokens: number[];
  logprobs?: ArrayLike<number> | null;
}

export interface SampleResponseMessage {
  sequences: SampledSequenceMessage[];
  /** One per prompt token, NaN where there is none (the first). */
  promptLogprobs?: ArrayLike<number> | null;
}

// ---------------------------------------------------------------- bytes <-> numbers

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Little-endian values of `dtype` packed in `bytes`, as numbers (int64 beyond 2^53 is refused). */
export function readPacked(bytes: Uint8Array, dtype: TensorDType, what: string): number[] {
  const size = BYTES_PER[dtype];
  if (bytes.byteLength % size !== 0) throw new TinkerProtocolError(`${what}: ${bytes.byteLength} bytes is not a whole number of ${dtype} values`);
  const v = view(bytes);
  const out = new Array<number>(bytes.byteLength / size);
  for (let i = 0; i < out.length; i++) {
    const at = i * size;
    switch (dtype) {
      case 'float32':
        out[i] = v.getFloat32(at, true);
        break;
      case 'int32':
        out[i] = v.getInt32(at, true);
        break;
      case 'bfloat16':
        out[i] = new Float32Array(new Uint32Array([v.getUint16(at, true) << 16]).buffer)[0];
        break;
      case 'int64': {
        const big = v.getBigInt64(at, true);
        if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) throw new TinkerProtocolError(`${what}[${i}] is too large`);
        out[i] = Number(big);
        break;
      }
    }
  }
  return out;
}

/** `values` packed little-endian as `dtype`. */
export function writePacked(values: ArrayLike<number>, dtype: 'float32' | 'int32' | 'int64'): Uint8Array {
  const out = new Uint8Array(values.length * BYTES_PER[dtype]);
  const v = view(out);
  for (let i = 0; i < values.length; i++) {
    if (dtype === 'float32') v.setFloat32(i * 4, values[i], true);
    else if (dtype === 'int32') v.setInt32(i * 4, values[i], true);
    else v.setBigInt64(i * 8, BigInt(Math.trunc(values[i])), true);
  }
  return out;
}

// ---------------------------------------------------------------- ForwardBackwardRequest

interface RawTensor {
  dense?: Uint8Array;
  sparse_csr?: { values?: Uint8Array; crow_indices?: Uint8Array; col_indices?: Uint8Array };
  dtype?: number;
  shape?: number[];
}

interface RawRequest {
  model_id?: string;
  seq_id?: number;
  data?: { model_input?: { encoded_text?: { tokens?: Uint8Array }; image?: unknown; dmel?: unknown }[]; loss_fn_inputs?: Record<string, RawTensor> }[];
  loss_fn?: string;
  loss_fn_config?: Record<string, number>;
  forward_only?: boolean;
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: Number, defaults: false, arrays: true, objects: true };

function decodeTensor(raw: RawTensor, what: string): TensorValue {
  const dtype = DTYPES[raw.dtype ?? 0];
  if (!dtype) throw new TinkerProtocolError(`${what}: dtype ${raw.dtype ?? 0} is not float32, int64, int32 or bfloat16`);
  const shape = (raw.shape ?? []).map(Number);
  let values: number[];
  if (raw.sparse_csr) {
    const cols = shape.length > 0 ? shape[shape.length - 1] : 0;
    const rows = shape.length > 1 ? shape.slice(0, -1).reduce((a, b) => a * b, 1) : 1;
    const nonzero = readPacked(raw.sparse_csr.values ?? new Uint8Array(), dtype, `${what}.sparse_csr.values`);
    const crow = readPacked(raw.sparse_csr.crow_indices ?? new Uint8Array(), 'int64', `${what}.sparse_csr.crow_indices`);
    const col = readPacked(raw.sparse_csr.col_indices ?? new Uint8Array(), 'int64', `${what}.sparse_csr.col_indices`);
    if (crow.length !== rows + 1 || col.length !== nonzero.length) throw new TinkerProtocolError(`${what}: the CSR indices do not fit shape [${shape}]`);
    values = new Array<number>(rows * cols).fill(0);
    for (let r = 0; r < rows; r++) {
      for (let k = crow[r]; k < crow[r + 1]; k++) {
        if (!(col[k] >= 0 && col[k] < cols)) throw new TinkerProtocolError(`${what}: CSR column ${col[k]} is outside shape [${shape}]`);
        values[r * cols + col[k]] = nonzero[k];
      }
    }
  } else {
    values = readPacked(raw.dense ?? new Uint8Array(), dtype, `${what}.dense`);
  }
  const expected = shape.length === 0 ? values.length : shape.reduce((a, b) => a * b, 1);
  if (values.length !== expected) throw new TinkerProtocolError(`${what}: ${values.length} values for shape [${shape}]`);
  return { dtype, shape: shape.length === 0 ? [values.length] : shape, values };
}

/** The body of POST /api/v1/forward_backward (and forward), as the SDK's request_conv.py writes it. */
export function decodeForwardBackwardRequest(bytes: Uint8Array): ForwardBackwardRequestMessage {
  let raw: RawRequest;
  try {
    raw = ForwardBackwardRequestType.toObject(ForwardBackwardRequestType.decode(bytes), TO_OBJECT) as RawRequest;
  } catch (err) {
    throw new TinkerProtocolError(`the body is not a tinker_public.ForwardBackwardRequest: ${(err as Error).message}`);
  }
  const data = (raw.data ?? []).map((datum, i): DatumMessage => {
    const modelInput: number[] = [];
    (datum.model_input ?? []).forEach((chunk, c) => {
      if (chunk.image !== undefined || chunk.dmel !== undefined) {
        throw new TinkerProtocolError(`data[${i}].model_input[${c}] is an ${chunk.image !== undefined ? 'image' : 'audio (dmel)'} chunk; only encoded_text is supported`);
      }
      modelInput.push(...readPacked(chunk.encoded_text?.tokens ?? new Uint8Array(), 'int32', `data[${i}].model_input[${c}].tokens`));
    });
    const lossFnInputs: Record<string, TensorValue> = {};
    for (const [name, tensor] of Object.entries(datum.loss_fn_inputs ?? {})) lossFnInputs[name] = decodeTensor(tensor, `data[${i}].loss_fn_inputs.${name}`);
    return { modelInput, lossFnInputs };
  });
  return {
    modelId: raw.model_id ?? '',
    seqId: raw.seq_id ?? 0,
    data,
    lossFn: raw.loss_fn ?? '',
    lossFnConfig: { ...(raw.loss_fn_config ?? {}) },
    forwardOnly: raw.forward_only ?? false,
  };
}

/** What the SDK would send: for tests, benches and clients of our own. */
export function encodeForwardBackwardRequest(request: ForwardBackwardRequestMessage): Uint8Array {
  const message = ForwardBackwardRequestType.fromObject({
    model_id: request.modelId,
    seq_id: request.seqId,
    loss_fn: request.lossFn,
    loss_fn_config: request.lossFnConfig,
    forward_only: request.forwardOnly,
    data: request.data.map((d) => ({
      model_input: [{ encoded_text: { tokens: writePacked(d.modelInput, 'int32') } }],
      loss_fn_inputs: Object.fromEntries(
        Object.entries(d.lossFnInputs).map(([name, t]) => [
          name,
          { dense: writePacked(t.values, t.dtype === 'int64' ? 'int64' : 'float32'), dtype: DTYPE_NUMBERS[t.dtype === 'int64' ? 'int64' : 'float32'], shape: t.shape },
        ]),
      ),
    })),
  });
  return ForwardBackwardRequestType.encode(message).finish();
}

// ---------------------------------------------------------------- ForwardBackwardOutput

/**
 * The result of forward_backward / forward: one ArrayRecord holding, for every output field,
 * one float32 BatchedTensor of all the datums back to back.
 */
export function encodeForwardBackwardOutput(output: ForwardBackwardOutputMessage): Uint8Array {
  const names = output.lossFnOutputs.length > 0 ? Object.keys(output.lossFnOutputs[0]) : [];
  const fields: Record<string, unknown> = {};
  for (const name of names) {
    const parts = output.lossFnOutputs.map((d, i) => {
      const values = d[name];
      if (!values) throw new Error(`datum ${i} has no output ${name}`);
      return values;
    });
    const offsets = [0];
    for (const p of parts) offsets.push(offsets[offsets.length - 1] + p.length * 4);
    const flat = new Float32Array(offsets[offsets.length - 1] / 4);
    let at = 0;
    for (const p of parts) {
      flat.set(Array.from(p), at);
      at += p.length;
    }
    fields[name] = { data: writePacked(flat, 'float32'), offsets: writePacked(offsets, 'int64'), dtype: DTYPE_NUMBERS.float32, trailing_shape: [] };
  }
  const message = ForwardBackwardOutputType.fromObject({
    loss_fn_output_type: 'ArrayRecord',
    loss_fn_outputs: [{ type_tag: 'ArrayRecord', fields, num_datums: output.lossFnOutputs.length }],
    metrics: output.metrics,
  });
  return ForwardBackwardOutputType.encode(message).finish();
}

interface RawOutput {
  loss_fn_outputs?: { fields?: Record<string, { data?: Uint8Array; offsets?: Uint8Array; dtype?: number }>; num_datums?: number }[];
  metrics?: Record<string, number>;
}

/** The reverse of encodeForwardBackwardOutput, as the SDK's response_conv.py reads it (tests). */
export function decodeForwardBackwardOutput(bytes: Uint8Array): ForwardBackwardOutputMessage {
  const raw = ForwardBackwardOutputType.toObject(ForwardBackwardOutputType.decode(bytes), TO_OBJECT) as RawOutput;
  const outputs: DatumOutputs[] = [];
  for (const record of raw.loss_fn_outputs ?? []) {
    const start = outputs.length;
    for (let i = 0; i < (record.num_datums ?? 0); i++) outputs.push({});
    for (const [name, bt] of Object.entries(record.fields ?? {})) {
      const dtype = DTYPES[bt.dtype ?? 0] ?? 'float32';
      const values = readPacked(bt.data ?? new Uint8Array(), dtype, name);
      const offsets = readPacked(bt.offsets ?? new Uint8Array(), 'int64', `${name}.offsets`);
      for (let i = 0; i + 1 < offsets.length; i++) outputs[start + i][name] = values.slice(offsets[i] / BYTES_PER[dtype], offsets[i + 1] / BYTES_PER[dtype]);
    }
  }
  return { lossFnOutputs: outputs, metrics: { ...(raw.metrics ?? {}) } };
}

// ---------------------------------------------------------------- SampleResponse

/** The result of asample, as the SDK's deserialize_sample_response reads it. */
export function encodeSampleResponse(response: SampleResponseMessage): Uint8Array {
  const message = SampleResponseType.fromObject({
    sequences: response.sequences.map((s) => ({
      stop_reason: s.stopReason === 'length' ? 1 : 0,
      tokens: writePacked(s.tokens, 'int32'),
      ...(s.logprobs ? { logprobs: writePacked(s.logprobs, 'float32') } : {}),
    })),
    ...(response.promptLogprobs ? { prompt_logprobs: writePacked(response.promptLogprobs, 'float32') } : {}),
  });
  return SampleResponseType.encode(message).finish();
}
