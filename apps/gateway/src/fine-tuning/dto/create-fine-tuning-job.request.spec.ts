import { ServiceError } from '@trainyard/contracts';
import { createValidationPipe } from '../../http/validation.pipe';
import { CreateFineTuningJobRequest, requestedHyperparameters } from './create-fine-tuning-job.request';

const pipe = createValidationPipe();
const base = { model: 'trainyard/tiny-chat', training_file: 'file-abc' };
const parse = (body: Record<string, unknown>) => pipe.transform({ ...base, ...body }, { type: 'body', metatype: CreateFineTuningJobRequest }) as Promise<CreateFineTuningJobRequest>;
const problems = (body: Record<string, unknown>) =>
  parse(body).then(
    () => [],
    (err: ServiceError) => (err.details.issues ?? []).map((i) => [i.loc.slice(1).join('.'), i.msg]),
  );

describe('CreateFineTuningJobRequest', () => {
  it('accepts what client.fineTuning.jobs.create sends, integrations dropped', async () => {
    const body = await parse({
      validation_file: 'file-def',
      suffix: 'support-bot',
      seed: 7,
      metadata: { team: 'support' },
      method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 2, batch_size: 'auto', learning_rate_multiplier: 0.5 } } },
      integrations: [{ type: 'wandb', wandb: { project: 'p' } }],
    });
    expect(body).toMatchObject({ suffix: 'support-bot', seed: 7, metadata: { team: 'support' }, validation_file: 'file-def' });
    expect(body).not.toHaveProperty('integrations');
    expect(requestedHyperparameters(body)).toEqual({ n_epochs: 2, batch_size: 'auto', learning_rate_multiplier: 0.5 });
  });

  it('takes the legacy top-level hyperparameters, and an empty suffix as none', async () => {
    const body = await parse({ suffix: '', hyperparameters: { n_epochs: 'auto', batch_size: 4 } });
    expect(body.suffix).toBeNull();
    expect(requestedHyperparameters(body)).toEqual({ n_epochs: 'auto', batch_size: 4 });
    expect(requestedHyperparameters(await parse({}))).toEqual({});
  });

  it('merges both places, refusing one hyperparameter given two different values', async () => {
    const agree = await parse({ hyperparameters: { n_epochs: 3 }, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 3, batch_size: 2 } } } });
    expect(requestedHyperparameters(agree)).toEqual({ n_epochs: 3, batch_size: 2 });
    const clash = await parse({ hyperparameters: { n_epochs: 2 }, method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 3 } } } });
    expect(() => requestedHyperparameters(clash)).toThrow(ServiceError);
    try {
      requestedHyperparameters(clash);
    } catch (err) {
      expect((err as ServiceError).details.issues?.[0].loc).toEqual(['body', 'hyperparameters', 'n_epochs']);
    }
  });

  it.each(['dpo', 'reinforcement'])('refuses method.type %s, naming the field', async (type) => {
    const [[field, msg]] = await problems({ method: { type, [type]: {} } });
    expect(field).toBe('method.type');
    expect(msg).toContain(`"${type}" fine-tuning is not offered here`);
  });

  it.each<[string, Record<string, unknown>]>([
    ['model', { model: 7 }],
    ['training_file', { training_file: undefined }],
    ['suffix', { suffix: 'has space' }],
    ['suffix', { suffix: 'x'.repeat(65) }],
    ['suffix', { suffix: 'a:b' }],
    ['seed', { seed: 1.5 }],
    ['seed', { seed: -1 }],
    ['metadata', { metadata: { k: 1 } }],
    ['metadata', { metadata: { k: 'a\u0000b' } }],
    ['metadata', { metadata: { 'x\udfff': 'v' } }],
    ['metadata', { metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }],
    ['method.supervised.hyperparameters.n_epochs', { method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 0 } } } }],
    ['method.supervised.hyperparameters.n_epochs', { method: { type: 'supervised', supervised: { hyperparameters: { n_epochs: 51 } } } }],
    ['method.supervised.hyperparameters.batch_size', { method: { type: 'supervised', supervised: { hyperparameters: { batch_size: 2.5 } } } }],
    ['hyperparameters.learning_rate_multiplier', { hyperparameters: { learning_rate_multiplier: 0 } }],
    ['hyperparameters.learning_rate_multiplier', { hyperparameters: { learning_rate_multiplier: 'fast' } }],
    ['method.type', { method: {} }],
  ])('refuses a bad %s', async (field, body) => {
    expect((await problems(body)).map(([f]) => f)).toContain(field);
  });
});
