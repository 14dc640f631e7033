import { IsBoolean, IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';
import { NAME_SEGMENT, NAME_SEGMENT_MESSAGE } from './name-segment';

/** POST /v1/preview/models */
export class CreateModelRequest {
  /** null or absent: the API key's own entity. */
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @IsString()
  entity: string | null = null;

  @Matches(NAME_SEGMENT, { message: NAME_SEGMENT_MESSAGE })
  project!: string;

  @Matches(NAME_SEGMENT, { message: NAME_SEGMENT_MESSAGE })
  name!: string;

  @IsString()
  @MaxLength(256)
  base_model!: string;

  @IsOptional()
  @IsBoolean()
  return_existing = false;
}
