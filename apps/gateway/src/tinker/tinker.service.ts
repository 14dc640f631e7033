import { Injectable } from '@nestjs/common';
import {
  CallerScope,
  ServiceError,
  Subjects,
  TinkerCall,
  TinkerDatum,
  TinkerForwardBackwardResult,
  TinkerFutureReply,
  TinkerFutureState,
  TinkerLoraConfig,
  TinkerResult,
  TinkerSampleResult,
  TinkerSaveWeightsResult,
  TinkerCheckpointsReply,
  TinkerStatePathResult,
  TinkerTrainingRunRecord,
  TinkerTrainingRunsReply,
  TinkerWeightsInfoReply,
} from '@trainyard/contracts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import {
  ClientConfigResponse,
  ForwardBackwardOutputJson,
  GetServerCapabilitiesResponse,
  RequestFailedResponse,
  TINKER_LOSS_FUNCTIONS,
  TinkerProtocolError,
  TryAgainResponse,
  decodeForwardBackwardRequest,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  samplingSessionId,
  servingNameOfSamplingSession,
} from '@trainyard/tinker';
import {
  AdamParamsBody,
  CreateModelRequest,
  CreateSamplingSessionRequest,
  CreateSessionRequest,
  LoadWeightsRequest,
  LoraConfigBody,
  SampleRequest,
  SaveWeightsForSamplerRequest,
  SaveWeightsRequest,
} from './dto/tinker.requests';

/** How long retrieve_future holds the SDK's poll before answering try_again (the SDK waits 45 s). */
export const HOLD_POLL_MS = 35_000;
/** How often a held poll asks the orchestrator again. */
const POLL_INTERVAL_MS = 100;

/** What retrieve_future answers: JSON, or protobuf bytes (forward_backward's result, when asked for). */
export type FutureAnswer = { json: unknown } | { protobuf: Uint8Array };

/**
 * The Tinker SDK's protocol over our training primitives: validates and decodes what the SDK
 * sends, hands sessions and calls to the training orchestrator, and answers futures in the
 * shapes (JSON or tinker_public protobuf) the SDK reads.
 */
