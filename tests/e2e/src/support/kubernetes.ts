import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/** The fields of rendered objects these tests look at; everything else is checked by schema. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

export const ROOT = join(__dirname, '../../../..');

/** `kubectl kustomize` works offline; without kubectl the tests fail rather than pass empty. */
export function render(dir: string): K8sObject[] {
  let out: string;
  try {
    out = execFileSync('kubectl', ['kustomize', join(ROOT, dir)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('kubectl is not installed: the Kubernetes manifests cannot be rendered (install kubectl)');
    throw new Error(`kubectl kustomize ${dir} failed: ${e.stderr ?? e.message}`);
  }
  return parseAllDocuments(out).map((doc) => {
    if (doc.errors.length) throw new Error(`${dir}: ${doc.errors[0].message}`);
    return doc.toJS() as K8sObject;
  });
}

type Validated = { validate(): void };
type ModelClass = new (data: unknown) => Validated;

/** Packages of the custom resources the manifests use, by API group (their CRDs' schemas). */
const CUSTOM_RESOURCE_MODELS: Record<string, string> = { 'keda.sh': '@kubernetes-models/keda' };

/**
 * Validates an object against the Kubernetes OpenAPI schema of its apiVersion and kind, as
 * vendored (precompiled) by the kubernetes-models package: types, required fields, enums.
 * Custom resources are checked against their CRD's schema (CUSTOM_RESOURCE_MODELS).
 * Returns the problem, or undefined when it is valid.
 */
export function schemaProblem(object: K8sObject): string | undefined {
  const [group, version] = object.apiVersion.includes('/') ? object.apiVersion.split('/') : [undefined, object.apiVersion];
  let models: Record<string, ModelClass>;
  try {
    const custom = group ? CUSTOM_RESOURCE_MODELS[group] : undefined;
    models = require(custom ? `${custom}/${group}/${version}` : group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`);
  } catch {
    return `no schema for apiVersion ${object.apiVersion}`;
  }
  const Model = models[object.kind];
  if (!Model) return `no schema for ${object.apiVersion} ${object.kind}`;
  try {
    new Model(object).validate();
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
