import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import {
  ClaimTinkerCallReply,
  ClaimTinkerCallRequest,
  CompleteTinkerCallRequest,
  CreateTinkerModelRequest,
  CreateTinkerSessionRequest,
  ListTinkerTrainingRunsRequest,
  ResolveTinkerSamplerReply,
  ResolveTinkerSamplerRequest,
  RetrieveTinkerFutureRequest,
  Subjects,
  SubmitTinkerCallRequest,
  SubmitTinkerSampleRequest,
  TinkerFutureReply,
  TinkerFutureState,
  TinkerSessionReply,
  TinkerSessionRequest,
  StoreTinkerStateRequest,
  TinkerStateReply,
  TinkerCheckpointsReply,
  TinkerStateRequest,
  TinkerTrainingRunRecord,
  TinkerTrainingRunRequest,
  TinkerTrainingRunsReply,
  TinkerWeightsInfoReply,
} from '@trainyard/contracts';
import { TinkerCallsService } from './tinker-calls.service';
import { TinkerRunsService } from './tinker-runs.service';
import { TinkerSamplingService } from './tinker-sampling.service';
import { TinkerStatesService } from './tinker-states.service';
import { TinkerService } from './tinker.service';

@Controller()
export class TinkerController {
  constructor(
    private readonly tinker: TinkerService,
    private readonly calls: TinkerCallsService,
    private readonly sampling: TinkerSamplingService,
    private readonly runs: TinkerRunsService,
    private readonly states: TinkerStatesService,
  ) {}

  @MessagePattern(Subjects.training.tinker.listTrainingRuns.name)
  listTrainingRuns(@Payload() request: ListTinkerTrainingRunsRequest): Promise<TinkerTrainingRunsReply> {
    return this.runs.list(request);
  }

  @MessagePattern(Subjects.training.tinker.getTrainingRun.name)
  getTrainingRun(@Payload() request: TinkerTrainingRunRequest): Promise<TinkerTrainingRunRecord> {
    return this.runs.get(request);
  }

  @MessagePattern(Subjects.training.tinker.listCheckpoints.name)
  listCheckpoints(@Payload() request: TinkerTrainingRunRequest): Promise<TinkerCheckpointsReply> {
    return this.runs.checkpoints(request);
  }

  @MessagePattern(Subjects.training.tinker.resolveSampler.name)
  resolveSampler(@Payload() request: ResolveTinkerSamplerRequest): Promise<ResolveTinkerSamplerReply> {
    return this.sampling.resolveSampler(request);
  }

  @MessagePattern(Subjects.training.tinker.sample.name)
  sample(@Payload() request: SubmitTinkerSampleRequest): Promise<TinkerFutureReply> {
    return this.sampling.submit(request);
  }

  @MessagePattern(Subjects.training.tinker.createSession.name)
  createSession(@Payload() request: CreateTinkerSessionRequest): Promise<TinkerSessionReply> {
    return this.tinker.createSession(request);
  }

  @MessagePattern(Subjects.training.tinker.heartbeat.name)
  heartbeat(@Payload() request: TinkerSessionRequest): Promise<Record<string, never>> {
    return this.tinker.heartbeat(request);
  }

  @MessagePattern(Subjects.training.tinker.createModel.name)
  createModel(@Payload() request: CreateTinkerModelRequest): Promise<TinkerFutureReply> {
    return this.tinker.createModel(request);
  }

  @MessagePattern(Subjects.training.tinker.submit.name)
  submit(@Payload() request: SubmitTinkerCallRequest): Promise<TinkerFutureReply> {
    return this.tinker.submit(request);
  }

  @MessagePattern(Subjects.training.tinker.retrieve.name)
  retrieve(@Payload() request: RetrieveTinkerFutureRequest): Promise<TinkerFutureState> {
    return this.tinker.retrieve(request);
  }

  @MessagePattern(Subjects.training.tinker.claim.name)
  claim(@Payload() request: ClaimTinkerCallRequest): Promise<ClaimTinkerCallReply> {
    return this.calls.claim(request);
  }

  @MessagePattern(Subjects.training.tinker.complete.name)
  complete(@Payload() request: CompleteTinkerCallRequest): Promise<Record<string, never>> {
    return this.calls.complete(request);
  }

  @MessagePattern(Subjects.training.tinker.storeState.name)
  storeState(@Payload() request: StoreTinkerStateRequest): Promise<Record<string, never>> {
    return this.states.save(request);
  }

  @MessagePattern(Subjects.training.tinker.getState.name)
  getState(@Payload() request: TinkerStateRequest): Promise<TinkerStateReply> {
    return this.states.get(request);
  }

  @MessagePattern(Subjects.training.tinker.weightsInfo.name)
  weightsInfo(@Payload() request: TinkerStateRequest): Promise<TinkerWeightsInfoReply> {
    return this.states.weightsInfo(request);
  }
}
