import { Subjects } from '@trainyard/contracts';
import type { EventSubscription, MessageBus } from '@trainyard/messaging';
import type { GracefulShutdown } from '@trainyard/runtime';

/**
 * What the worker holds for each completion it took, from acceptance to release: a hold on
 * shutdown (which waits for it within the drain time), and an answer on the completion's
 * liveness subject, so that the gateway can tell a completion that is slow from one whose
 * worker is gone (no responders).
 */
export class CompletionHolds {
  private readonly held = new Map<string, { release: () => void; liveness: EventSubscription }>();

  constructor(
    private readonly bus: MessageBus,
    private readonly shutdown: GracefulShutdown,
  ) {}

  has(completionId: string): boolean {
    return this.held.has(completionId);
  }

  take(completionId: string): void {
    this.held.set(completionId, {
      release: this.shutdown.hold(),
      liveness: this.bus.answerProbes(Subjects.inference.completionAlive, { suffix: completionId }),
    });
  }

  release(completionId: string): void {
    const held = this.held.get(completionId);
    if (!held) return;
    this.held.delete(completionId);
    held.release();
    held.liveness.unsubscribe();
  }
}
