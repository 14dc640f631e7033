import Ajv from 'ajv';
import { generate, GenerationParams } from '../../src/generate';
import { CompiledGrammar, GrammarBudgetError, GrammarError, JsonGrammarCompiler, ToolCallRequest, ToolSpec } from '../../src/grammar';
import { LoadedModel, loadModel } from '../../src/loader';
import { ToolCallStream, toolCallSyntax } from '../../src/tools';
import { makeTiny, useBackend } from '../helpers';

const TOOLS: ToolSpec[] = [
  {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 24 }, days: { type: 'integer', minimum: 1, maximum: 7 }, unit: { enum: ['C', 'F'] } },
      required: ['city', 'days', 'unit'],
      additionalProperties: false,
    },
  },
  {
    name: 'add',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
  { name: 'now' },
];
const ajv = new Ajv({ strict: false });
const validators = new Map(TOOLS.map((t) => [t.name, ajv.compile(t.parameters ?? { type: 'object', properties: {}, additionalProperties: false })]));

describe('tool-call grammars', () => {
  let lm: LoadedModel;
  let compiler: JsonGrammarCompiler;
  let prompt: number[];

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('tools'));
    compiler = await JsonGrammarCompiler.create(lm.tokenizer, lm.eosTokenIds);
    const tools = TOOLS.map((t) => ({ type: 'function', function: t }));
    prompt = lm.tokenizer.encode((lm.chatTemplate as NonNullable<LoadedModel['chatTemplate']>).render([{ role: 'user', content: 'Weather in Oslo?' }], { tools }));
  });
  afterAll(() => lm.dispose());

  const request = (calls: ToolCallRequest['calls'], extra: Partial<ToolCallRequest> = {}): ToolCallRequest => ({
    syntax: toolCallSyntax('hermes'),
    tools: TOOLS,
    calls,
    parallel: true,
    ...extra,
  });

  /** Generates under the grammar as the inference worker does, and parses the reply with a ToolCallStream. */
  async function reply(grammar: CompiledGrammar, params: GenerationParams & { maxTokens: number }, format: 'hermes' | 'llama3-json' = 'hermes') {
    const matcher = grammar.newMatcher(params.maxTokens);
    try {
      const mask = matcher.logitsProcessor();
      const bias = params.logitsProcessor;
      const out = await generate(lm, prompt, {
        ...params,
        logitsProcessor: (logits, generated) => {
          bias?.(logits, generated);
          mask(logits, generated);
        },
        // Without logprobs the worker keeps a drawn token the grammar accepts, without masking.
        quickCheck: params.logprobs === false && !bias ? matcher.quickCheck() : undefined,
      });
      const stream = new ToolCallStream(toolCallSyntax(format));
      stream.push(out.text);
      stream.end();
      return { ...out, ...stream.result(), opened: (out.text.match(/<tool_call>/g) ?? []).length };
    } finally {
      matcher.dispose();
    }
  }

  function expectValidCalls(calls: { function: { name: string; arguments: string } }[], names: string[]) {
    for (const call of calls) {
      expect(names).toContain(call.function.name);
      const validate = validators.get(call.function.name) as ReturnType<typeof ajv.compile>;
      const args = JSON.parse(call.function.arguments);
      expect({ call: call.function, valid: validate(args) }).toEqual({ call: call.function, valid: true });
    }
  }

  it('"required": every reply is one call or more of a declared function, arguments valid, no text (seeds x budgets)', async () => {
    const grammar = await compiler.compileToolCalls(request('required'));
    const names = new Set<string>();
    for (const maxTokens of [48, 96]) {
      for (let seed = 0; seed < 5; seed++) {
        const out = await reply(grammar, { maxTokens, temperature: 1, seed });
        expect(out.toolCalls.length).toBeGreaterThan(0);
        expect(out.content).toBeNull();
        expectValidCalls(out.toolCalls, ['get_weather', 'add', 'now']);
        out.toolCalls.forEach((c) => names.add(c.function.name));
      }
    }
    // The choice among functions is the model's, not always the first or the cheapest.
    expect(names.size).toBeGreaterThan(1);
  });

  it('without logprobs (a drawn token is only checked, not masked): arguments still parse and validate', async () => {
    const grammar = await compiler.compileToolCalls(request({ only: 'get_weather' }));
    for (let seed = 0; seed < 12; seed++) {
      const out = await reply(grammar, { maxTokens: 96, temperature: 1, seed, logprobs: false });
      expect(out.toolCalls.length).toBeGreaterThan(0);
      expectValidCalls(out.toolCalls, ['get_weather']);
    }
  });

  it('arguments hold only finite numbers, even from a model that loves digits and exponents', async () => {
    const grammar = await compiler.compileToolCalls(request({ only: 'add' }));
    const digitTokens = [...Array(lm.tokenizer.vocabSize).keys()].filter((id) => /^[0-9eE]+$/.test(lm.tokenizer.decode([id])));
    const loveDigits = (logits: Float32Array) => {
      for (const id of digitTokens) logits[id] += 30;
    };
    for (let seed = 0; seed < 4; seed++) {
      const out = await reply(grammar, { maxTokens: 160, temperature: 1, seed, logitsProcessor: loveDigits });
      expect(out.toolCalls.length).toBeGreaterThan(0);
      for (const call of out.toolCalls) {
        const { a, b } = JSON.parse(call.function.arguments) as { a: number; b: number };
        expect({ args: call.function.arguments, finite: Number.isFinite(a) && Number.isFinite(b) }).toEqual({ args: call.function.arguments, finite: true });
      }
    }
  });

  it('a named function: only calls of it, arguments valid', async () => {
    const grammar = await compiler.compileToolCalls(request({ only: 'get_weather' }));
    for (let seed = 0; seed < 4; seed++) {
      const out = await reply(grammar, { maxTokens: 80, temperature: 1, seed });
      expect(out.toolCalls.length).toBeGreaterThan(0);
      expectValidCalls(out.toolCalls, ['get_weather']);
    }
  });

  it('parallel: false makes exactly one call', async () => {
    const grammar = await compiler.compileToolCalls(request('required', { parallel: false }));
    for (let seed = 0; seed < 4; seed++) {
      const out = await reply(grammar, { maxTokens: 200, temperature: 1, seed });
      expect(out.toolCalls).toHaveLength(1);
      expect(out.opened).toBe(1);
    }
  });

  it('optional calls: free text, and a call the model starts is finished valid, even near the end of the budget', async () => {
    const grammar = await compiler.compileToolCalls(request('optional'));
    const plain = await reply(grammar, { maxTokens: 40, temperature: 1, seed: 1 });
    expect(plain.toolCalls).toEqual([]);
    expect(plain.content).toBe(plain.text);

    // Pushed, outside calls, towards the next piece of "<tool_call>", the model starts calls at every budget.
    const pieces = lm.tokenizer.encode('<tool_call>');
    const towardsCalls = (logits: Float32Array, generated: readonly number[]) => {
      const text = generated.length > 0 ? lm.tokenizer.decode([...generated]) : '';
      if (text.lastIndexOf('<tool_call>') > text.lastIndexOf('</tool_call>')) return;
      let next = 0;
      for (let j = pieces.length - 1; j > 0 && next === 0; j--) {
        if (generated.length >= j && pieces.slice(0, j).every((id, k) => generated[generated.length - j + k] === id)) next = j;
      }
      logits[pieces[next]] += 30;
    };
    let calls = 0;
    for (const maxTokens of [8, 20, 30, 45, 60, 90]) {
      for (let seed = 0; seed < 3; seed++) {
        const out = await reply(grammar, { maxTokens, temperature: 1, seed, logitsProcessor: towardsCalls });
        // Every call opened was finished: none cut off by the budget.
        expect({ text: out.text, calls: out.toolCalls.length }).toEqual({ text: out.text, calls: out.opened });
        expectValidCalls(out.toolCalls, ['get_weather', 'add', 'now']);
        calls += out.toolCalls.length;
      }
    }
    expect(calls).toBeGreaterThan(0);
  });

  it('writes the Llama 3 syntax for Llama 3 templates', async () => {
    const grammar = await compiler.compileToolCalls(request('required', { syntax: toolCallSyntax('llama3-json') }));
    for (let seed = 0; seed < 3; seed++) {
      const out = await reply(grammar, { maxTokens: 80, temperature: 1, seed }, 'llama3-json');
      expect(out.text.startsWith('{"name": "')).toBe(true);
      expect(out.toolCalls).toHaveLength(1);
      expectValidCalls(out.toolCalls, ['get_weather', 'add', 'now']);
    }
  });

  it('refuses a budget too small for one call', async () => {
    const grammar = await compiler.compileToolCalls(request({ only: 'get_weather' }));
    expect(() => grammar.newMatcher(4)).toThrow(GrammarBudgetError);
    expect(() => grammar.newMatcher(4)).toThrow(/^the smallest document needs at least \d+ tokens, but the budget is 4$/);
    expect(() => grammar.newMatcher(4)).toThrow(expect.objectContaining({ fault: { kind: 'budget', grammar: 'tool_calls' }, maxTokens: 4 }));
    // Optional calls may always answer in text.
    (await compiler.compileToolCalls(request('optional'))).newMatcher(1).dispose();
  });

  it('names the tool whose schema cannot be compiled, and a named function that is not declared', async () => {
    const bad = [...TOOLS, { name: 'broken', parameters: { type: 'object', properties: { x: { type: 'no-such-type' } } } }];
    await expect(compiler.compileToolCalls(request('required', { tools: bad }))).rejects.toMatchObject({
      name: 'GrammarError',
      fault: { kind: 'tool_parameters', index: 3 },
    });
    await expect(compiler.compileToolCalls(request({ only: 'missing' }))).rejects.toThrow(GrammarError);
    await expect(compiler.compileToolCalls(request({ only: 'missing' }))).rejects.toMatchObject({ fault: { kind: 'unknown_function' }, message: 'names "missing", which is not among the tools' });
  });
});
