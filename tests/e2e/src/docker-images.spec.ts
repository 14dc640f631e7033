import { validate } from 'dockerfile-utils';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// Docker cannot run on the build machines: the Dockerfiles are linted with dockerfile-utils
// (the validator behind the Dockerfile language server; hadolint is on neither npm nor
// Debian) and checked for what the deployment relies on.

const ROOT = join(__dirname, '../../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
// Each file with the stage that every image it builds runs on.
const DOCKERFILES = [
  ['Dockerfile', 'runtime'],
  ['docker/gpu-worker.Dockerfile', 'gpu-worker'],
  ['docker/webgpu-worker.Dockerfile', 'webgpu-worker'],
] as const;

/** Instructions of each stage, by name (continuation lines joined, comments dropped). */
function stages(text: string): Map<string, string[]> {
  const lines = text.replace(/\\\n/g, ' ').split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const result = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of lines) {
    const from = /^FROM\s+\S+(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) result.set(from[1] ?? `#${result.size}`, (current = []));
    current.push(line);
  }
  return result;
}
const lastStage = (text: string) => [...stages(text).values()].pop() ?? [];

describe.each(DOCKERFILES)('%s', (path, runtimeStage) => {
  const text = read(path);

  it('passes the Dockerfile linter', () => {
    expect(validate(text).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
  });

  it('runs as a non-root user under an init process, with a healthcheck on /health/live', () => {
    const image = (stages(text).get(runtimeStage) ?? []).join('\n');
    expect(image).toMatch(/^USER node$/m);
    expect(image).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(image).toMatch(/^HEALTHCHECK .*\/health\/live/m);
    expect(image).toMatch(/^CMD \["sh", "-c", "exec node dist\/apps\/\$APP\/main\.js"\]$/m);
  });

  it('pins its base images', () => {
    for (const [, image] of text.matchAll(/^ARG \w+_IMAGE=(\S+)$/gm)) expect(image).toMatch(/:\d/);
  });
});

describe('Dockerfile', () => {
  const text = read('Dockerfile');

  it('builds with Nx and ships production dependencies only', () => {
    expect(text).toContain('npx nx run-many -t build');
    expect(text).toContain('npm ci --omit=dev --omit=optional');
    expect(text).toMatch(/COPY --from=prod-deps .*\/app\/node_modules/);
  });

  it('has a CPU worker target on wasm, and the services as the default (last) target', () => {
    expect(text).toMatch(/^FROM runtime AS cpu-worker\nENV APP=inference-worker \\\n(.+\n)*?\s+COMPUTE_BACKEND=wasm/m);
    expect(lastStage(text)[0]).toBe('FROM runtime AS service');
  });
});

describe('docker/gpu-worker.Dockerfile', () => {
  const text = read('docker/gpu-worker.Dockerfile');

  it('runs on CUDA 11.8 with cuDNN 8, installs tfjs-node-gpu 4.22 and requires the GPU', () => {
    expect(text).toMatch(/^ARG CUDA_IMAGE=nvidia\/cuda:11\.8\.\d+-cudnn8-runtime-ubuntu22\.04$/m);
    expect(lastStage(text)[0]).toBe('FROM ${CUDA_IMAGE} AS gpu-worker');
    expect(text).toContain('npm install --no-save --omit=dev --no-audit --no-fund --foreground-scripts @tensorflow/tfjs-node-gpu@4.22.0');
    const image = lastStage(text).join('\n');
    expect(image).toMatch(/COMPUTE_BACKEND=tensorflow/);
    expect(image).toMatch(/REQUIRE_GPU=true/);
  });
});

describe('docker/webgpu-worker.Dockerfile', () => {
  const text = read('docker/webgpu-worker.Dockerfile');
  const image = lastStage(text).join('\n');

  it('runs on Node with the Vulkan loader and no CUDA, and checks that Dawn\'s binding is installed', () => {
    expect(lastStage(text)[0]).toBe('FROM ${NODE_IMAGE} AS webgpu-worker');
    expect(image).toMatch(/apt-get install -y --no-install-recommends .*\blibvulkan1\b/);
    expect([...stages(text).values()].flat().join('\n')).not.toMatch(/cuda/i);
    expect(text).toContain('test -f "node_modules/webgpu/dist/$platform/dawn.node"');
  });

  it('asks for the graphics driver capability (the NVIDIA Vulkan driver) and requires a GPU on webgpu', () => {
    const capabilities = /NVIDIA_DRIVER_CAPABILITIES=(\S+)/.exec(image)?.[1].split(',');
    expect(capabilities).toEqual(expect.arrayContaining(['compute', 'utility', 'graphics']));
    expect(image).toMatch(/COMPUTE_BACKEND=webgpu/);
    expect(image).toMatch(/REQUIRE_GPU=true/);
  });

  it('adds an ICD for the NVIDIA driver\'s EGL library to the Vulkan loader\'s search, which a headless container needs', () => {
    const added = /VK_ADD_DRIVER_FILES=(\S+)/.exec(image)?.[1];
    expect(added).toBeDefined();
    expect(image).not.toMatch(/VK_DRIVER_FILES=/);
    expect(image).toContain(`COPY docker/nvidia-egl-icd.json ${added}`);
    expect(JSON.parse(read('docker/nvidia-egl-icd.json')).ICD.library_path).toBe('libEGL_nvidia.so.0');
  });
});
