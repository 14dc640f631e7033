import { IsOptional, Matches } from 'class-validator';

export class ListFilesQuery {
  /** A purpose as OpenAI names them (`fine-tune`, `batch`, ...): filtering by anything else finds nothing anyway. */
  @IsOptional()
  @Matches(/^[a-z_-]{1,64}$/, { message: 'purpose must be 1 to 64 lowercase letters, "_" or "-", such as fine-tune' })
  purpose?: string;
}
