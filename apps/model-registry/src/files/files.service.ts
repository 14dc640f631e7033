import { Inject, Injectable } from '@nestjs/common';
import {
  CreateFileRequest,
  DeleteFileReply,
  FileContentReply,
  FileRecord,
  FileRequest,
  ListFilesReply,
  ListFilesRequest,
  ServiceError,
} from '@trainyard/contracts';
import { ARTIFACT_STORE, ArtifactStore } from '@trainyard/artifacts';
import { BlobStore } from '@trainyard/messaging';
import { randomBytes } from 'node:crypto';
import { ArtifactSweeper } from '../artifacts/artifact-sweeper';
import { LegacyArtifactDirs } from '../artifacts/legacy-artifact-dirs';
import { artifactRef, digestOfRef } from '../common/artifact-ref';
import { FileRepository, FileRow } from './file.repository';

const FILE_ID = /^file-[A-Za-z0-9]{24}$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** OpenAI-style ids (`file-` and 24 letters or digits): safe as an artifact key segment too. */
function newFileId(): string {
  return `file-${Array.from(randomBytes(24), (b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

/**
 * Uploaded files (SFT datasets), owned by the uploading entity; their bytes are an object in
 * the artifact store (shared by identical uploads: deleting a file deletes its row, and the
 * sweep the object once no row refers to it).
 */
@Injectable()
export class FilesService {
  constructor(
    private readonly files: FileRepository,
    private readonly blobs: BlobStore,
    @Inject(ARTIFACT_STORE) private readonly store: ArtifactStore,
    private readonly legacy: LegacyArtifactDirs,
    private readonly sweeper: ArtifactSweeper,
  ) {}

  /** Bytes first, row after: a row always points at a complete object. */
  async create(request: CreateFileRequest): Promise<FileRecord> {
    const data = await this.blobs.take(request.content);
    const stored = await this.store.put(data);
    // Stored again if the sweep removed an identical, unreferenced upload meanwhile.
    const stillStored = async () => {
      if (!(await this.store.has(stored.sha256))) await this.store.put(data);
    };
    const row = await this.files.create(
      {
      id: newFileId(),
      entityId: request.entity_id,
      filename: request.filename,
      purpose: request.purpose,
      bytes: stored.bytes,
      sha256: stored.sha256,
        storagePath: artifactRef(stored.sha256),
      },
      stillStored,
    );
    return toFileRecord(row);
  }

  async list(request: ListFilesRequest): Promise<ListFilesReply> {
    const rows = await this.files.listForEntity(request.entity_id, request.purpose);
    return { object: 'list', data: rows.map(toFileRecord), has_more: false };
  }

  async get(request: FileRequest): Promise<FileRecord> {
    return toFileRecord(await this.getOwned(request));
  }

  /** The bytes travel back as a blob: a dataset is usually larger than one NATS message. */
  async content(request: FileRequest): Promise<FileContentReply> {
    const row = await this.getOwned(request);
    const digest = digestOfRef(row.storagePath);
    const content = await this.blobs.put(digest ? await this.store.get(digest) : await this.legacy.readFile(row.storagePath));
    return { file: toFileRecord(row), content };
  }

  async delete(request: FileRequest): Promise<DeleteFileReply> {
    const row = await this.getOwned(request);
    if (!(await this.files.delete(row.id))) throw notFound(request.file_id);
    const digest = digestOfRef(row.storagePath);
    // Deleting a file deletes its bytes, unless another row names the same content.
    if (digest) await this.sweeper.deleteIfUnreferenced(digest);
    else await this.legacy.remove(row.storagePath);
    return { id: row.id, object: 'file', deleted: true };
  }

  private async getOwned(request: FileRequest): Promise<FileRow> {
    const row = FILE_ID.test(request.file_id) ? await this.files.findOwned(request.entity_id, request.file_id) : null;
    if (!row) throw notFound(request.file_id);
    return row;
  }
}

function notFound(fileId: string): ServiceError {
  return ServiceError.notFound(`No such File object: ${fileId}`);
}

function toFileRecord(row: FileRow): FileRecord {
  return {
    id: row.id,
    object: 'file',
    bytes: row.bytes,
    created_at: Math.floor(row.createdAt.getTime() / 1000),
    filename: row.filename,
    purpose: row.purpose,
    status: 'processed',
  };
}
