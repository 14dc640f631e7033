import { DynamicModule, Module } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { ArtifactsModule } from '@trainyard/artifacts/nest';
import { ServiceRuntimeModule } from '@trainyard/runtime';
import { BaseModelFiles } from './base-models/base-model-files';
import { CompletionsController } from './completions/completions.controller';
import { CompletionsService } from './completions/completions.service';
import { InferenceCapacity } from './completions/inference-capacity';
import { ModelResolutions } from './completions/model-resolutions';
import { PromptValidation } from './completions/prompt-validation';
import { SchemaValidation } from './completions/schema-validation';
import { WorkerSignals } from './completions/worker-signals';
import { ChatConfig } from './config/chat.config';
import { ResponseStateModule } from './stored-responses/response-state.module';
import { ModelLimitsCache } from './token-sampling/model-limits';
import { TokenSamplingController } from './token-sampling/token-sampling.controller';
import { TokenSamplingService } from './token-sampling/token-sampling.service';

/** Chat completions and token sampling: resolves the model, schedules on inference workers, relays the result; keeps the Responses API's state. */
@Module({})
export class ChatModule {
  static forRoot(config: ChatConfig): DynamicModule {
    return {
      module: ChatModule,
      imports: [
        ServiceRuntimeModule.forRoot({
          name: 'chat',
          config,
          healthSubject: Subjects.chat.healthCheck,
          workQueues: ['inference'],
        }),
        ResponseStateModule.forRoot(config),
        ArtifactsModule.forRoot(config),
      ],
      controllers: [CompletionsController, TokenSamplingController],
      providers: [{ provide: ChatConfig, useValue: config }, BaseModelFiles, CompletionsService, InferenceCapacity, ModelResolutions, PromptValidation, SchemaValidation, WorkerSignals, TokenSamplingService, ModelLimitsCache],
    };
  }
}
