import Ajv from 'ajv';
import { GenerationParams, generate } from '../../src/generate';
import { CompiledGrammar, GrammarBudgetError, GrammarError, GrammarSpec, JsonGrammarCompiler } from '../../src/grammar';
import { ByteVocabulary } from '../../src/grammar/byte-vocabulary';
import { bytesToUnicode } from '../../src/maker/bpe';
import { LoadedModel, loadModel } from '../../src/loader';
import { makeTiny, useBackend } from '../helpers';

/** Schemas the model must satisfy; each names its required keys so a cut-off shows. */
const SCHEMAS: Record<string, Record<string, unknown>> = {
  person: {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 }, tags: { type: 'array', items: { type: 'string' } } },
    required: ['name', 'age'],
    additionalProperties: false,
  },
  nested: {
    type: 'object',
    properties: {
      ok: { type: 'boolean' },
      point: { type: 'object', properties: { x: { type: 'number' }, y: { type: 'number' } }, required: ['x', 'y'] },
      color: { enum: ['red', 'green', 'blue'] },
    },
    required: ['ok', 'point', 'color'],
  },
  list: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] }, minItems: 1 },
};
const ajv = new Ajv({ strict: false });
const schemaFormat = (name: string): GrammarSpec => ({ kind: 'schema', schema: SCHEMAS[name], strict: true });
const PROMPTS = ['Give me a JSON object.', 'Describe a person.', 'Where is the point?', 'List the ids.'];

