import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { TinkerCheckpointsReply, TinkerFutureReply, TinkerTrainingRunRecord, TinkerTrainingRunsReply, TinkerWeightsInfoReply } from '@trainyard/contracts';
import type { ClientConfigResponse, ClientDynamicConfigResponse, GetServerCapabilitiesResponse } from '@trainyard/tinker';
import type { Request, Response } from 'express';
import { Caller, CallerParam } from '../auth/caller';
import { scopeOf } from '../registry/caller-scope';
import {
  ClientConfigRequest,
  CreateModelRequest,
  CreateSamplingSessionRequest,
  CreateSessionRequest,
  ListTrainingRunsQuery,
  LoadWeightsRequest,
  OptimStepRequest,
  RetrieveFutureRequest,
  SampleRequest,
  SaveWeightsForSamplerRequest,
  SaveWeightsRequest,
  SessionHeartbeatRequest,
  WeightsInfoRequest,
} from './dto/tinker.requests';
import { TinkerGatewayService } from './tinker.service';

const PROTOBUF = 'application/x-protobuf';

/**
 * The Tinker SDK's routes, at `<service root>/api/v1/...` (docs/tinker.md): point the SDK's
 * base_url at the service root and use `tml-<our key>` as its key.
 */
@Controller('api/v1')
export class TinkerController {
  constructor(private readonly tinker: TinkerGatewayService) {}

  /** RestClient.list_training_runs: the key's training clients, newest first. */
  @Get('training_runs')
  trainingRuns(@CallerParam() caller: Caller, @Query() query: ListTrainingRunsQuery): Promise<TinkerTrainingRunsReply> {
    return this.tinker.trainingRuns(scopeOf(caller), query.limit, query.offset);
  }

  /** RestClient.get_training_run (and get_training_run_by_tinker_path). */
  @Get('training_runs/:training_run_id')
  trainingRun(@CallerParam() caller: Caller, @Param('training_run_id') id: string): Promise<TinkerTrainingRunRecord> {
    return this.tinker.trainingRun(scopeOf(caller), id);
  }

  /** RestClient.list_checkpoints: the run's sampler weights and saved states, oldest first. */
  @Get('training_runs/:training_run_id/checkpoints')
  checkpoints(@CallerParam() caller: Caller, @Param('training_run_id') id: string): Promise<TinkerCheckpointsReply> {
    return this.tinker.checkpoints(scopeOf(caller), id);
  }

  @Post('client/config')
  @HttpCode(200)
  clientConfig(@Body() _body: ClientConfigRequest): ClientConfigResponse {
    return this.tinker.clientConfig();
  }

  @Post('client/dynamic_config')
  @HttpCode(200)
  dynamicConfig(@Body() _body: ClientConfigRequest): ClientDynamicConfigResponse {
    return { refresh_interval_sec: 300 };
  }

  @Get('get_server_capabilities')
  capabilities(): Promise<GetServerCapabilitiesResponse> {
    return this.tinker.capabilities();
  }

  @Post('create_session')
  @HttpCode(200)
  createSession(@CallerParam() caller: Caller, @Body() body: CreateSessionRequest): Promise<{ session_id: string }> {
    return this.tinker.createSession(scopeOf(caller), body);
  }

  @Post('session_heartbeat')
  @HttpCode(200)
  heartbeat(@CallerParam() caller: Caller, @Body() body: SessionHeartbeatRequest): Promise<{ type: 'session_heartbeat' }> {
    return this.tinker.heartbeat(scopeOf(caller), body.session_id);
  }

  /** The SDK's usage telemetry: accepted, not kept. */
  @Post('telemetry')
  @HttpCode(200)
  telemetry(): { status: 'accepted' } {
    return { status: 'accepted' };
  }

  @Post('create_model')
  @HttpCode(200)
  createModel(@CallerParam() caller: Caller, @Body() body: CreateModelRequest): Promise<TinkerFutureReply> {
    return this.tinker.createModel(scopeOf(caller), body);
  }

  /** forward_backward and forward (forward_only): a protobuf body. */
  @Post('forward_backward')
  @HttpCode(200)
  forwardBackward(@CallerParam() caller: Caller, @Req() req: Request): Promise<TinkerFutureReply> {
    return this.tinker.forwardBackward(scopeOf(caller), req.body);
  }

  @Post('optim_step')
  @HttpCode(200)
  optimStep(@CallerParam() caller: Caller, @Body() body: OptimStepRequest): Promise<TinkerFutureReply> {
    return this.tinker.optimStep(scopeOf(caller), body.model_id, body.seq_id, body.adam_params);
  }

  @Post('save_weights_for_sampler')
  @HttpCode(200)
  saveWeightsForSampler(@CallerParam() caller: Caller, @Body() body: SaveWeightsForSamplerRequest): Promise<TinkerFutureReply> {
    return this.tinker.saveWeightsForSampler(scopeOf(caller), body);
  }

  /** save_state */
  @Post('save_weights')
  @HttpCode(200)
  saveWeights(@CallerParam() caller: Caller, @Body() body: SaveWeightsRequest): Promise<TinkerFutureReply> {
    return this.tinker.saveWeights(scopeOf(caller), body);
  }

  /** load_state, load_state_with_optimizer */
  @Post('load_weights')
  @HttpCode(200)
  loadWeights(@CallerParam() caller: Caller, @Body() body: LoadWeightsRequest): Promise<TinkerFutureReply> {
    return this.tinker.loadWeights(scopeOf(caller), body);
  }

  @Post('create_sampling_session')
  @HttpCode(200)
  createSamplingSession(@CallerParam() caller: Caller, @Body() body: CreateSamplingSessionRequest): Promise<{ sampling_session_id: string }> {
    return this.tinker.createSamplingSession(scopeOf(caller), body);
  }

  /** A future whose result (retrieve_future) is a tinker_public.SampleResponse. */
  @Post('asample')
  @HttpCode(200)
  sample(@CallerParam() caller: Caller, @Body() body: SampleRequest): Promise<TinkerFutureReply> {
    return this.tinker.sample(scopeOf(caller), body);
  }

  /** create_training_client_from_state asks it first: the saved state's base model and LoRA settings. */
  @Post('weights_info')
  @HttpCode(200)
  weightsInfo(@CallerParam() caller: Caller, @Body() body: WeightsInfoRequest): Promise<TinkerWeightsInfoReply> {
    return this.tinker.weightsInfo(scopeOf(caller), body.tinker_path);
  }

  /** Held until the future is done (or try_again); forward_backward's result as protobuf when the SDK asks for it. */
  @Post('retrieve_future')
  @HttpCode(200)
  async retrieveFuture(
    @CallerParam() caller: Caller,
    @Body() body: RetrieveFutureRequest,
    @Headers('accept') accept: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const answer = await this.tinker.retrieve(scopeOf(caller), body.request_id, (accept ?? '').includes(PROTOBUF), gone.signal);
    if ('protobuf' in answer) res.status(200).type(PROTOBUF).send(Buffer.from(answer.protobuf));
    else res.status(200).json(answer.json);
  }
}
