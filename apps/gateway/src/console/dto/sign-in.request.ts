import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

/** POST /console/api/session */
export class SignInRequest {
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  key!: string;
}
