import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ResolveModelReply, ResolveModelRequest, Subjects } from '@trainyard/contracts';
import { ModelResolverService } from './model-resolver.service';

@Controller()
export class ModelResolverController {
  constructor(private readonly resolver: ModelResolverService) {}

  @MessagePattern(Subjects.registry.resolveModel.name)
  resolve(@Payload() request: ResolveModelRequest): Promise<ResolveModelReply> {
    return this.resolver.resolve(request);
  }
}
