import { IsOptional, IsString } from 'class-validator';

export class ListFilesQuery {
  @IsOptional()
  @IsString()
  purpose?: string;
}
