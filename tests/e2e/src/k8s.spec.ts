import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { K8sObject, render, ROOT, schemaProblem } from './support/kubernetes';

// No cluster runs on the build machines: every overlay is rendered with `kubectl kustomize`,
// each object is validated against the Kubernetes schemas (vendored by kubernetes-models),
// and the deployment's invariants are asserted on the rendered objects.

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: unknown; fieldRef?: unknown };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  exec?: { command: string[] };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string; optional?: boolean } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  containers: Container[];
  restartPolicy?: string;
  initContainers?: Container[];
  volumes?: { name: string; persistentVolumeClaim?: { claimName: string }; emptyDir?: unknown }[];
  nodeSelector?: Record<string, string>;
  tolerations?: { key?: string; operator?: string; effect?: string }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: PodSpec;
}
type Selector = { matchLabels?: Record<string, string> };

const stack = JSON.parse(readFileSync(join(ROOT, 'scripts/stack.json'), 'utf8')) as {
  apps: { name: string; port: number; database: boolean }[];
};
/** Every app that runs as a process (tag type:app); the console (type:web) is static files the gateway serves. */
const appDirs = readdirSync(join(ROOT, 'apps'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .filter((d) => (JSON.parse(readFileSync(join(ROOT, 'apps', d.name, 'project.json'), 'utf8')) as { tags?: string[] }).tags?.includes('type:app'))
  .map((d) => d.name)
  .sort();
const WORKERS = ['inference-worker', 'training-worker'];
const SHARED_STORAGE_APPS = ['model-registry', ...WORKERS];
/** Apps that read or write the artifact store: its volume with the disk store, the bucket with S3. */
const ARTIFACT_APPS = [...SHARED_STORAGE_APPS, 'training-orchestrator'];

const overlays = { dev: render('k8s/overlays/dev'), production: render('k8s/overlays/production') };

/** The base with one component, as an overlay would use it (a scratch kustomization under tmp/). */
function renderBaseWith(component: string): K8sObject[] {
  mkdirSync(join(ROOT, 'tmp'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'tmp', 'k8s-'));
  try {
    const kustomization = ['apiVersion: kustomize.config.k8s.io/v1beta1', 'kind: Kustomization', 'resources:', '  - ../../k8s/base', 'components:', `  - ../../k8s/components/${component}`];
    writeFileSync(join(dir, 'kustomization.yaml'), kustomization.join('\n') + '\n');
    return render(relative(ROOT, dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const OVERLAYS = Object.keys(overlays) as (keyof typeof overlays)[];

const ofKind = (objects: K8sObject[], kind: string) => objects.filter((o) => o.kind === kind);
const find = (objects: K8sObject[], kind: string, name: string) => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
};
const template = (o: K8sObject) => (o.spec as { template: PodTemplate }).template;
const containersOf = (o: K8sObject) => [...template(o).spec.containers, ...(template(o).spec.initContainers ?? [])];
const env = (c: Container, name: string) => c.env?.find((e) => e.name === name);
const selects = (selector: Selector | undefined, labels: Record<string, string>) =>
  Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);

describe('k8s/', () => {
  it('knows every app of apps/ (scripts/stack.json lists exactly them)', () => {
    expect(stack.apps.map((a) => a.name).sort()).toEqual(appDirs);
  });

  it('renders the base on its own', () => {
    expect(render('k8s/base').length).toBeGreaterThan(0);
  });

  describe.each(OVERLAYS)('overlay %s', (overlay) => {
    const objects = overlays[overlay];
    const deployments = ofKind(objects, 'Deployment');
    const workloads = [...deployments, ...ofKind(objects, 'StatefulSet')];

    it('renders only objects valid against the Kubernetes schemas', () => {
      const problems = objects
        .map((o) => [`${o.kind}/${o.metadata.name}`, schemaProblem(o)] as const)
        .filter(([, problem]) => problem !== undefined);
      expect(problems).toEqual([]);
    });

    it('puts everything in the trainyard namespace, labelled as part of trainyard', () => {
      for (const o of objects.filter((o) => o.kind !== 'Namespace')) {
        expect([`${o.kind}/${o.metadata.name}`, o.metadata.namespace]).toEqual([`${o.kind}/${o.metadata.name}`, 'trainyard']);
        expect(o.metadata.labels?.['app.kubernetes.io/part-of']).toBe('trainyard');
      }
    });

    it.each(stack.apps.map((a) => [a.name, a] as const))('deploys %s with its Service on its port', (name, app) => {
      const deployment = find(objects, 'Deployment', name);
      const [container] = template(deployment).spec.containers;
      expect(env(container, 'APP')?.value).toBe(name);
      expect(env(container, 'HTTP_PORT')?.value).toBe(String(app.port));
      expect(container.args).toEqual(['node', `dist/apps/${name}/main.js`]);
      expect(container.ports).toEqual([{ name: 'http', containerPort: app.port }]);
      expect(container.envFrom).toContainEqual({ configMapRef: { name: expect.stringMatching(/^trainyard-config-/) } });
      const service = find(objects, 'Service', name);
      expect((service.spec as { ports: { port: number }[] }).ports[0].port).toBe(app.port);
      expect(selects(service.spec?.['selector'] ? { matchLabels: service.spec['selector'] as Record<string, string> } : undefined, template(deployment).metadata.labels)).toBe(true);
    });

    it('gives every workload container liveness and readiness probes, requests and limits', () => {
      for (const workload of workloads) {
        for (const c of template(workload).spec.containers) {
          const where = `${workload.kind}/${workload.metadata.name}/${c.name}`;
          expect([where, Boolean(c.livenessProbe), Boolean(c.readinessProbe)]).toEqual([where, true, true]);
          for (const resource of ['cpu', 'memory']) {
            expect([where, resource, c.resources?.requests?.[resource] !== undefined, c.resources?.limits?.[resource] !== undefined]).toEqual([where, resource, true, true]);
          }
        }
        for (const c of template(workload).spec.initContainers ?? []) {
          expect([c.name, c.resources?.requests, c.resources?.limits]).toEqual([c.name, expect.any(Object), expect.any(Object)]);
        }
      }
    });

    it('restarts every long-running container that dies (restartPolicy Always, the default)', () => {
      for (const workload of workloads) {
        expect([workload.metadata.name, template(workload).spec.restartPolicy ?? 'Always']).toEqual([workload.metadata.name, 'Always']);
      }
    });

    it('probes each app on its own health endpoints', () => {
      for (const app of stack.apps) {
        const [c] = template(find(objects, 'Deployment', app.name)).spec.containers;
        expect(c.livenessProbe?.httpGet).toEqual({ path: '/health/live', port: 'http' });
        expect(c.readinessProbe?.httpGet).toEqual({ path: '/health/ready', port: 'http' });
      }
    });

    it('runs the migration Job with the committed migrations and the database Secret', () => {
      const job = find(objects, 'Job', 'trainyard-migrate');
      const [c] = template(job).spec.containers;
      expect(c.args).toEqual(['node', 'scripts/db.mjs', 'migrate']);
      expect(env(c, 'DATABASE_URL')?.valueFrom?.secretKeyRef).toEqual({ name: 'trainyard-database', key: 'DATABASE_URL' });
      expect(job.metadata.labels?.['trainyard.dev/stage']).toBe('migrate');
      // deploy.sh applies the infrastructure, then this Job, then the rest; the apps are neither.
      for (const d of deployments) expect(d.metadata.labels?.['trainyard.dev/stage']).toBeUndefined();
    });

    it('inlines no secret: no Secret objects, secret-looking variables only from Secrets', () => {
      expect(ofKind(objects, 'Secret')).toEqual([]);
      const secretish = /(DATABASE_URL|PASSWORD|SECRET|TOKEN|API_KEY)$/;
      for (const workload of [...workloads, ...ofKind(objects, 'Job')]) {
        for (const c of containersOf(workload)) {
          for (const e of (c.env ?? []).filter((e) => secretish.test(e.name))) {
            expect([c.name, e.name, e.value, e.valueFrom?.secretKeyRef?.name]).toEqual([c.name, e.name, undefined, expect.any(String)]);
          }
        }
      }
      for (const cm of ofKind(objects, 'ConfigMap')) {
        for (const [key, value] of Object.entries(cm.data ?? {})) {
          expect([cm.metadata.name, key, secretish.test(key), /postgres(ql)?:\/\/[^@\s]+@/.test(value)]).toEqual([cm.metadata.name, key, false, false]);
        }
      }
    });

    it('gives DATABASE_URL to the apps that use PostgreSQL, and to no other', () => {
      for (const app of stack.apps) {
        const [c] = template(find(objects, 'Deployment', app.name)).spec.containers;
        expect([app.name, env(c, 'DATABASE_URL') !== undefined]).toEqual([app.name, app.database]);
      }
    });

    it('shares the models volume (and, with the disk artifact store, the artifacts volume) between the registry and the workers, at the same paths', () => {
      const config = ofKind(objects, 'ConfigMap').find((c) => c.metadata.name.startsWith('trainyard-config-'));
      const onDisk = (config?.data?.['ARTIFACT_STORE'] ?? 'disk') === 'disk';
      const modelsFromStore = config?.data?.['BASE_MODEL_SOURCE'] === 'store';
      for (const name of SHARED_STORAGE_APPS) {
        const spec = template(find(objects, 'Deployment', name)).spec;
        const [c] = spec.containers;
        const claim = (volume: string) => spec.volumes?.find((v) => v.name === volume)?.persistentVolumeClaim?.claimName;
        const mounts = Object.fromEntries((c.volumeMounts ?? []).map((m) => [claim(m.name), m.mountPath]));
        // With base models from the store, only the publishing CronJob mounts the models volume.
        const mountsModels = !modelsFromStore;
        expect(mounts).toMatchObject({ ...(mountsModels ? { 'trainyard-models': '/app/var/models' } : {}), ...(onDisk ? { 'trainyard-artifacts': '/app/var/artifacts' } : {}) });
        if (!onDisk) expect(mounts['trainyard-artifacts']).toBeUndefined();
        if (!mountsModels) expect(mounts['trainyard-models']).toBeUndefined();
      }
      // The orchestrator records Tinker's saved states: the artifacts volume with the disk store.
      const orchestrator = template(find(objects, 'Deployment', 'training-orchestrator')).spec;
      const artifactsClaim = orchestrator.volumes?.find((v) => v.persistentVolumeClaim?.claimName === 'trainyard-artifacts');
      expect(orchestrator.containers[0].volumeMounts?.find((m) => m.name === artifactsClaim?.name)?.mountPath).toBe(onDisk ? '/app/var/artifacts' : undefined);
      expect(config?.data).toMatchObject({ MODELS_DIR: '/app/var/models', ARTIFACT_ROOT: '/app/var/artifacts', NATS_URL: 'nats://nats:4222' });
      for (const name of ['trainyard-models', ...(onDisk ? ['trainyard-artifacts'] : [])]) expect(find(objects, 'PersistentVolumeClaim', name)).toBeDefined();
      // Chat reads base models' tokenizers (prompt lengths), read-only, at the same path (from the bucket with models from the store).
      if (modelsFromStore) return;
      const chat = template(find(objects, 'Deployment', 'chat')).spec;
      const models = chat.volumes?.find((v) => v.persistentVolumeClaim?.claimName === 'trainyard-models');
      expect(chat.containers[0].volumeMounts).toContainEqual({ name: models?.name, mountPath: '/app/var/models', readOnly: true });
    });

    it('runs NATS with JetStream on a persistent volume', () => {
      const nats = find(objects, 'StatefulSet', 'nats');
      expect((nats.spec as { volumeClaimTemplates: unknown[] }).volumeClaimTemplates).toHaveLength(1);
      expect(find(objects, 'ConfigMap', 'nats-config').data?.['nats.conf']).toMatch(/jetstream\s*\{[^}]*store_dir:\s*\/data/);
    });

    it('autoscales the gateway, chat and the inference workers', () => {
      const targets = [...ofKind(objects, 'HorizontalPodAutoscaler'), ...ofKind(objects, 'ScaledObject')].map(
        (h) => (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name,
      );
      expect(targets).toEqual(expect.arrayContaining(['chat', 'gateway', 'inference-worker']));
    });

    it('covers every app with a PodDisruptionBudget', () => {
      for (const app of stack.apps) {
        const labels = template(find(objects, 'Deployment', app.name)).metadata.labels;
        const pdbs = ofKind(objects, 'PodDisruptionBudget').filter((p) => selects((p.spec as { selector: Selector }).selector, labels));
        expect([app.name, pdbs.length]).toEqual([app.name, 1]);
      }
    });

    it('routes the ingress to the gateway, keeping SSE streams open and large bodies allowed', () => {
      const [ingress, ...others] = ofKind(objects, 'Ingress');
      expect(others).toEqual([]);
      const backends = JSON.stringify(ingress.spec?.['rules']);
      expect(backends).toContain('"service":{"name":"gateway","port":{"name":"http"}}');
      const a = ingress.metadata.annotations ?? {};
      expect(a['nginx.ingress.kubernetes.io/proxy-buffering']).toBe('off');
      expect(Number(a['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(3600);
      expect(Number(a['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(3600);
      expect(a['nginx.ingress.kubernetes.io/proxy-body-size']).toBe('100m');
    });

    it('lets outside traffic reach only the gateway, and only database users reach PostgreSQL', () => {
      const policies = ofKind(objects, 'NetworkPolicy');
      type Rule = { from?: unknown[] };
      type Policy = { podSelector: Selector; policyTypes: string[]; ingress?: Rule[] };
      const deny = policies.find((p) => Object.keys((p.spec as Policy).podSelector).length === 0 && !(p.spec as Policy).ingress);
      expect(deny?.spec?.['policyTypes']).toEqual(['Ingress']);
      // A rule without "from" admits anyone: only the gateway may have one.
      const open = policies.filter((p) => (p.spec as Policy).ingress?.some((r) => !r.from));
      expect(open.map((p) => (p.spec as Policy).podSelector.matchLabels?.['app.kubernetes.io/name'])).toEqual(['gateway']);

      const dbLabelled = [...deployments, ...ofKind(objects, 'Job')]
        .filter((w) => template(w).metadata.labels['trainyard.dev/database'] === 'true')
        .map((w) => template(w).metadata.labels['app.kubernetes.io/name'])
        .sort();
      expect(dbLabelled).toEqual([...stack.apps.filter((a) => a.database).map((a) => a.name), 'migrate'].sort());

      const egress = find(objects, 'NetworkPolicy', 'no-database-egress');
      expect(JSON.stringify(egress.spec)).not.toContain('5432');
      expect(JSON.stringify(egress.spec?.['podSelector'])).toContain('"values":["inference-worker","training-worker"]');
    });
  });

  describe('dev', () => {
    const objects = overlays.dev;

    it('runs PostgreSQL in the cluster, reachable only from pods labelled for the database', () => {
      const postgres = find(objects, 'StatefulSet', 'postgres');
      const [c] = template(postgres).spec.containers;
      expect(env(c, 'POSTGRES_PASSWORD')?.valueFrom?.secretKeyRef).toEqual({ name: 'trainyard-postgres', key: 'POSTGRES_PASSWORD' });
      const policy = find(objects, 'NetworkPolicy', 'postgres-from-owners').spec as { ingress: { from: { podSelector: Selector }[] }[] };
      expect(policy.ingress).toHaveLength(1);
      expect(policy.ingress[0].from).toEqual([{ podSelector: { matchLabels: { 'trainyard.dev/database': 'true', 'app.kubernetes.io/part-of': 'trainyard' } } }]);
    });

    it('runs the workers on wasm, without GPUs', () => {
      for (const name of WORKERS) {
        const [c] = template(find(objects, 'Deployment', name)).spec.containers;
        expect(c.image).toBe('trainyard-cpu-worker:dev');
        expect(env(c, 'COMPUTE_BACKEND')?.value).toBe('wasm');
        expect(c.resources?.limits?.['nvidia.com/gpu']).toBeUndefined();
      }
    });
  });

  describe('production', () => {
    const objects = overlays.production;

    it('runs the workers from the GPU image, each requesting a GPU on the GPU node pool', () => {
      for (const name of WORKERS) {
        const spec = template(find(objects, 'Deployment', name)).spec;
        const [c] = spec.containers;
        expect(c.image).toMatch(/trainyard-gpu-worker:/);
        expect(c.resources?.requests?.['nvidia.com/gpu']).toBe(1);
        expect(c.resources?.limits?.['nvidia.com/gpu']).toBe(1);
        expect(env(c, 'COMPUTE_BACKEND')?.value).toBe('tensorflow');
        expect(env(c, 'REQUIRE_GPU')?.value).toBe('true');
        expect(spec.nodeSelector).toEqual({ 'trainyard.dev/gpu': 'true' });
        expect(spec.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
      }
    });

    it('uses an external PostgreSQL, no ReadWriteMany volume, TLS and bare stream names', () => {
      expect(ofKind(objects, 'StatefulSet').map((s) => s.metadata.name)).toEqual(['nats']);
      const claims = ofKind(objects, 'PersistentVolumeClaim');
      expect(claims.length).toBeGreaterThan(0);
      for (const pvc of claims) expect([pvc.metadata.name, pvc.spec?.['accessModes']]).toEqual([pvc.metadata.name, ['ReadWriteOnce']]);
      expect(find(objects, 'Ingress', 'gateway').spec?.['tls']).toHaveLength(1);
      const config = ofKind(objects, 'ConfigMap').find((c) => c.metadata.name.startsWith('trainyard-config-'));
      expect(config?.data?.['JETSTREAM_PREFIX']).toBe('');
    });

    it('keeps artifacts in object storage: no ReadWriteMany claim for them, every worker reads adapters from the bucket', () => {
      const config = ofKind(objects, 'ConfigMap').find((c) => c.metadata.name.startsWith('trainyard-config-'));
      expect(config?.data).toMatchObject({ ARTIFACT_STORE: 's3', S3_BUCKET: expect.stringMatching(/^[a-z0-9][a-z0-9.-]+$/), S3_REGION: expect.any(String) });
      const claims = ofKind(objects, 'PersistentVolumeClaim');
      expect(claims.map((c) => c.metadata.name)).not.toContain('trainyard-artifacts');
      for (const workload of [...ofKind(objects, 'Deployment'), ...ofKind(objects, 'StatefulSet')]) {
        const spec = template(workload).spec;
        const mountsArtifacts = spec.containers.some((c) => (c.volumeMounts ?? []).some((m) => m.mountPath === '/app/var/artifacts'));
        expect([workload.metadata.name, mountsArtifacts]).toEqual([workload.metadata.name, false]);
      }
      for (const name of ARTIFACT_APPS) {
        const spec = template(find(objects, 'Deployment', name)).spec;
        const [c] = spec.containers;
        // The bucket's settings, and its credentials from a Secret when there is one (else IRSA / workload identity).
        expect(c.envFrom).toContainEqual({ configMapRef: { name: config?.metadata.name } });
        expect(c.envFrom).toContainEqual({ secretRef: { name: 'trainyard-s3', optional: true } });
      }
      for (const name of WORKERS) {
        const spec = template(find(objects, 'Deployment', name)).spec;
        const [c] = spec.containers;
        // Each worker's own bounded cache of what it fetched, on an emptyDir.
        expect(env(c, 'ARTIFACT_CACHE_DIR')?.value).toBe('/app/var/cache/artifacts');
        expect(Number(env(c, 'ARTIFACT_CACHE_MB')?.value)).toBeGreaterThan(0);
        const cache = c.volumeMounts?.find((m) => m.mountPath === '/app/var/cache/artifacts');
        expect(spec.volumes?.find((v) => v.name === cache?.name)?.emptyDir).toBeDefined();
      }
      // The workers may reach NATS and DNS only, and the object store over HTTPS.
      expect(JSON.stringify(find(objects, 'NetworkPolicy', 'workers-to-object-storage').spec)).toContain('"port":443');
    });

    it('takes base models from the bucket: no service or worker mounts a volume, a CronJob publishes them', () => {
      const config = ofKind(objects, 'ConfigMap').find((c) => c.metadata.name.startsWith('trainyard-config-'));
      expect(config?.data).toMatchObject({ BASE_MODEL_SOURCE: 'store' });
      expect(config?.data?.['PUBLISH_BASE_MODELS']).toBeUndefined();
      for (const deployment of ofKind(objects, 'Deployment')) {
        const spec = template(deployment).spec;
        expect([deployment.metadata.name, (spec.volumes ?? []).filter((v) => v.persistentVolumeClaim)]).toEqual([deployment.metadata.name, []]);
      }
      // The registry lists the catalogue of published models; chat reads their tokenizers from the bucket.
      const [registry] = template(find(objects, 'Deployment', 'model-registry')).spec.containers;
      expect(env(registry, 'MODELS_DIR')?.value).toBe('');
      const [chat] = template(find(objects, 'Deployment', 'chat')).spec.containers;
      expect(chat.envFrom).toContainEqual({ secretRef: { name: 'trainyard-s3', optional: true } });
      // The publisher: the registry's image in its publish-base-models mode, the only mount of the models volume.
      const cron = find(objects, 'CronJob', 'publish-base-models');
      const job = (cron.spec as { jobTemplate: { spec: { template: PodTemplate } } }).jobTemplate.spec.template;
      const [publisher] = job.spec.containers;
      expect(publisher.args).toEqual(['node', 'dist/apps/model-registry/main.js', 'publish-base-models']);
      expect(env(publisher, 'DATABASE_URL')?.valueFrom).toEqual({ secretKeyRef: { name: 'trainyard-database', key: 'DATABASE_URL' } });
      expect(job.metadata?.labels?.['trainyard.dev/database']).toBe('true');
      const mount = publisher.volumeMounts?.find((m) => m.mountPath === env(publisher, 'MODELS_DIR')?.value);
      expect(job.spec.volumes?.find((v) => v.name === mount?.name)?.persistentVolumeClaim?.claimName).toBe('trainyard-models');
    });

    it('scales the workers on their work queues with KEDA, in place of a CPU autoscaler', () => {
      type Trigger = { type: string; metadata: Record<string, string> };
      const scaled = ofKind(objects, 'ScaledObject').map((o) => {
        const spec = o.spec as { scaleTargetRef: { name: string }; minReplicaCount: number; triggers: Trigger[] };
        return { target: spec.scaleTargetRef.name, min: spec.minReplicaCount, triggers: spec.triggers.map((t) => [t.type, t.metadata['stream'], t.metadata['consumer']]) };
      });
      expect(scaled).toEqual([
        { target: 'inference-worker', min: 1, triggers: [['nats-jetstream', 'INFERENCE_WORK', 'inference-workers']] },
        { target: 'training-worker', min: 0, triggers: [['nats-jetstream', 'TRAINING_WORK', 'training-workers']] },
      ]);
      const hpas = ofKind(objects, 'HorizontalPodAutoscaler').map((h) => (h.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name);
      expect(hpas.sort()).toEqual(['chat', 'gateway']);
      // The scaler reads the lag from NATS's monitoring port, which a policy opens to KEDA's namespace.
      expect(JSON.stringify(find(objects, 'NetworkPolicy', 'nats-monitoring-from-keda').spec)).toContain('"port":8222');
      expect(find(objects, 'Deployment', 'training-worker').spec?.['replicas']).toBeUndefined();
    });

    it('runs two or more of the gateway, chat, the registry and the orchestrator', () => {
      for (const name of ['model-registry', 'training-orchestrator']) expect([name, find(objects, 'Deployment', name).spec?.['replicas']]).toEqual([name, 2]);
      for (const name of ['gateway', 'chat']) {
        const hpa = find(objects, 'HorizontalPodAutoscaler', name).spec as { minReplicas: number };
        expect([name, hpa.minReplicas]).toEqual([name, 2]);
      }
    });

    it('runs NATS as a three-server cluster that keeps three copies of every stream', () => {
      const nats = find(objects, 'StatefulSet', 'nats');
      expect(nats.spec?.['replicas']).toBe(3);
      const conf = find(objects, 'ConfigMap', 'nats-config').data?.['nats.conf'] ?? '';
      expect(conf).toMatch(/server_name:\s*\$POD_NAME/);
      for (const i of [0, 1, 2]) expect(conf).toContain(`nats://nats-${i}.nats-headless:6222`);
      const [c] = template(nats).spec.containers;
      expect(env(c, 'POD_NAME')?.valueFrom?.fieldRef).toEqual({ fieldPath: 'metadata.name' });
      expect(c.ports?.map((p) => p.containerPort)).toContain(6222);
      const routes = JSON.stringify(find(objects, 'NetworkPolicy', 'nats-from-trainyard').spec);
      expect(routes).toContain('"port":6222');
      const config = ofKind(objects, 'ConfigMap').find((m) => m.metadata.name.startsWith('trainyard-config-'));
      expect(config?.data?.['JETSTREAM_REPLICAS']).toBe('3');
      const pdb = ofKind(objects, 'PodDisruptionBudget').find((p) => selects((p.spec as { selector: Selector }).selector, template(nats).metadata.labels));
      expect(pdb?.spec?.['maxUnavailable']).toBe(1);
    });

    it('pulls every Trainyard image from a registry with a pinned tag', () => {
      for (const w of ofKind(objects, 'Deployment')) {
        for (const c of containersOf(w)) expect(c.image).toMatch(/^[a-z0-9.-]+\/.+:[\w.-]+$/);
      }
    });
  });

  describe('components/webgpu-workers', () => {
    const objects = renderBaseWith('webgpu-workers');

    it('renders valid objects', () => {
      expect(objects.map(schemaProblem).filter(Boolean)).toEqual([]);
    });

    it('runs the workers from the WebGPU image on webgpu, with the graphics capability, each requesting a GPU on the GPU node pool', () => {
      for (const name of WORKERS) {
        const spec = template(find(objects, 'Deployment', name)).spec;
        const [c] = spec.containers;
        expect(c.image).toBe('trainyard-webgpu-worker');
        expect(c.resources?.limits?.['nvidia.com/gpu']).toBe(1);
        expect(env(c, 'COMPUTE_BACKEND')?.value).toBe('webgpu');
        expect(env(c, 'REQUIRE_GPU')?.value).toBe('true');
        expect(env(c, 'NVIDIA_DRIVER_CAPABILITIES')?.value?.split(',')).toEqual(expect.arrayContaining(['compute', 'utility', 'graphics']));
        expect(spec.nodeSelector).toEqual({ 'trainyard.dev/gpu': 'true' });
        expect(spec.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
      }
    });
  });
});
