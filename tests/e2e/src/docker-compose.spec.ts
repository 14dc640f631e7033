import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

// Docker cannot run on the build machines, so the compose file is checked by parsing it
// (merge keys resolved, as Compose does) against the list of apps the stack runs.

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
}

const ROOT = join(__dirname, '../../..');
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const stack = JSON.parse(readFileSync(join(ROOT, 'scripts/stack.json'), 'utf8')) as {
  apps: { name: string; port: number; database: boolean }[];
};

describe('docker-compose.yml', () => {
  it('runs every app of the stack, and nothing unknown', () => {
    const infrastructure = ['nats', 'postgres', 'migrate'];
    expect(Object.keys(compose.services).sort()).toEqual([...infrastructure, ...stack.apps.map((a) => a.name)].sort());
  });

  it.each(stack.apps.map((a) => [a.name, a] as const))('starts %s from the shared image with its own port and a readiness healthcheck', (name, app) => {
    const service = compose.services[name];
    expect(service.image).toBe('trainyard:dev');
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

  it('publishes only the gateway', () => {
    const published = Object.entries(compose.services)
      .filter(([, s]) => s.ports?.length)
      .map(([name]) => name);
    expect(published).toEqual(['gateway']);
  });
});