@Injectable()
export class TinkerGatewayService {
  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
  ) {}

  /** Plain httpx (no pyqwest), uncompressed forward_backward bodies, no JWT exchange. */
  clientConfig(): ClientConfigResponse {
    return {
      use_pyqwest_transport: false,
      proto_compress_fwdbwd: false,
      parallel_fwdbwd_chunks: true,
      fwdbwd_max_chunk_len: 1024,
      fwdbwd_max_chunk_bytes_count: 5_000_000,
      pjwt_auth_enabled: false,
      sample_no_retries: false,
      create_model_via_load_weights: false,
    };
  }

  async capabilities(): Promise<GetServerCapabilitiesResponse> {
    const { base_models } = await this.rpc.request(Subjects.registry.listBaseModels, {});
    return { supported_models: base_models.filter((m) => m.unsupported === null).map((m) => ({ model_name: m.id })) };
  }

  createSession(scope: CallerScope, body: CreateSessionRequest): Promise<{ session_id: string }> {
    return this.rpc.request(Subjects.training.tinker.createSession, { ...scope, tags: body.tags, user_metadata: body.user_metadata, sdk_version: body.sdk_version ?? null });
  }

  async heartbeat(scope: CallerScope, sessionId: string): Promise<{ type: 'session_heartbeat' }> {
    await this.rpc.request(Subjects.training.tinker.heartbeat, { ...scope, session_id: sessionId });
    return { type: 'session_heartbeat' };
  }

  createModel(scope: CallerScope, body: CreateModelRequest): Promise<TinkerFutureReply> {
    const lora = body.lora_config ?? Object.assign(new LoraConfigBody(), { rank: 32 });
    if (!lora.train_attn && !lora.train_mlp) throw ServiceError.invalid('lora_config trains nothing: set train_attn or train_mlp', 'lora_config');
    const loraConfig: TinkerLoraConfig = { rank: lora.rank, seed: lora.seed ?? null, train_attn: lora.train_attn, train_mlp: lora.train_mlp, train_unembed: lora.train_unembed };
    return this.rpc.request(Subjects.training.tinker.createModel, { ...scope, session_id: body.session_id, model_seq_id: body.model_seq_id, base_model: body.base_model, lora_config: loraConfig });
  }

  /** POST forward_backward: the SDK's protobuf body, checked and queued as a forward or forward_backward call. */
  async forwardBackward(scope: CallerScope, body: unknown): Promise<TinkerFutureReply> {
    if (!(body instanceof Uint8Array)) throw ServiceError.invalid('forward_backward takes a tinker_public.ForwardBackwardRequest body with Content-Type: application/x-protobuf');
    let request;
    try {
      request = decodeForwardBackwardRequest(body);
    } catch (err) {
      if (err instanceof TinkerProtocolError) throw ServiceError.invalid(err.message);
      throw err;
    }
    if (!request.modelId) throw ServiceError.invalid('model_id is missing', 'model_id');
    if (request.seqId < 1) throw ServiceError.invalid(`seq_id must be 1 or more, got ${request.seqId}`, 'seq_id');
    if (!(TINKER_LOSS_FUNCTIONS as readonly string[]).includes(request.lossFn)) {
      throw ServiceError.invalid(`loss_fn ${JSON.stringify(request.lossFn)} is not one of ${TINKER_LOSS_FUNCTIONS.join(', ')}`, 'loss_fn');
    }
    if (request.data.length === 0) throw ServiceError.invalid('data is empty', 'data');
    const data: TinkerDatum[] = request.data.map((d, i) => {
      const T = d.modelInput.length;
      if (T === 0) throw ServiceError.invalid(`data[${i}].model_input has no tokens`, 'data');
      const targets = d.lossFnInputs.target_tokens;
      if (!targets) throw ServiceError.invalid(`data[${i}].loss_fn_inputs.target_tokens is missing`, 'data');
      for (const [name, t] of Object.entries(d.lossFnInputs)) {
        if (t.values.length !== T) throw ServiceError.invalid(`data[${i}].loss_fn_inputs.${name} has ${t.values.length} values for ${T} input tokens`, 'data');
      }
      return { model_input: d.modelInput, loss_fn_inputs: d.lossFnInputs };
    });
    const call: TinkerCall = { kind: request.forwardOnly ? 'forward' : 'forward_backward', loss_fn: request.lossFn, loss_fn_config: request.lossFnConfig, data };
    return this.submit(scope, request.modelId, request.seqId, call);
  }

  optimStep(scope: CallerScope, modelId: string, seqId: number, adam: AdamParamsBody): Promise<TinkerFutureReply> {
    return this.submit(scope, modelId, seqId, { kind: 'optim_step', adam_params: { ...adam } });
  }

  /** Without a name (save_weights_and_get_sampling_client), the weights are named after the call's seq_id. */
  saveWeightsForSampler(scope: CallerScope, body: SaveWeightsForSamplerRequest): Promise<TinkerFutureReply> {
    return this.submit(scope, body.model_id, body.seq_id, { kind: 'save_weights_for_sampler', name: body.path ?? `seq-${body.seq_id}` });
  }

  /** save_state: the adapter and Adam's state under tinker://<model_id>/weights/<name>. */
  saveWeights(scope: CallerScope, body: SaveWeightsRequest): Promise<TinkerFutureReply> {
    return this.submit(scope, body.model_id, body.seq_id, { kind: 'save_weights', name: body.path, overwrite: body.overwrite });
  }

  loadWeights(scope: CallerScope, body: LoadWeightsRequest): Promise<TinkerFutureReply> {
    return this.submit(scope, body.model_id, body.seq_id, { kind: 'load_weights', path: body.path, optimizer: body.optimizer });
  }

  /** create_sampling_session: a handle on the weights (samplingSessionId), checked to exist for the caller now. */
  async createSamplingSession(scope: CallerScope, body: CreateSamplingSessionRequest): Promise<{ sampling_session_id: string }> {
    return { sampling_session_id: samplingSessionId(await this.samplingTarget(scope, body)) };
  }

  /** asample: a future the orchestrator keeps, sampled through chat; its result is a SampleResponse. */
  async sample(scope: CallerScope, body: SampleRequest): Promise<TinkerFutureReply> {
    let model: string;
    if (body.sampling_session_id !== undefined) {
      const named = servingNameOfSamplingSession(body.sampling_session_id);
      if (named === null) throw ServiceError.invalid(`sampling_session_id ${JSON.stringify(body.sampling_session_id)} is not a sampling session of this service`, 'sampling_session_id');
      model = named;
    } else {
      model = await this.samplingTarget(scope, body);
    }
    const prompt_tokens = body.prompt.chunks.flatMap((c) => c.tokens);
    const params = body.sampling_params;
    return this.rpc.request(Subjects.training.tinker.sample, {
      ...scope,
      sample: {
        model,
        prompt_tokens,
        num_samples: body.num_samples,
        sampling_params: {
          max_tokens: params.max_tokens ?? null,
          temperature: params.temperature,
          top_k: params.top_k,
          top_p: params.top_p,
          // Chat takes a string, strings or token ids, and names what else is wrong.
          stop: (params.stop ?? []) as string[],
          seed: params.seed ?? null,
        },
        prompt_logprobs: body.prompt_logprobs ?? false,
        topk_prompt_logprobs: body.topk_prompt_logprobs,
      },
    });
  }

  /** The serving name of saved sampler weights (tinker:// path, resolved for the caller) or of a base model. */
  private async samplingTarget(scope: CallerScope, target: { model_path?: string; base_model?: string }): Promise<string> {
    if (target.model_path !== undefined) return (await this.rpc.request(Subjects.training.tinker.resolveSampler, { ...scope, path: target.model_path })).model;
    if (target.base_model !== undefined) return target.base_model;
    throw ServiceError.invalid('one of model_path (saved sampler weights) or base_model is required', 'model_path');
  }

  trainingRuns(scope: CallerScope, limit: number, offset: number): Promise<TinkerTrainingRunsReply> {
    return this.rpc.request(Subjects.training.tinker.listTrainingRuns, { ...scope, limit, offset });
  }

  trainingRun(scope: CallerScope, id: string): Promise<TinkerTrainingRunRecord> {
    return this.rpc.request(Subjects.training.tinker.getTrainingRun, { ...scope, training_run_id: id });
  }

  checkpoints(scope: CallerScope, id: string): Promise<TinkerCheckpointsReply> {
    return this.rpc.request(Subjects.training.tinker.listCheckpoints, { ...scope, training_run_id: id });
  }

  weightsInfo(scope: CallerScope, path: string): Promise<TinkerWeightsInfoReply> {
    return this.rpc.request(Subjects.training.tinker.weightsInfo, { ...scope, path });
  }

  /**
   * The future's result, holding the poll until it is done or HOLD_POLL_MS passed (then
   * try_again, which the SDK follows with another poll at once). `protobuf`: the client asked
   * for application/x-protobuf, which the SDK requires for forward_backward's result.
   */
  async retrieve(scope: CallerScope, requestId: string, protobuf: boolean, signal?: AbortSignal): Promise<FutureAnswer> {
    const deadline = Date.now() + HOLD_POLL_MS;
    for (;;) {
      const state = await this.rpc.request(Subjects.training.tinker.retrieve, { ...scope, request_id: requestId });
      if (state.state !== 'pending') return this.answer(state, protobuf);
      if (Date.now() >= deadline || signal?.aborted) {
        const tryAgain: TryAgainResponse = { type: 'try_again', request_id: requestId, queue_state: 'active' };
        return { json: tryAgain };
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
    }
  }

  private async answer(state: Exclude<TinkerFutureState, { state: 'pending' }>, protobuf: boolean): Promise<FutureAnswer> {
    if (state.state === 'failed') {
      const failed: RequestFailedResponse = { error: state.error, category: state.category };
      return { json: failed };
    }
    const result: TinkerResult = state.result ?? (await this.blobs.takeJson(state.result_blob!));
    switch (state.kind) {
      case 'forward':
      case 'forward_backward': {
        const output = result as TinkerForwardBackwardResult;
        if (protobuf) return { protobuf: encodeForwardBackwardOutput({ lossFnOutputs: output.loss_fn_outputs, metrics: output.metrics }) };
        const json: ForwardBackwardOutputJson = {
          loss_fn_output_type: 'ArrayRecord',
          loss_fn_outputs: output.loss_fn_outputs.map((o) => ({ logprobs: { data: o.logprobs, dtype: 'float32', shape: [o.logprobs.length] } })),
          metrics: output.metrics,
        };
        return { json };
      }
      case 'save_weights_for_sampler': {
        const { path, model } = result as TinkerSaveWeightsResult;
        // A sampling session on the saved weights, for save_weights_and_get_sampling_client.
        return { json: { path, sampling_session_id: samplingSessionId(model), type: 'save_weights_for_sampler' } };
      }
      case 'create_model':
        return { json: { ...result, type: 'create_model' } };
      case 'save_weights':
      case 'load_weights':
        return { json: { path: (result as TinkerStatePathResult).path, type: state.kind } };
      case 'optim_step':
        return { json: result };
      case 'sample': {
        const sampled = result as TinkerSampleResult;
        const response = {
          sequences: sampled.sequences.map((s) => ({ stopReason: s.stop_reason, tokens: s.tokens, logprobs: s.logprobs })),
          // The first prompt token has no logprob: NaN in the packed floats, as the SDK reads it (None).
          promptLogprobs: sampled.prompt_logprobs?.map((l) => l ?? Number.NaN) ?? null,
        };
        if (protobuf) return { protobuf: encodeSampleResponse(response) };
        return {
          json: {
            type: 'sample',
            sequences: sampled.sequences.map((s) => ({ stop_reason: s.stop_reason, tokens: s.tokens, logprobs: s.logprobs })),
            prompt_logprobs: sampled.prompt_logprobs,
            topk_prompt_logprobs: sampled.topk_prompt_logprobs,
          },
        };
      }
    }
  }

  private async submit(scope: CallerScope, modelId: string, seqId: number, call: TinkerCall): Promise<TinkerFutureReply> {
    // A forward_backward's data runs to megabytes: it travels to the orchestrator as a blob.
    return this.rpc.request(Subjects.training.tinker.submit, { ...scope, model_id: modelId, seq_id: seqId, call: await this.blobs.putJson(call) }, { timeoutMs: 30_000 });
  }
}
