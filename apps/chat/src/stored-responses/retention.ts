import { Inject, Injectable } from '@nestjs/common';
import { ChatConfig } from '../config/chat.config';

const DAY_MS = 24 * 60 * 60 * 1000;

/** RESPONSE_RETENTION_DAYS as a cutoff: what was created (or last changed) at or before it has expired. */
@Injectable()
export class Retention {
  constructor(@Inject(ChatConfig) private readonly config: ChatConfig) {}

  cutoff(now = Date.now()): Date {
    return new Date(now - this.config.RESPONSE_RETENTION_DAYS * DAY_MS);
  }
}
