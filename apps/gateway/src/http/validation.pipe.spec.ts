import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { Type } from 'class-transformer';
import { IsArray, IsInt, IsNumber, IsString, Max, Min, ValidateNested } from 'class-validator';
import { createValidationPipe } from './validation.pipe';

class Inner {
  @IsInt()
  @Min(0)
  step!: number;
}

class Body {
  @IsString()
  name!: string;

  @ValidateNested({ each: true })
  @Type(() => Inner)
  items!: Inner[];
}

class Ranged {
  @IsNumber()
  @Min(0)
  @Max(2)
  temperature!: number;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => Inner)
  items!: Inner[];
}

describe('validation pipe', () => {
  const pipe = createValidationPipe();
  const validate = (value: unknown) => pipe.transform(value, { type: 'body', metatype: Body });

  it('reports every problem with its location', async () => {
    const error: ServiceError = await validate({ name: 3, items: [{ step: 1 }, { step: -1 }] }).catch((e: ServiceError) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error.code).toBe(ErrorCode.ValidationFailed);
    expect(error.details.issues).toEqual([
      { loc: ['body', 'name'], msg: 'name must be a string', type: 'isString' },
      { loc: ['body', 'items', 1, 'step'], msg: 'step must not be less than 0', type: 'min' },
    ]);
  });

  it('reports one problem per field: what it is before its bounds', async () => {
    const error: ServiceError = await pipe
      .transform({ temperature: 'hot', items: 'none' }, { type: 'body', metatype: Ranged })
      .catch((e: ServiceError) => e);
    expect(error.details.issues).toEqual([
      { loc: ['body', 'temperature'], msg: 'temperature must be a number conforming to the specified constraints', type: 'isNumber' },
      { loc: ['body', 'items'], msg: 'items must be an array', type: 'isArray' },
    ]);
  });

  it('says when the problem is in the query string', async () => {
    const error: ServiceError = await pipe
      .transform({ items: [] }, { type: 'query', metatype: Body })
      .catch((e: ServiceError) => e);
    expect(error.details.issues?.[0].loc).toEqual(['query', 'name']);
  });

  it('strips unknown fields instead of rejecting them (SDKs send extras)', async () => {
    const value = await validate({ name: 'a', items: [], extra_body: { x: 1 } });
    expect(value).toEqual(Object.assign(new Body(), { name: 'a', items: [] }));
  });
});
