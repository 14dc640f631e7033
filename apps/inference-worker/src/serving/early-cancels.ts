/** Longer than any completion stays worth starting (the chat service's deadline). */
export const CANCEL_MEMORY_MS = 15 * 60_000;

/**
 * Completions cancelled before they decode on this worker: still queued (every worker hears
 * every cancel), or taken and still loading their weights. Such a completion is never started;
 * entries older than `memoryMs` are forgotten, as their work has expired by then.
 */
export class EarlyCancels {
  /** When each was cancelled, oldest first. */
  private readonly cancelledAt = new Map<string, number>();

  constructor(
    private readonly memoryMs = CANCEL_MEMORY_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.cancelledAt.size;
  }

  remember(completionId: string): void {
    const now = this.now();
    // Re-inserted, so that the map stays in the order of the times it holds.
    this.cancelledAt.delete(completionId);
    this.cancelledAt.set(completionId, now);
    for (const [id, at] of this.cancelledAt) {
      if (now - at < this.memoryMs) break;
      this.cancelledAt.delete(id);
    }
  }

  /** Whether the completion was cancelled (then forgotten: one cancel stops one start). */
  take(completionId: string): boolean {
    return this.cancelledAt.delete(completionId);
  }
}
