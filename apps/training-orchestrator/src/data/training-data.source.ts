import { Injectable, Logger } from '@nestjs/common';
import { BlobRef, CallerScope, ErrorCode, ServiceError, Subjects } from '@trainyard/contracts';
import { BlobStore, RpcClient } from '@trainyard/messaging';
import { OrchestratorConfig } from '../config/orchestrator.config';
import { OutboundFetch, OutboundFetchError, OutboundTooLarge } from './outbound-fetch';
import { parseWandbArtifactUrl, WandbArtifacts } from './wandb-artifacts';

const FILE_ID = /^file-[A-Za-z0-9]+$/;

/**
 * The bytes behind an SFT job's training_data_url: an uploaded file id (`file-...`, also as
 * `file://file-...` or `openai://file-...`) read from the registry, a
 * `wandb-artifact:///{entity}/{project}/{name}:{version}` downloaded from W&B, or an
 * http(s) URL. Whatever is fetched from the network goes through the outbound guard, with
 * a size limit and a time limit; a refused or failed fetch is one message that says
 * nothing about the target (the reason goes to the log).
 */
@Injectable()
export class TrainingDataSource {
  private readonly logger = new Logger(TrainingDataSource.name);

  constructor(
    private readonly rpc: RpcClient,
    private readonly blobs: BlobStore,
    private readonly config: OrchestratorConfig,
    private readonly outbound: OutboundFetch,
    private readonly wandb: WandbArtifacts,
  ) {}

  async read(scope: CallerScope, reference: string): Promise<string> {
    const fileId = reference.replace(/^(file|openai):\/\//, '');
    if (FILE_ID.test(fileId)) return this.readFile(scope, fileId);
    if (reference.startsWith('wandb-artifact:')) return this.readArtifact(reference);
    let url: URL;
    try {
      url = new URL(reference);
    } catch {
      throw invalid(`training_data_url ${shown(reference)} is neither an uploaded file id (file-...), a wandb-artifact:/// reference nor an http(s) URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw invalid(`training_data_url ${shown(reference)}: only uploaded file ids, wandb-artifact:/// references and http(s) URLs are supported`);
    }
    return this.guarded(reference, async () => (await this.outbound.fetch(url, { maxBytes: this.config.SFT_DATA_MAX_BYTES })).body);
  }

  /**
   * A file the caller uploaded with purpose fine-tune, named by `field` of a fine-tuning
   * request. A file that is not theirs is answered as one that does not exist.
   */
  async readUploadedFile(scope: CallerScope, fileId: string, field: string): Promise<string> {
    const missing = () => ServiceError.invalid(`${field} ${shown(fileId)} is not a file you uploaded (POST /v1/files, purpose "fine-tune")`, field);
    if (!FILE_ID.test(fileId)) throw missing();
    const { file, content } = await this.rpc.request(Subjects.registry.getFileContent, { ...scope, file_id: fileId }).catch((err: unknown) => {
      throw err instanceof ServiceError && err.code === ErrorCode.NotFound ? missing() : err;
    });
    // A refused file's blob is left to the bucket's TTL, as a too-large one is.
    if (file.purpose !== 'fine-tune') throw ServiceError.invalid(`${field} ${fileId} was uploaded with purpose "${file.purpose}"; fine-tuning takes files of purpose "fine-tune"`, field);
    return this.fileText(fileId, file.bytes, content, field);
  }

  private async readFile(scope: CallerScope, fileId: string): Promise<string> {
    const { file, content } = await this.rpc.request(Subjects.registry.getFileContent, { ...scope, file_id: fileId });
    return this.fileText(fileId, file.bytes, content, 'training_data_url');
  }

  private async fileText(fileId: string, bytes: number, content: BlobRef, field: string): Promise<string> {
    if (bytes > this.config.SFT_DATA_MAX_BYTES) throw tooLarge(fileId, this.config.SFT_DATA_MAX_BYTES, field);
    return (await this.blobs.take(content)).toString('utf8');
  }

  private readArtifact(reference: string): Promise<string> {
    const ref = parseWandbArtifactUrl(reference);
    if (!ref) throw invalid(`training_data_url ${shown(reference)} is not of the form wandb-artifact:///{entity}/{project}/{name}:{version}`);
    if (!this.wandb.configured) {
      throw invalid(
        'training_data_url is a W&B artifact, but this service has no W&B credentials: set WANDB_API_KEY (and WANDB_BASE_URL for a ' +
          'W&B Server) on the training orchestrator, or upload the JSONL with POST /v1/files and pass its file id',
      );
    }
    return this.guarded(reference, () => this.wandb.download(ref, this.config.SFT_DATA_MAX_BYTES));
  }

  private async guarded(reference: string, fetch: () => Promise<Buffer>): Promise<string> {
    try {
      return (await fetch()).toString('utf8');
    } catch (err) {
      if (err instanceof OutboundTooLarge) throw tooLarge(shown(reference), err.limit);
      if (!(err instanceof OutboundFetchError)) throw err;
      this.logger.warn(`training data ${shown(reference)} not fetched: ${err.reason}`);
      throw invalid(
        `training_data_url ${shown(reference)} could not be fetched. Only http(s) URLs at public addresses, or at hosts the operator ` +
          `allows (SFT_DATA_ALLOWED_HOSTS), that answer 2xx with the data within ${this.config.SFT_DATA_FETCH_TIMEOUT_MS} ms are fetched`,
      );
    }
  }
}

function shown(reference: string): string {
  return reference.length > 200 ? `${reference.slice(0, 200)}...` : reference;
}

function invalid(message: string): ServiceError {
  return ServiceError.invalid(message, 'training_data_url');
}

function tooLarge(what: string, limit: number, field = 'training_data_url'): ServiceError {
  return new ServiceError(ErrorCode.PayloadTooLarge, `${field} ${what} is larger than the ${limit} byte limit`, { param: field });
}
