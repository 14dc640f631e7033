import * as fs from 'node:fs';
import * as path from 'node:path';
import { JsonGrammarCompiler } from '../../src/grammar';
import { SeededRandom } from '../../src/random';
import { sampleToken } from '../../src/sampling';
import { TextTokenizer } from '../../src/tokenizer';
import { makeTiny } from '../helpers';

it('smoke', async () => {
  const dir = makeTiny('grammar');
  const tok = new TextTokenizer(JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')), JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')));
  const compiler = await JsonGrammarCompiler.create(tok, [2]);
  const g = await compiler.compile({ type: 'json_object' });
  for (const max of [5, 8, 12, 40]) for (let seed = 0; seed < 5; seed++) {
    const m = g!.newMatcher(max);
    const rng = new SeededRandom(seed);
    const ids: number[] = [];
    const t0 = Date.now();
    while (ids.length < max) {
      const logits = new Float32Array(tok.vocabSize).map(() => rng.normal() * 3);
      const t = sampleToken(logits, { temperature: 1, logitsProcessor: m.logitsProcessor() }, rng, ids);
      if (t.id === 2) break;
      ids.push(t.id);
    }
    m.catchUp(ids);
    const text = tok.decode(ids);
    console.log(max, seed, ids.length, Date.now() - t0, m.isComplete(), JSON.stringify(text));
  }
});
