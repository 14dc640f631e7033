import { Controller } from '@nestjs/common';
import { EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import {
  CompletionEnded,
  CompletionLivenessReply,
  CompletionLivenessRequest,
  StartCompletionReply,
  StartCompletionRequest,
  Subjects,
} from '@trainyard/contracts';
import { CompletionsService } from './completions.service';
import { WorkerSignals } from './worker-signals';

/** How long the worker holding a completion gets to answer the gateway's liveness probe. */
const PROBE_TIMEOUT_MS = 1_000;

@Controller()
export class CompletionsController {
  constructor(
    private readonly completions: CompletionsService,
    private readonly workers: WorkerSignals,
  ) {}

  @MessagePattern(Subjects.chat.startCompletion.name)
  start(@Payload() request: StartCompletionRequest): Promise<StartCompletionReply> {
    return this.completions.start(request);
  }

  /** One chat replica (the queue group's) stops the generation of a completion its client left. */
  @EventPattern(Subjects.chat.completionEnded.name)
  ended(@Payload() ended: CompletionEnded): void {
    if (ended.cancel) this.workers.cancel(ended.completion_id);
  }

  @MessagePattern(Subjects.chat.completionLiveness.name)
  async liveness(@Payload() request: CompletionLivenessRequest): Promise<CompletionLivenessReply> {
    return { alive: await this.workers.alive(request.completion_id, PROBE_TIMEOUT_MS) };
  }
}
