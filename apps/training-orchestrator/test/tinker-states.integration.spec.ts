import { Test, TestingModule } from '@nestjs/testing';
import { ArtifactNotFoundError, DiskArtifactStore, sha256Of } from '@trainyard/artifacts';
import { ErrorCode } from '@trainyard/contracts';
import { DbModule, PrismaService } from '@trainyard/db';
import { ProcessHealthModule } from '@trainyard/runtime';
import { createTestDatabase } from '@trainyard/testing';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TinkerStatesService } from '../src/tinker/tinker-states.service';
import { TinkerRepository } from '../src/tinker/tinker.repository';

const LORA = { rank: 8, seed: null, train_attn: true, train_mlp: true, train_unembed: false };

describe("Tinker's saved states: objects of the artifact store, named by their rows (real Postgres, disk store)", () => {
  let db: { url: string; drop(): Promise<void> };
  let moduleRef: TestingModule;
  let prisma: PrismaService;
  let root: string;
  let store: DiskArtifactStore;
  let states: TinkerStatesService;
  let entityId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    moduleRef = await Test.createTestingModule({ imports: [ProcessHealthModule, DbModule.forRoot(db.url)], providers: [TinkerRepository] }).compile();
    prisma = moduleRef.get(PrismaService);
    root = mkdtempSync(join(tmpdir(), 'tinker-states-'));
    store = new DiskArtifactStore(root);
    states = new TinkerStatesService(moduleRef.get(TinkerRepository), store);
    entityId = (await prisma.entity.create({ data: { name: 'acme' } })).id;
  });

  afterAll(async () => {
    await moduleRef?.close();
    await db?.drop();
    rmSync(root, { recursive: true, force: true });
  });

  const save = (path: string, state: { sha256: string; bytes: number }, overwrite = false, requestId = randomUUID()) =>
    states.save({ request_id: requestId, entity_id: entityId, client_id: 'c', path, overwrite, base_model: 'b', lora_config: LORA, state });
  const get = (path: string) => states.get({ entity_id: entityId, entity_name: 'acme', path });

  it('records a stored state by digest and finds it again; a taken path needs overwrite', async () => {
    const first = await store.put(Buffer.from(`state one ${randomUUID()}`));
    const second = await store.put(Buffer.from(`state two ${randomUUID()}`));
    await save('tinker://c/weights/a', first);
    expect(await get('tinker://c/weights/a')).toEqual({ path: 'tinker://c/weights/a', base_model: 'b', lora_config: LORA, sha256: first.sha256 });
    await expect(save('tinker://c/weights/a', second)).rejects.toMatchObject({ code: ErrorCode.Conflict });
    await save('tinker://c/weights/a', second, true);
    expect((await get('tinker://c/weights/a')).sha256).toBe(second.sha256);
    const row = await prisma.tinkerSavedState.findFirstOrThrow({ where: { path: 'tinker://c/weights/a' } });
    expect(row).toMatchObject({ sha256: second.sha256, bytes: second.bytes, data: null });
  });

  it('refuses to record a state whose object is not in the store', async () => {
    await expect(save('tinker://c/weights/gone', { sha256: sha256Of(Buffer.from('never stored')), bytes: 12 })).rejects.toBeInstanceOf(ArtifactNotFoundError);
    expect(await prisma.tinkerSavedState.count({ where: { path: 'tinker://c/weights/gone' } })).toBe(0);
  });

  it('moves a state saved with its bytes in PostgreSQL into the store when first read', async () => {
    const bytes = Buffer.from(`an older state ${randomUUID()}`);
    await prisma.tinkerSavedState.create({ data: { id: randomUUID(), entityId, path: 'tinker://c/weights/old', clientId: 'c', baseModel: 'b', loraConfig: LORA, data: new Uint8Array(bytes) } });
    const { sha256 } = await get('tinker://c/weights/old');
    expect(sha256).toBe(sha256Of(bytes));
    expect(await store.get(sha256)).toEqual(bytes);
    const row = await prisma.tinkerSavedState.findFirstOrThrow({ where: { path: 'tinker://c/weights/old' } });
    expect(row).toMatchObject({ sha256, bytes: bytes.byteLength, data: null });
  });
});
