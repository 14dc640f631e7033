import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { SampleTokensReply, SampleTokensRequest, Subjects } from '@trainyard/contracts';
import { TokenSamplingService } from './token-sampling.service';

@Controller()
export class TokenSamplingController {
  constructor(private readonly sampling: TokenSamplingService) {}

  @MessagePattern(Subjects.chat.sampleTokens.name)
  sample(@Payload() request: SampleTokensRequest): Promise<SampleTokensReply> {
    return this.sampling.sample(request);
  }
}
