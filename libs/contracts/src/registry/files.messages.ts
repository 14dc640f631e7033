import type { BlobRef } from './blob-ref';
import type { CallerScope } from './models.messages';

/** OpenAI's file object. */
export interface FileRecord {
  id: string;
  object: 'file';
  bytes: number;
  /** Unix seconds. */
  created_at: number;
  filename: string;
  purpose: string;
  status: 'processed';
}

export interface CreateFileRequest extends CallerScope {
  filename: string;
  purpose: string;
  content: BlobRef;
}

export interface FileRequest extends CallerScope {
  file_id: string;
}

export type ListFilesRequest = CallerScope & { purpose?: string };

export interface ListFilesReply {
  object: 'list';
  data: FileRecord[];
  has_more: false;
}

export interface FileContentReply {
  file: FileRecord;
  content: BlobRef;
}

export interface DeleteFileReply {
  id: string;
  object: 'file';
  deleted: true;
}
