import { Inject, Injectable } from '@nestjs/common';
import { ClientProxy, NatsRecordBuilder } from '@nestjs/microservices';
import { REQUEST_ID_HEADER, RpcSubject } from '@trainyard/contracts';
import { headers as natsHeaders } from 'nats';
import { firstValueFrom, timeout } from 'rxjs';
import { MESSAGING_OPTIONS, MessagingOptions, NATS_CLIENT } from './nats.tokens';
import { currentRequestId } from './request-context';
import { toServiceError } from './rpc-errors';

export interface RpcCallOptions {
  /** Carried in the `x-request-id` NATS header; defaults to the current request's. */
  requestId?: string;
  timeoutMs?: number;
}

/**
 * The one way feature code sends a request over NATS: typed by the subject's contract,
 * bounded by a timeout (Nest's ClientProxy.send has none), and failing only with coded
 * ServiceErrors.
 */
@Injectable()
export class RpcClient {
  constructor(
    @Inject(NATS_CLIENT) private readonly client: ClientProxy,
    @Inject(MESSAGING_OPTIONS) private readonly options: MessagingOptions,
  ) {}

  async request<Req, Res>(subject: RpcSubject<Req, Res>, payload: Req, call: RpcCallOptions = {}): Promise<Res> {
    const timeoutMs = call.timeoutMs ?? this.options.rpcTimeoutMs;
    const headers = natsHeaders();
    const requestId = call.requestId ?? currentRequestId();
    if (requestId) headers.set(REQUEST_ID_HEADER, requestId);
    const record = new NatsRecordBuilder(payload).setHeaders(headers).build();
    try {
      return await firstValueFrom(this.client.send<Res>(subject.name, record).pipe(timeout({ first: timeoutMs })));
    } catch (err) {
      throw toServiceError(err, subject.name, timeoutMs);
    }
  }
}
