import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { checkToolChoice, ToolChoiceInput } from './tool-choice';

const param = (i: number) => `tools[${i}].function.name`;

function refusal(names: string[], choice: ToolChoiceInput): { code: string; param: unknown; message: string } | null {
  try {
    checkToolChoice(names, choice, param);
    return null;
  } catch (err) {
    const e = err as ServiceError;
    return { code: e.code, param: e.details.param, message: e.message };
  }
}

describe('checkToolChoice', () => {
  it('accepts a mode or a declared function', () => {
    for (const choice of ['none', 'auto', 'required', { name: 'b' }] as ToolChoiceInput[]) expect(refusal(['a', 'b'], choice)).toBeNull();
    expect(refusal([], 'auto')).toBeNull();
    expect(refusal([], 'none')).toBeNull();
  });

  it('refuses a forced choice without tools and a function that is not declared, naming tool_choice', () => {
    expect(refusal([], 'required')).toMatchObject({ code: ErrorCode.InvalidRequest, param: 'tool_choice' });
    expect(refusal(['a'], { name: 'b' })).toMatchObject({ param: 'tool_choice', message: expect.stringContaining('"b"') });
  });

  it('refuses a name declared twice, naming the second', () => {
    expect(refusal(['a', 'b', 'a'], 'auto')).toMatchObject({ param: 'tools[2].function.name' });
  });
});