describe('JSON grammar', () => {
  let lm: LoadedModel;
  let compiler: JsonGrammarCompiler;

  beforeAll(async () => {
    await useBackend('wasm');
    lm = await loadModel(makeTiny('grammar'));
    compiler = await JsonGrammarCompiler.create(lm.tokenizer, lm.eosTokenIds);
  });
  afterAll(() => lm.dispose());

  const promptIds = (text: string) =>
    lm.tokenizer.encode((lm.chatTemplate as NonNullable<LoadedModel['chatTemplate']>).render([{ role: 'user', content: text }]));

  /** Generates with the grammar's mask, as the inference worker would, and checks the matcher agrees. */
  async function generateJson(grammar: CompiledGrammar, prompt: string, params: GenerationParams & { maxTokens: number }) {
    const matcher = grammar.newMatcher(params.maxTokens);
    try {
      const logitsProcessor = matcher.logitsProcessor();
      const bias = params.logitsProcessor;
      const result = await generate(lm, promptIds(prompt), {
        ...params,
        logitsProcessor: (logits, generated) => {
          bias?.(logits, generated);
          logitsProcessor(logits, generated);
        },
        documentComplete: matcher.completeCheck(),
      });
      matcher.catchUp(result.tokenIds);
      return { ...result, complete: matcher.isComplete() };
    } finally {
      matcher.dispose();
    }
  }

  it('hands xgrammar the byte-level vocabulary in id order, special tokens blanked', () => {
    const vocab = new ByteVocabulary(lm.tokenizer);
    expect(vocab.size).toBe(lm.tokenizer.vocabSize);
    for (const special of ['<|endoftext|>', '<|im_start|>', '<|im_end|>']) expect(vocab.encoded[lm.tokenizer.tokenToId(special) as number]).toBe('');
    // Every byte that can occur in UTF-8 text has its token; C0, C1 and F5-FF are never allowed.
    const neverInUtf8 = (b: number) => b === 0xc0 || b === 0xc1 || b >= 0xf5;
    expect([...vocab.byteTokenIds].map((id, b) => id >= 0 || neverInUtf8(b))).toEqual(new Array(256).fill(true));
    expect(vocab.encoded[vocab.byteTokenIds[0xc2]]).not.toBe('');
    expect(vocab.encoded[lm.tokenizer.tokenToId(bytesToUnicode()[0xc1]) as number]).toBe('');
    const word = lm.tokenizer.encode(' temperature')[0];
    expect(vocab.encoded[word]).toBe(lm.tokenizer.idToToken(word));
    expect(Buffer.from(vocab.bytes(word)).toString('utf8')).toBe(lm.tokenizer.decode([word]));
  });

  it('starts with an object and keeps special tokens and end-of-sequence out of it', async () => {
    const grammar = (await compiler.compile({ kind: 'any_object' }));
    const matcher = grammar.newMatcher(100);
    const allowed = (logits: Float32Array) => [...logits.keys()].filter((id) => logits[id] > -Infinity);
    const vocab = new ByteVocabulary(lm.tokenizer);

    const first = allowed(matcher.mask(new Float32Array(lm.tokenizer.vocabSize), 100));
    expect(first.length).toBeGreaterThan(0);
    for (const id of first) expect(String.fromCharCode(vocab.bytes(id)[0])).toBe('{');

    for (const id of lm.tokenizer.encode('{"na')) matcher.accept(id);
    const inString = allowed(matcher.mask(new Float32Array(lm.tokenizer.vocabSize), 100));
    expect(inString).toContain(lm.tokenizer.encode('me')[0]);
    for (const special of [0, 1, 2]) expect(inString).not.toContain(special);
    expect(matcher.isComplete()).toBe(false);

    for (const id of lm.tokenizer.encode('me": 1}')) matcher.accept(id);
    expect(matcher.isComplete()).toBe(true);
    expect(allowed(matcher.mask(new Float32Array(lm.tokenizer.vocabSize), 100))).toEqual(lm.eosTokenIds);
    matcher.dispose();
  });

  it('samples JSON objects that always parse (temperature 1, prompts x seeds)', async () => {
    const grammar = (await compiler.compile({ kind: 'any_object' }));
    for (const prompt of PROMPTS) {
      for (let seed = 0; seed < 4; seed++) {
        const out = await generateJson(grammar, prompt, { maxTokens: 48, temperature: 1, seed });
        expect(out.complete).toBe(true);
        const value = JSON.parse(out.text);
        expect(typeof value === 'object' && value !== null && !Array.isArray(value)).toBe(true);
      }
    }
  });

  it.each(Object.keys(SCHEMAS))('samples output valid against the %s schema', async (name) => {
    const grammar = (await compiler.compile(schemaFormat(name)));
    const validate = ajv.compile(SCHEMAS[name]);
    for (let seed = 0; seed < 6; seed++) {
      const out = await generateJson(grammar, PROMPTS[seed % PROMPTS.length], { maxTokens: 64, temperature: 1, seed });
      const value = JSON.parse(out.text);
      expect({ text: out.text, valid: validate(value) }).toEqual({ text: out.text, valid: true });
    }
  });

  it('keeps raw control characters out of strings with a maxLength, which JSON forbids unescaped', async () => {
    const schema = { type: 'object', properties: { s: { type: 'string', maxLength: 12 } }, required: ['s'] };
    const grammar = (await compiler.compile({ kind: 'schema', schema, strict: true }));
    for (let seed = 0; seed < 12; seed++) {
      const matcher = grammar.newMatcher(40);
      // Without logprobs a drawn token is only checked against the grammar, not masked.
      const out = await generate(lm, promptIds(PROMPTS[seed % PROMPTS.length]), {
        maxTokens: 40,
        temperature: 1,
        seed,
        logprobs: false,
        logitsProcessor: matcher.logitsProcessor(),
        quickCheck: matcher.quickCheck(),
      });
      matcher.dispose();
      expect([...JSON.parse(out.text).s].length).toBeLessThanOrEqual(12); // code points, as JSON Schema counts
    }
  });

  describe('without logprobs: a drawn token the grammar allows is kept without masking the vocabulary', () => {
    /** JSON generation as the inference worker runs it without logprobs; counts the full masks. */
    async function generateQuick(grammar: CompiledGrammar, prompt: string, params: GenerationParams & { maxTokens: number }) {
      const matcher = grammar.newMatcher(params.maxTokens);
      try {
        const mask = matcher.logitsProcessor();
        let masks = 0;
        const result = await generate(lm, promptIds(prompt), {
          ...params,
          logprobs: false,
          quickCheck: matcher.quickCheck(),
          logitsProcessor: (logits, generated) => {
            masks++;
            mask(logits, generated);
          },
        });
        return { ...result, masks };
      } finally {
        matcher.dispose();
      }
    }

    /** What the quick check says of every token of the vocabulary after `prefix`, and whether it says it may allow any (quickCheckApplies), next to what the mask allows. */
    function bothViews(grammar: CompiledGrammar, maxTokens: number, prefix: number[]) {
      const matcher = grammar.newMatcher(maxTokens);
      try {
        // As in generation: the mask ran for the first token (the check relies on its bound).
        matcher.mask(new Float32Array(lm.config.vocabSize), maxTokens);
        matcher.catchUp(prefix);
        const quick = matcher.quickCheck();
        const vouched = Array.from({ length: lm.config.vocabSize }, (_, id) => quick(id, prefix));
        const applies = matcher.quickCheckApplies()(prefix);
        const allowed = Array.from(matcher.mask(new Float32Array(lm.config.vocabSize), maxTokens - prefix.length), (v) => v !== -Infinity);
        return { vouched, applies, allowed };
      } finally {
        matcher.dispose();
      }
    }

    it.each(Object.keys(SCHEMAS))('vouches for exactly the tokens the mask allows far from the end, and for none near it (%s)', async (name) => {
      const grammar = (await compiler.compile(schemaFormat(name)));
      const text = (await generateJson(grammar, PROMPTS[0], { maxTokens: 160, temperature: 1, seed: 5 })).tokenIds;
      let far = 0;
      for (const k of [1, 2, 4, 8, 16]) {
        // A budget large against this schema's smallest document, so the start is far from the end.
        const { vouched, applies, allowed } = bothViews(grammar, 1024, text.slice(0, Math.min(k, text.length - 1)));
        vouched.forEach((ok, id) => ok && expect(allowed[id]).toBe(true));
        // It says beforehand whether it vouches for any token.
        expect(applies).toBe(vouched.some(Boolean));
        // Far enough from the end it vouches for the whole set at once; else for nothing.
        if (vouched.some(Boolean)) {
          expect(vouched).toEqual(allowed);
          far++;
        }
      }
      expect(far).toBeGreaterThan(0);
      let minimal = 0;
      try {
        grammar.newMatcher(0).dispose();
      } catch (err) {
        minimal = (err as GrammarBudgetError).minTokens;
      }
      const near = bothViews(grammar, minimal + 2, text.slice(0, 1));
      expect(near.vouched.some(Boolean)).toBe(false);
      expect(near.applies).toBe(false);
      expect(near.allowed.some(Boolean)).toBe(true);
    });

    it.each(Object.keys(SCHEMAS))('greedy: the same tokens as with every mask (%s)', async (name) => {
      const grammar = (await compiler.compile(schemaFormat(name)));
      for (const maxTokens of [160, 48]) {
        for (const prompt of PROMPTS) {
          const full = await generateJson(grammar, prompt, { maxTokens, temperature: 0 });
          const quick = await generateQuick(grammar, prompt, { maxTokens, temperature: 0 });
          expect(quick.tokenIds).toEqual(full.tokenIds);
        }
      }
    });

    it.each(Object.keys(SCHEMAS))('sampled: output valid against the %s schema', async (name) => {
      const grammar = (await compiler.compile(schemaFormat(name)));
      const validate = ajv.compile(SCHEMAS[name]);
      for (let seed = 0; seed < 6; seed++) {
        const out = await generateQuick(grammar, PROMPTS[seed % PROMPTS.length], { maxTokens: 64, temperature: 1, seed });
        const value = JSON.parse(out.text);
        expect({ text: out.text, valid: validate(value) }).toEqual({ text: out.text, valid: true });
        expect(out.tokens.every((t) => Number.isNaN(t.logprob))).toBe(true);
      }
    });
  });

  // Below the smallest document's length nothing can fit; from there on the output must parse.
  // The largest budgets start far enough from the end that the closing walk is skipped (on a
  // bound of its cost) for the first tokens, and must still close in time later.
  it.each([
    ['json_object', '{}', [5, 8, 12, 160]],
    ['list', '[{"id": 0}]', [0, 3, 8, 160]],
    ['person', '{"name": "", "age": 0}', [0, 2, 6]],
    ['nested', '{"ok": true, "point": {"x": 0, "y": 0}, "color": "blue"}', [0, 4]],
  ] as [string, string, number[]][])('closes %s in time when max_tokens runs out', async (name, smallest, budgets) => {
    const format: GrammarSpec = name === 'json_object' ? { kind: 'any_object' } : schemaFormat(name);
    const grammar = (await compiler.compile(format));
    const floor = name === 'json_object' ? 0 : lm.tokenizer.encode(smallest).length;
    for (const extra of budgets) {
      const maxTokens = floor + extra;
      for (let seed = 0; seed < 4; seed++) {
        const out = await generateJson(grammar, 'Answer in JSON.', { maxTokens, temperature: 1, seed });
        expect(out.tokens.length).toBeLessThanOrEqual(maxTokens);
        expect(out.complete).toBe(true);
        const value = JSON.parse(out.text);
        if (format.kind === 'schema') expect(ajv.validate(SCHEMAS[name], value)).toBe(true);
      }
    }
  });

  it('reports a document the grammar closed on the last token of the budget as stop, not length', async () => {
    const grammar = (await compiler.compile(schemaFormat('person')));
    const maxTokens = lm.tokenizer.encode('{"name": "", "age": 0}').length + 2;
    let closedAtBudget = 0;
    for (let seed = 0; seed < 6; seed++) {
      const out = await generateJson(grammar, 'Answer in JSON.', { maxTokens, temperature: 1, seed });
      expect(out.complete).toBe(true);
      expect(ajv.validate(SCHEMAS.person, JSON.parse(out.text))).toBe(true);
      expect(out.finishReason).toBe('stop');
      // The budget ran out on the token that closed the document (no room for end-of-sequence).
      if (out.tokens.length === maxTokens && !lm.eosTokenIds.includes(out.tokenIds[maxTokens - 1])) closedAtBudget++;
    }
    expect(closedAtBudget).toBeGreaterThan(0);
    // Without a grammar the same budget cuts the text, and says so.
    const free = await generate(lm, promptIds('Answer in JSON.'), { maxTokens, temperature: 1, seed: 0, ignoreEos: true });
    expect(free.finishReason).toBe('length');
  });

  it('closes in time a model that would write one string forever, from far and near the end', async () => {
    const grammar = (await compiler.compile({ kind: 'any_object' }));
    const vocab = new ByteVocabulary(lm.tokenizer);
    const letters = [...Array(vocab.size).keys()].filter((id) => vocab.bytes(id).length > 0 && [...vocab.bytes(id)].every((b) => b >= 0x61 && b <= 0x7a));
    const quote = vocab.byteTokenIds[0x22];
    // Open a key, then never close it: only the budget can end this text.
    const endlessString = (logits: Float32Array) => {
      logits[quote] += 20;
      for (const id of letters) logits[id] += 40;
    };
    for (const maxTokens of [24, 160]) {
      const out = await generateJson(grammar, 'Answer in JSON.', { maxTokens, temperature: 0, logitsProcessor: endlessString });
      expect(out.tokens.length).toBe(maxTokens);
      // Closed in time by the grammar: a complete document, so not reported as cut off.
      expect(out.finishReason).toBe('stop');
      expect(out.complete).toBe(true);
      expect(Object.keys(JSON.parse(out.text))[0].length).toBeGreaterThan(maxTokens / 4);
    }
  });

  it('does not let a model that loves whitespace run away', async () => {
    const grammar = (await compiler.compile({ kind: 'any_object' }));
    const vocab = new ByteVocabulary(lm.tokenizer);
    const white = new Set([0x20, 0x0a, 0x0d, 0x09]);
    const whitespaceTokens = [...Array(vocab.size).keys()].filter((id) => [...vocab.bytes(id)].some((b) => white.has(b)));
    const loveWhitespace = (logits: Float32Array) => {
      for (const id of whitespaceTokens) logits[id] += 10;
    };
    for (let seed = 0; seed < 4; seed++) {
      const out = await generateJson(grammar, 'Answer in JSON.', { maxTokens: 40, temperature: 1, seed, logitsProcessor: loveWhitespace });
      expect(out.tokens.length).toBeLessThanOrEqual(40);
      JSON.parse(out.text);
      // Outside strings only the separators' single space may appear.
      const structure = out.text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
      expect(structure).not.toMatch(/^\s|\s$|\s\s|[\n\r\t]|[^,:]\s/);
    }
  });

  describe('a max_tokens too small for the smallest document', () => {
    /** An object whose "items" must hold at least minItems integers; its smallest document is all zeros. */
    const itemsSchema = (minItems: number) => ({
      type: 'object',
      properties: { items: { type: 'array', items: { type: 'integer' }, minItems } },
      required: ['items'],
    });
    const itemsFormat = (minItems: number): GrammarSpec => ({ kind: 'schema', schema: itemsSchema(minItems), strict: true });
    const smallestItems = (minItems: number) => `{"items": [${Array(minItems).fill('0').join(', ')}]}`;
    /** The error newMatcher throws for this budget (no tokens at all by default: every grammar needs some). */
    const refusal = (grammar: CompiledGrammar, maxTokens = 0): GrammarBudgetError => {
      try {
        grammar.newMatcher(maxTokens).dispose();
      } catch (err) {
        if (err instanceof GrammarBudgetError) return err;
        throw err;
      }
      throw new Error(`a budget of ${maxTokens} tokens was accepted`);
    };

    it('is measured in tokens of the smallest document, which grows with minItems', async () => {
      const anyObject = (await compiler.compile({ kind: 'any_object' }));
      expect(refusal(anyObject).minTokens).toBe(lm.tokenizer.encode('{}').length);
      expect(refusal(anyObject).minTokens).toBeLessThanOrEqual(2);
      let previous = 0;
      for (const minItems of [0, 1, 8, 64]) {
        const needed = refusal((await compiler.compile(itemsFormat(minItems))) as CompiledGrammar).minTokens;
        expect(needed).toBe(lm.tokenizer.encode(smallestItems(minItems)).length);
        expect(needed).toBeGreaterThan(previous);
        previous = needed;
      }
    });

    it('is refused one token short with a GrammarBudgetError on the budget; the exact minimum parses', async () => {
      const grammar = (await compiler.compile(itemsFormat(8)));
      const needed = refusal(grammar).minTokens;
      const short = refusal(grammar, needed - 1);
      expect(short).toBeInstanceOf(GrammarError);
      expect(short).toMatchObject({ fault: { kind: 'budget', grammar: 'json' }, minTokens: needed, maxTokens: needed - 1 });
      expect(short.message).toBe(`the smallest document needs at least ${needed} tokens, but the budget is ${needed - 1}`);
      for (let seed = 0; seed < 3; seed++) {
        const out = await generateJson(grammar, 'List some numbers.', { maxTokens: needed, temperature: 1, seed });
        expect(out.tokens.length).toBeLessThanOrEqual(needed);
        expect(ajv.validate(itemsSchema(8), JSON.parse(out.text))).toBe(true);
      }
    });

    it('refuses, naming response_format, a schema whose smallest document is longer than a closing walk may be', async () => {
      // "0, " per item: 400 items are about 1200 bytes, past MAX_CLOSING_BYTES; 300 are within it.
      const tooLong = (await compiler.compile(itemsFormat(400)));
      expect(() => tooLong.newMatcher(4096)).toThrow(GrammarError);
      expect(() => tooLong.newMatcher(4096)).toThrow(/smallest document is longer than 1024 bytes/);
      expect(() => tooLong.newMatcher(4096)).not.toThrow(GrammarBudgetError);
      const within = (await compiler.compile(itemsFormat(300)));
      within.newMatcher(4096).dispose();
    });
  });

  describe('numbers: what JSON.parse returns is finite, and an integer is one a double holds', () => {
    /** Whether the grammar accepts `text` as a whole document, fed byte by byte. */
    function accepts(grammar: CompiledGrammar, text: string): boolean {
      const vocab = new ByteVocabulary(lm.tokenizer);
      const matcher = grammar.newMatcher(4096);
      try {
        for (const byte of Buffer.from(text, 'utf8')) matcher.accept(vocab.byteTokenIds[byte]);
        return matcher.isComplete();
      } catch {
        return false;
      } finally {
        matcher.dispose();
      }
    }
    const amounts: GrammarSpec = {
      kind: 'schema',
      schema: { type: 'object', properties: { amount: { type: 'number' }, count: { type: 'integer' } }, required: ['amount', 'count'] },
      strict: true,
    };
    const doc = (amount: string, count = '1') => `{"amount": ${amount}, "count": ${count}}`;

    it.each([
      ['json_object', { kind: 'any_object' } as GrammarSpec, (n: string) => `{"a": ${n}}`],
      ['json_schema', amounts, (n: string) => doc(n)],
    ])('refuses exponents past two digits, keeps fractions and small exponents (%s)', async (_name, spec, wrap) => {
      const grammar = await compiler.compile(spec);
      for (const ok of ['0', '-12.5', '1e99', '1.5E-99', '9007199254740991.25e+10', '0.123456789012345678901234']) expect([ok, accepts(grammar, wrap(ok))]).toEqual([ok, true]);
      for (const bad of ['1088E38282224821', '1e100', '1e308', '2e-400', '90071992547409920']) expect([bad, accepts(grammar, wrap(bad))]).toEqual([bad, false]);
    });

    it('keeps integers within what a double holds exactly (2^53 - 1), either sign', async () => {
      const grammar = await compiler.compile(amounts);
      for (const ok of ['0', '7', '-42', '999999999999999', '1234567890123456', '9007199254740991', '-9007199254740991']) {
        expect([ok, accepts(grammar, doc('1', ok))]).toEqual([ok, true]);
      }
      for (const bad of ['9007199254740992', '9999999999999999', '-9007199254740992', '10833828248343283882253138824363888322438222224828', '1e3', '1.0']) {
        expect([bad, accepts(grammar, doc('1', bad))]).toEqual([bad, false]);
      }
    });

    it('bounds integers that have only a minimum or a maximum, and leaves digit patterns of strings alone', async () => {
      const one = (schema: Record<string, unknown>): Promise<CompiledGrammar> =>
        compiler.compile({ kind: 'schema', schema: { type: 'object', properties: { x: schema }, required: ['x'] }, strict: true });
      const atLeast0 = await one({ type: 'integer', minimum: 0 });
      expect(accepts(atLeast0, '{"x": 9007199254740991}')).toBe(true);
      expect(accepts(atLeast0, '{"x": 9007199254740992}')).toBe(false);
      const atLeast1234 = await one({ type: 'integer', minimum: 1234 });
      expect(accepts(atLeast1234, '{"x": 123456789012345}')).toBe(true);
      expect(accepts(atLeast1234, '{"x": 12345678901234567890}')).toBe(false);
      const atMostMinus7 = await one({ type: 'integer', maximum: -7 });
      expect(accepts(atMostMinus7, '{"x": -9007199254740991}')).toBe(true);
      expect(accepts(atMostMinus7, '{"x": -90071992547409910}')).toBe(false);
      // A bound the schema sets itself is the schema's to make.
      const wide = await one({ type: 'integer', minimum: 0, maximum: 1e17 });
      expect(accepts(wide, '{"x": 99999999999999999}')).toBe(true);
      const digits = await one({ type: 'string', pattern: '^[1-9][0-9]*$' });
      expect(accepts(digits, `{"x": "1${'0'.repeat(40)}"}`)).toBe(true);
    });

    it('samples only finite numbers and safe integers from a model that loves digits and exponents', async () => {
      const vocab = new ByteVocabulary(lm.tokenizer);
      const numeric = [...Array(vocab.size).keys()].filter((id) => vocab.bytes(id).length > 0 && [...vocab.bytes(id)].every((b) => (b >= 0x30 && b <= 0x39) || b === 0x65 || b === 0x45));
      const loveDigits = (logits: Float32Array) => {
        for (const id of numeric) logits[id] += 30;
      };
      for (const spec of [amounts, { kind: 'any_object' } as GrammarSpec]) {
        const grammar = await compiler.compile(spec);
        for (let seed = 0; seed < 4; seed++) {
          const out = await generateJson(grammar, 'How much?', { maxTokens: 160, temperature: 1, seed, logitsProcessor: loveDigits });
          const numbers: number[] = [];
          JSON.parse(out.text, (_key, value) => (typeof value === 'number' ? (numbers.push(value), value) : value));
          for (const n of numbers) expect([out.text, Number.isFinite(n)]).toEqual([out.text, true]);
          if (spec === amounts) expect([out.text, Number.isSafeInteger(JSON.parse(out.text).count)]).toEqual([out.text, true]);
        }
      }
    });

    describe('ranges (minimum, maximum and their exclusive forms) hold exactly the values in range', () => {
      const RANGES: Record<string, unknown>[] = [
        { type: 'integer', minimum: -3 },
        { type: 'integer', maximum: -7 },
        { type: 'integer', exclusiveMinimum: 0 },
        { type: 'integer', minimum: -20, exclusiveMaximum: 17 },
        { type: 'integer', exclusiveMinimum: -5.5, maximum: 2.5 },
        { type: 'integer', minimum: 99, maximum: 1001 },
        { type: 'number', minimum: -3 },
        { type: 'number', exclusiveMinimum: 0 },
        { type: 'number', exclusiveMaximum: 1 },
        { type: 'number', minimum: 0, maximum: 1 },
        { type: 'number', exclusiveMinimum: -2.5, exclusiveMaximum: -0.25 },
        { type: 'number', minimum: 0.05, maximum: 0.5 },
        { type: 'number', exclusiveMinimum: 10, maximum: 10.75, description: 'a price' },
        { type: 'number', minimum: 1.5, exclusiveMaximum: 100 },
      ];
      // Written as JSON.stringify writes numbers (no "-0", no exponent), plus trailing zeros.
      const CANDIDATES = [
        ...Array.from({ length: 61 }, (_, i) => String(i - 30)),
        ...['0.5', '0.05', '0.049', '0.0501', '0.25', '-0.25', '-0.3', '-0.2', '0.999', '1.0', '1.00', '1.5', '1.49', '-2.5', '-2.49', '-2.51', '-3.5', '-2.25', '-3.0'],
        ...['10.5', '10.75', '10.750', '10.751', '10.0', '10.0001', '99.99', '100.0', '0.0', '0.000001', '1000', '1001', '1002', '98', '99'],
      ];
      const one = (schema: Record<string, unknown>) => compiler.compile({ kind: 'schema', schema: { type: 'object', properties: { x: schema }, required: ['x'] }, strict: true });

      it.each(RANGES.map((schema) => [JSON.stringify(schema), schema]))('%s: as a JSON Schema validator says', async (_name, schema) => {
        const grammar = await one(schema);
        const validate = ajv.compile(schema);
        const candidates = schema.type === 'integer' ? CANDIDATES.filter((c) => /^-?\d+$/.test(c)) : CANDIDATES;
        const wrong = candidates.filter((c) => accepts(grammar, `{"x": ${c}}`) !== validate(JSON.parse(c)));
        expect(wrong).toEqual([]);
        for (const malformed of ['-', '.5', '-.5', '01', '-01', '1.', '--1', '0.5.1', '1-']) expect([malformed, accepts(grammar, `{"x": ${malformed}}`)]).toEqual([malformed, false]);
      });

      it('keeps a side without a bound within what a double holds exactly', async () => {
        expect(accepts(await one({ type: 'integer', minimum: -3 }), '{"x": 9007199254740991}')).toBe(true);
        expect(accepts(await one({ type: 'integer', minimum: -3 }), '{"x": 9007199254740992}')).toBe(false);
        expect(accepts(await one({ type: 'number', maximum: 0 }), '{"x": -9007199254740991.5}')).toBe(false);
        expect(accepts(await one({ type: 'number', maximum: 0 }), '{"x": -9007199254740990.5}')).toBe(true);
      });

      it('samples values in range from a model that loves digits', async () => {
        const vocab = new ByteVocabulary(lm.tokenizer);
        const digitsAndSigns = [...Array(vocab.size).keys()].filter((id) => vocab.bytes(id).length > 0 && [...vocab.bytes(id)].every((b) => (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2e));
        const loveDigits = (logits: Float32Array) => {
          for (const id of digitsAndSigns) logits[id] += 30;
        };
        for (const schema of [{ type: 'integer', minimum: -3, maximum: 40 }, { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }]) {
          const grammar = await one(schema);
          for (let seed = 0; seed < 3; seed++) {
            const out = await generateJson(grammar, 'How much?', { maxTokens: 48, temperature: 1, seed, logitsProcessor: loveDigits });
            expect([out.text, ajv.validate(schema, JSON.parse(out.text).x)]).toEqual([out.text, true]);
          }
        }
      });

      it('refuses a range that holds no value, naming the schema', async () => {
        for (const schema of [{ type: 'integer', minimum: 5, maximum: 4 }, { type: 'integer', exclusiveMinimum: 1, exclusiveMaximum: 2 }, { type: 'number', exclusiveMinimum: 1, maximum: 1 }, { type: 'integer', minimum: 1e19 }]) {
          await expect(one(schema)).rejects.toThrow(GrammarError);
          await expect(one(schema)).rejects.toThrow(/holds no/);
        }
        await expect(one({ type: 'number', minimum: 'one' })).rejects.toThrow(/minimum must be a finite number/);
        await expect(one({ type: 'number', maximum: 1e300 })).rejects.toThrow(/maximum must be within ±1e21/);
      });
    });
  });

  it('rejects schemas it cannot compile with a GrammarError naming the problem', async () => {
    const compile = (schema: unknown) => compiler.compile({ kind: 'schema', schema: schema as Record<string, unknown>, strict: true });
    await expect(compile({ type: 'integr' })).rejects.toThrow(GrammarError);
    await expect(compile({ type: 'integr' })).rejects.toThrow(/integr/);
    await expect(compile({ type: 'object', properties: { a: { $ref: '#/$defs/missing' } } })).rejects.toThrow(/missing/);
    await expect(compile(['not', 'an', 'object'])).rejects.toThrow(/must be a JSON object/);
    await expect(compile({ type: 'integr' })).rejects.toMatchObject({ fault: { kind: 'schema' } });
    await expect(compiler.compile({ kind: 'xml' } as unknown as GrammarSpec)).rejects.toThrow(GrammarError);
  });

  it('keeps working after many rejected schemas', async () => {
    // xgrammar aborts its wasm on a bad schema; a dozen aborts in one instance used to crash it.
    for (let i = 0; i < 25; i++) {
      await expect(compiler.compile({ kind: 'schema', schema: { type: `nope${i}` }, strict: true })).rejects.toThrow(GrammarError);
    }
    const grammar = (await compiler.compile(schemaFormat('person')));
    const out = await generateJson(grammar, 'Describe a person.', { maxTokens: 32, temperature: 1, seed: 3 });
    expect(ajv.validate(SCHEMAS.person, JSON.parse(out.text))).toBe(true);
  });
});
