import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { ConversationRepository } from './conversation.repository';
import { Retention } from './retention';
import { StoredChatCompletionRepository } from './stored-chat-completion.repository';
import { StoredResponseRepository } from './stored-response.repository';

/** How often expired responses and conversations are deleted. Reads never see them meanwhile (they filter by the same cutoff). */
export const SWEEP_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Deletes stored responses, conversations and stored chat completions past
 * RESPONSE_RETENTION_DAYS, rows and items,
 * at start and every SWEEP_INTERVAL_MS. Replicas may sweep at once: deleting what is already
 * gone is harmless.
 */
@Injectable()
export class ExpiredStateSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ExpiredStateSweeper.name);
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly responses: StoredResponseRepository,
    private readonly conversations: ConversationRepository,
    private readonly completions: StoredChatCompletionRepository,
    private readonly retention: Retention,
  ) {}

  onApplicationBootstrap(): void {
    void this.sweepOnce();
    this.timer = setInterval(() => void this.sweepOnce(), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** Deletes what expired at `now`; returns how many responses, conversations and chat completions went. */
  async sweep(now = Date.now()): Promise<{ responses: number; conversations: number; completions: number }> {
    const cutoff = this.retention.cutoff(now);
    return {
      responses: await this.responses.deleteCreatedBefore(cutoff),
      conversations: await this.conversations.deleteUnchangedSince(cutoff),
      completions: await this.completions.deleteCreatedBefore(cutoff),
    };
  }

  private async sweepOnce(): Promise<void> {
    try {
      const swept = await this.sweep();
      if (swept.responses + swept.conversations + swept.completions > 0) {
        this.logger.log(`Deleted ${swept.responses} expired response(s), ${swept.conversations} conversation(s) and ${swept.completions} chat completion(s)`);
      }
    } catch (err) {
      // The database is down: the next sweep deletes what this one could not.
      this.logger.warn(`Sweep of expired responses failed: ${(err as Error).message}`);
    }
  }
}
