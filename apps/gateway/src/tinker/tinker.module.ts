import { Module } from '@nestjs/common';
import { BlobStore } from '@trainyard/messaging';
import { TinkerController } from './tinker.controller';
import { TinkerGatewayService } from './tinker.service';

/** The Tinker SDK's protocol (`<service root>/api/v1/...`) over the training orchestrator's primitives. */
@Module({
  controllers: [TinkerController],
  providers: [BlobStore, TinkerGatewayService],
})
export class TinkerModule {}
