import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { StartCompletionReply, StartCompletionRequest, Subjects } from '@trainyard/contracts';
import { CompletionsService } from './completions.service';

@Controller()
export class CompletionsController {
  constructor(private readonly completions: CompletionsService) {}

  @MessagePattern(Subjects.chat.startCompletion.name)
  start(@Payload() request: StartCompletionRequest): Promise<StartCompletionReply> {
    return this.completions.start(request);
  }
}
