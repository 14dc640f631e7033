import type { ResolveModelReply } from '@trainyard/contracts';
import { ResolutionCache, resolutionKey } from './resolution-cache';

function trained(modelId: string, step: number): ResolveModelReply {
  return { base_model: 'base', base_model_dir: '/models/base', base_model_bundle: null, model_id: modelId, step, adapter_bundle: `/a/${modelId}/${step}`, adapter_sha256: 'f'.repeat(64) };
}

const base: ResolveModelReply = { base_model: 'base', base_model_dir: '/models/base', base_model_bundle: null, model_id: null, step: null, adapter_bundle: null, adapter_sha256: null };

describe('ResolutionCache', () => {
  let now: number;
  const clock = () => now;
  beforeEach(() => (now = 1_000));

  it('keeps at most maxEntries, dropping the least recently used', () => {
    const cache = new ResolutionCache(2, 60_000, clock);
    cache.set('a', trained('m1', 0));
    cache.set('b', trained('m2', 0));
    expect(cache.get('a')).toBeDefined(); // now b is the least recently used
    cache.set('c', trained('m3', 0));
    expect(cache.size).toBe(2);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toEqual(trained('m1', 0));
    expect(cache.get('c')).toEqual(trained('m3', 0));
  });

  it('forgets an entry ttlMs after it was stored, however often it is used', () => {
    const cache = new ResolutionCache(10, 30_000, clock);
    cache.set('a', trained('m1', 4));
    now += 29_999;
    expect(cache.get('a')).toEqual(trained('m1', 4));
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('drops every name of a model at once, and only that model', () => {
    const cache = new ResolutionCache(10, 60_000, clock);
    cache.set('acme/p/x', trained('m1', 3));
    cache.set('acme/p/x:step3', trained('m1', 3));
    cache.set('wandb-artifact:///acme/p/x:latest', trained('m1', 3));
    cache.set('acme/p/y', trained('m2', 1));
    cache.set('base', base);
    cache.evictModel('m1');
    expect(cache.get('acme/p/x')).toBeUndefined();
    expect(cache.get('acme/p/x:step3')).toBeUndefined();
    expect(cache.get('wandb-artifact:///acme/p/x:latest')).toBeUndefined();
    expect(cache.get('acme/p/y')).toEqual(trained('m2', 1));
    expect(cache.get('base')).toEqual(base);
  });

  it('evicts a name by the model it resolves to now, not the one it used to', () => {
    const cache = new ResolutionCache(10, 60_000, clock);
    cache.set('acme/p/x', trained('old', 0));
    cache.set('acme/p/x', trained('new', 0)); // deleted and created again under the same name
    cache.evictModel('old');
    expect(cache.get('acme/p/x')).toEqual(trained('new', 0));
    cache.evictModel('new');
    expect(cache.get('acme/p/x')).toBeUndefined();
  });

  it('clears everything', () => {
    const cache = new ResolutionCache(10, 60_000, clock);
    cache.set('a', trained('m1', 0));
    cache.set('b', base);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.get('a')).toBeUndefined();
  });

  it('keys a name by the caller: the same string from another entity is another entry', () => {
    const acme = resolutionKey({ entity_id: 'e1', entity_name: 'acme', model: 'acme/p/x' });
    expect(resolutionKey({ entity_id: 'e2', entity_name: 'globex', model: 'acme/p/x' })).not.toBe(acme);
    expect(resolutionKey({ entity_id: 'e1', entity_name: 'acme', model: 'acme/p/x:step1' })).not.toBe(acme);
    expect(resolutionKey({ entity_id: 'e1', entity_name: 'acme', model: 'acme/p/x' })).toBe(acme);
  });
});
