import { makeTokenizerFiles } from '../src/maker/tokenizer-files';
import { TextTokenizer } from '../src/tokenizer';

describe('TextTokenizer', () => {
  it("counts a vocabulary of Qwen2.5's size (151,936 ids) and encodes with it", () => {
    const { tokenizerJson, tokenizerConfig } = makeTokenizerFiles(151_936, 2048);
    const tokenizer = new TextTokenizer(tokenizerJson, tokenizerConfig);
    expect(tokenizer.vocabSize).toBe(151_936);
    expect(tokenizer.idToToken(151_935)).toMatch(/^<\|reserved_\d+\|>$/);
    const ids = tokenizer.encode('<|im_start|>user\nhello<|im_end|>');
    expect(ids[0]).toBe(tokenizer.tokenToId('<|im_start|>'));
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe('user\nhello');
  });
});
