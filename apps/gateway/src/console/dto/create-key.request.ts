import { Transform } from 'class-transformer';
import { IsString, Length } from 'class-validator';

/** POST /console/api/keys */
export class CreateKeyRequest {
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @Length(1, 100, { message: 'name must be 1 to 100 characters' })
  name!: string;
}
