import { Inject, Injectable } from '@nestjs/common';
import { CancelCompletion, COMPLETION_LIVENESS_PREFIX, Subjects } from '@trainyard/contracts';
import { NATS_CONNECTION } from '@trainyard/messaging';
import { ErrorCode as NatsErrorCode, JSONCodec, NatsConnection, NatsError } from 'nats';

const cancellations = JSONCodec<CancelCompletion>();

/**
 * What chat says to and asks of the inference worker holding a completion: chat schedules
 * completions on workers, so it alone knows their subjects (the gateway asks chat).
 */
@Injectable()
export class WorkerSignals {
  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  /** Stops the completion's generation at its worker's next step (or before it starts). */
  cancel(completionId: string): void {
    this.nc.publish(Subjects.inference.cancel.name, cancellations.encode({ completion_id: completionId }));
  }

  /** true: a worker holds the completion; false: none does; null: no answer within `timeoutMs`. */
  async alive(completionId: string, timeoutMs: number): Promise<boolean | null> {
    try {
      await this.nc.request(`${COMPLETION_LIVENESS_PREFIX}.${completionId}`, undefined, { timeout: timeoutMs });
      return true;
    } catch (err) {
      return (err as NatsError).code === NatsErrorCode.NoResponders ? false : null;
    }
  }
}
