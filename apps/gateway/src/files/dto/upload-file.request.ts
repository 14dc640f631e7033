import { IsIn } from 'class-validator';

/** The text fields of POST /v1/files (multipart); the file itself is the `file` part. */
export class UploadFileRequest {
  /** SFT datasets are the only files this service uses. */
  @IsIn(['fine-tune'])
  purpose!: string;
}
