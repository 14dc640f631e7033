import { Injectable } from '@nestjs/common';
import { CallerScope, ErrorCode, ServiceError, Subjects } from '@trainyard/contracts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { OrchestratorConfig } from '../config/orchestrator.config';

const FILE_ID = /^file-[A-Za-z0-9]+$/;

/**
 * The bytes behind an SFT job's training_data_url: an uploaded file id (`file-...`, also as
 * `file://file-...` or `openai://file-...`) read from the registry, or an http(s) URL fetched
 * with a size limit and a timeout.
 */
@Injectable()
export class TrainingDataSource {
  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    private readonly config: OrchestratorConfig,
  ) {}

  async read(scope: CallerScope, reference: string): Promise<string> {
    const fileId = reference.replace(/^(file|openai):\/\//, '');
    if (FILE_ID.test(fileId)) return this.readFile(scope, fileId);
    let url: URL;
    try {
      url = new URL(reference);
    } catch {
      throw invalid(`training_data_url "${reference}" is neither an uploaded file id (file-...) nor an http(s) URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw invalid(`training_data_url "${reference}": only uploaded file ids and http(s) URLs are supported`);
    }
    return this.fetchUrl(url);
  }

  private async readFile(scope: CallerScope, fileId: string): Promise<string> {
    const { file, content } = await this.rpc.request(Subjects.registry.getFileContent, { ...scope, file_id: fileId });
    if (file.bytes > this.config.SFT_DATA_MAX_BYTES) throw tooLarge(fileId, this.config.SFT_DATA_MAX_BYTES);
    return (await this.blobs.take(content)).toString('utf8');
  }

  private async fetchUrl(url: URL): Promise<string> {
    const limit = this.config.SFT_DATA_MAX_BYTES;
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(this.config.SFT_DATA_FETCH_TIMEOUT_MS), redirect: 'follow' });
    } catch (err) {
      const why = (err as Error).name === 'TimeoutError' ? 'timed out' : ((err as Error & { cause?: Error }).cause?.message ?? (err as Error).message);
      throw invalid(`training_data_url ${url.href} could not be fetched: ${why}`);
    }
    if (!res.ok) throw invalid(`training_data_url ${url.href} answered HTTP ${res.status}`);
    if (Number(res.headers.get('content-length') ?? 0) > limit) throw tooLarge(url.href, limit);
    const chunks: Buffer[] = [];
    let size = 0;
    const reader = res.body?.getReader();
    while (reader) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel();
        throw tooLarge(url.href, limit);
      }
      chunks.push(Buffer.from(value));
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

function invalid(message: string): ServiceError {
  return ServiceError.invalid(message, 'training_data_url');
}

function tooLarge(what: string, limit: number): ServiceError {
  return new ServiceError(ErrorCode.PayloadTooLarge, `training_data_url ${what} is larger than the ${limit} byte limit`, { param: 'training_data_url' });
}
