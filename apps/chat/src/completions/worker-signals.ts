import { Injectable } from '@nestjs/common';
import { Subjects } from '@trainyard/contracts';
import { MessageBus } from '@trainyard/messaging';

/**
 * What chat says to and asks of the inference worker holding a completion: chat schedules
 * completions on workers, so it alone knows their subjects (the gateway asks chat).
 */
@Injectable()
export class WorkerSignals {
  constructor(private readonly bus: MessageBus) {}

  /** Stops the completion's generation at its worker's next step (or before it starts). */
  cancel(completionId: string): void {
    this.bus.publish(Subjects.inference.cancel, { completion_id: completionId });
  }

  /** true: a worker holds the completion; false: none does; null: no answer within `timeoutMs`. */
  alive(completionId: string, timeoutMs: number): Promise<boolean | null> {
    return this.bus.probe(Subjects.inference.completionAlive, { suffix: completionId, timeoutMs });
  }
}
