import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { makeModel } from '@trainyard/engine/files';
import type { RegistryConfig } from '../config/registry.config';
import { ModelResolverService } from '../resolve/model-resolver.service';
import { BaseModelsService } from './base-models.service';

/** google/gemma-3-4b-it's config.json (multimodal: a vision tower beside Gemma 3), as far as the registry reads it. */
const GEMMA3_4B_CONFIG = { architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3', text_config: { model_type: 'gemma3_text', hidden_size: 2560 } };

describe('base models the engine cannot load', () => {
  let root: string;
  let baseModels: BaseModelsService;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'registry-base-models-'));
    makeModel({ preset: 'tiny-qwen3', out: join(root, 'Qwen', 'Qwen3-tiny') });
    makeModel({ preset: 'tiny-gemma3', out: join(root, 'google', 'gemma-3-tiny') });
    mkdirSync(join(root, 'google', 'gemma-3-4b-it'), { recursive: true });
    writeFileSync(join(root, 'google', 'gemma-3-4b-it', 'config.json'), JSON.stringify(GEMMA3_4B_CONFIG));
    baseModels = new BaseModelsService({ MODELS_DIR: root } as RegistryConfig, { list: async () => [], find: async () => null } as never);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('are listed with the reason, beside the ones it can', async () => {
    const listed = await baseModels.list();
    expect(listed.map(({ id, architecture, unsupported }) => ({ id, architecture, unsupported }))).toEqual([
      { id: 'google/gemma-3-4b-it', architecture: 'gemma3', unsupported: expect.stringContaining('unsupported architecture ["Gemma3ForConditionalGeneration"]') },
      { id: 'google/gemma-3-tiny', architecture: 'gemma3_text', unsupported: null },
      { id: 'Qwen/Qwen3-tiny', architecture: 'qwen3', unsupported: null },
    ]);
  });

  it('are refused by name before any worker tries them: invalid_request naming the architecture', async () => {
    // A base model needs neither the database nor the artifact store.
    const resolver = new ModelResolverService(baseModels, {} as never, {} as never, {} as never, { bundleOf: async () => null } as never);
    const scope = { entity_id: 'e1', entity_name: 'acme' };
    const refusal = await resolver.resolve({ model: 'google/gemma-3-4b-it', ...scope }).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(ServiceError);
    expect(refusal).toMatchObject({ code: ErrorCode.InvalidRequest, details: { param: 'model' } });
    expect((refusal as ServiceError).message).toMatch(/^The model `google\/gemma-3-4b-it` cannot be served by this engine: unsupported architecture \["Gemma3ForConditionalGeneration"\]; supported: .*Gemma3ForCausalLM/);
    await expect(resolver.resolve({ model: 'Qwen/Qwen3-tiny', ...scope })).resolves.toMatchObject({ base_model: 'Qwen/Qwen3-tiny', adapter_bundle: null });
  });

  it('answers an id that names no base model (a NUL, a hidden part, a path) as absent, without asking the catalogue', async () => {
    const catalogue = { list: async () => [], find: async (id: string) => Promise.reject(new Error(`the catalogue was asked for ${JSON.stringify(id)}`)) };
    const strict = new BaseModelsService({ MODELS_DIR: root } as RegistryConfig, catalogue as never);
    for (const id of ['\u0000', 'a\u0000b', '.hidden', 'org/.hidden', '../etc', 'a/b/c', '']) expect(await strict.find(id)).toBeUndefined();
    await expect(strict.find('Qwen/Qwen3-tiny')).resolves.toMatchObject({ id: 'Qwen/Qwen3-tiny' });
  });
});
