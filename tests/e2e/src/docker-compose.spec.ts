import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

// Docker cannot run on the build machines, so the compose file is checked by parsing it
// (merge keys resolved, as Compose does) against the list of apps the stack runs.

interface Service {
  image?: string;
  build?: string | { context: string; target?: string; dockerfile?: string };
  volumes?: string[];
  deploy?: { resources?: { reservations?: { devices?: { driver: string; capabilities: string[] }[] } } };
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  restart?: string;
}

const ROOT = join(__dirname, '../../..');
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const gpuOverride = parse(readFileSync(join(ROOT, 'docker-compose.gpu.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const webgpuOverride = parse(readFileSync(join(ROOT, 'docker-compose.webgpu.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
// Compose's `!override` (replace a list of the base file instead of adding to it) read as the list itself.
const s3Override = parse(readFileSync(join(ROOT, 'docker-compose.s3.yml'), 'utf8'), {
  merge: true,
  customTags: [{ tag: '!override', collection: 'seq', resolve: (seq: unknown) => seq as never }],
}) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const WORKERS = ['inference-worker', 'training-worker'];
const stack = JSON.parse(readFileSync(join(ROOT, 'scripts/stack.json'), 'utf8')) as {
  apps: { name: string; port: number; database: boolean }[];
};

describe('docker-compose.yml', () => {
  it('runs every app of the stack, and nothing unknown', () => {
    const infrastructure = ['nats', 'postgres', 'migrate'];
    expect(Object.keys(compose.services).sort()).toEqual([...infrastructure, ...stack.apps.map((a) => a.name)].sort());
  });

  it.each(stack.apps.map((a) => [a.name, a] as const))('starts %s from its image with its own port and a readiness healthcheck', (name, app) => {
    const service = compose.services[name];
    expect(service.image).toBe(WORKERS.includes(name) ? 'trainyard-cpu-worker:dev' : 'trainyard:dev');
    expect(service.environment?.['APP']).toBe(name);
    expect(service.environment?.['HTTP_PORT']).toBe(String(app.port));
    expect(service.environment?.['NATS_URL']).toBe('nats://nats:4222');
    expect(service.healthcheck?.test.join(' ')).toContain('/health/ready');
    expect(service.depends_on?.['nats']).toEqual({ condition: 'service_healthy' });
  });

  it.each(stack.apps.filter((a) => a.database).map((a) => [a.name]))('starts %s only after PostgreSQL is healthy and migrated', (name) => {
    const service = compose.services[name];
    expect(service.environment?.['DATABASE_URL']).toMatch(/^postgresql:\/\/.+@postgres:5432\//);
    expect(service.depends_on?.['postgres']).toEqual({ condition: 'service_healthy' });
    expect(service.depends_on?.['migrate']).toEqual({ condition: 'service_completed_successfully' });
  });

  it('gives apps that own no tables no database at all', () => {
    for (const app of stack.apps.filter((a) => !a.database)) {
      expect(compose.services[app.name].environment?.['DATABASE_URL']).toBeUndefined();
    }
  });

  it('runs NATS with JetStream and a healthcheck, and migrates with the committed migrations', () => {
    expect(compose.services['nats'].command).toEqual(expect.arrayContaining(['-js']));
    expect(compose.services['nats'].healthcheck).toBeDefined();
    expect(compose.services['postgres'].healthcheck).toBeDefined();
    expect(compose.services['migrate'].command).toEqual(['node', 'scripts/db.mjs', 'migrate']);
  });

  it('starts every long-running service again when its process dies, and runs the migration once', () => {
    for (const name of ['nats', 'postgres', ...stack.apps.map((a) => a.name)]) expect([name, compose.services[name].restart]).toEqual([name, 'unless-stopped']);
    expect(compose.services['migrate'].restart).toBe('no');
  });

  it('publishes only the gateway', () => {
    const published = Object.entries(compose.services)
      .filter(([, s]) => s.ports?.length)
      .map(([name]) => name);
    expect(published).toEqual(['gateway']);
  });

  it('builds the services from the default target and the workers from the wasm target', () => {
    for (const app of stack.apps) {
      const build = compose.services[app.name].build;
      if (WORKERS.includes(app.name)) {
        expect(build).toEqual({ context: '.', target: 'cpu-worker' });
        expect(compose.services[app.name].environment?.['COMPUTE_BACKEND']).toBe('wasm');
      } else {
        expect(build).toBe('.');
      }
    }
  });

  it('shares models and artifacts between the registry and the workers at the same paths, as in k8s', () => {
    for (const name of ['model-registry', ...WORKERS]) {
      const service = compose.services[name];
      expect(service.volumes).toEqual(['models:/app/var/models', 'artifacts:/app/var/artifacts']);
      expect(service.environment).toMatchObject({ MODELS_DIR: '/app/var/models', ARTIFACT_ROOT: '/app/var/artifacts' });
    }
    // Chat reads base models' tokenizers (prompt lengths) at the paths the registry hands out.
    expect(compose.services['chat'].volumes).toEqual(['models:/app/var/models:ro']);
    // The orchestrator records Tinker's saved states, objects of the same store.
    expect(compose.services['training-orchestrator'].volumes).toEqual(['artifacts:/app/var/artifacts']);
    expect(compose.services['training-orchestrator'].environment).toMatchObject({ ARTIFACT_ROOT: '/app/var/artifacts' });
  });

  it('runs without an S3 server: the disk artifact store is the default', () => {
    for (const service of Object.values(compose.services)) expect(service.environment?.['ARTIFACT_STORE']).toBeUndefined();
    expect(Object.keys(compose.services)).not.toContain('minio');
  });

  it('has an S3 override: a MinIO server and its bucket, the registry and workers on it, no artifacts volume', () => {
    expect(Object.keys(s3Override.services).sort()).toEqual(['minio', 'minio-init', 'model-registry', 'training-orchestrator', ...WORKERS].sort());
    expect(s3Override.services['minio'].image).toMatch(/^minio\/minio:RELEASE\./);
    expect(s3Override.services['minio'].healthcheck?.test.join(' ')).toContain('mc ready');
    for (const name of ['model-registry', ...WORKERS]) {
      const service = s3Override.services[name];
      expect(service.environment).toMatchObject({ ARTIFACT_STORE: 's3', S3_ENDPOINT: 'http://minio:9000', S3_BUCKET: 'trainyard-artifacts', S3_FORCE_PATH_STYLE: 'true' });
      expect(service.depends_on?.['minio-init']).toEqual({ condition: 'service_completed_successfully' });
      // Replaces the base file's list: the models volume stays, the artifacts volume goes.
      expect(service.volumes).toEqual(['models:/app/var/models']);
    }
    expect(s3Override.services['training-orchestrator'].environment).toMatchObject({ ARTIFACT_STORE: 's3', S3_BUCKET: 'trainyard-artifacts' });
    expect(s3Override.services['training-orchestrator'].volumes).toEqual([]);
    // The bucket the apps use is the one the init container creates.
    expect(JSON.stringify(s3Override.services['minio-init'])).toContain('mc mb --ignore-existing trainyard/trainyard-artifacts');
  });

  it('has a GPU override that runs both workers from the GPU image, requiring a GPU', () => {
    expect(Object.keys(gpuOverride.services).sort()).toEqual(WORKERS);
    for (const name of WORKERS) {
      const service = gpuOverride.services[name];
      expect(service.build).toEqual({ context: '.', dockerfile: 'docker/gpu-worker.Dockerfile' });
      expect(service.environment).toEqual({ COMPUTE_BACKEND: 'tensorflow', REQUIRE_GPU: 'true' });
      expect(service.deploy?.resources?.reservations?.devices?.[0]).toMatchObject({ driver: 'nvidia', capabilities: ['gpu'] });
    }
  });

  it('has a WebGPU override that runs both workers from the WebGPU image with the graphics capability, requiring a GPU', () => {
    expect(Object.keys(webgpuOverride.services).sort()).toEqual(WORKERS);
    for (const name of WORKERS) {
      const service = webgpuOverride.services[name];
      expect(service.build).toEqual({ context: '.', dockerfile: 'docker/webgpu-worker.Dockerfile' });
      expect(service.environment).toEqual({ COMPUTE_BACKEND: 'webgpu', REQUIRE_GPU: 'true' });
      const device = service.deploy?.resources?.reservations?.devices?.[0];
      expect(device?.driver).toBe('nvidia');
      // Docker hands the NVIDIA capabilities listed here to the toolkit in place of the image's own.
      expect(device?.capabilities).toEqual(expect.arrayContaining(['gpu', 'compute', 'utility', 'graphics']));
    }
  });
});
