import { ServiceError } from '@trainyard/contracts';
import { metadataFilter } from './metadata-filter';

describe('metadataFilter', () => {
  it('reads metadata[k]=v pairs as a plain query parser leaves them', () => {
    expect(metadataFilter({ limit: '2', 'metadata[team]': 'support', 'metadata[env]': 'prod' })).toEqual({ team: 'support', env: 'prod' });
  });

  it('reads them as an extended query parser nests them', () => {
    expect(metadataFilter({ metadata: { team: 'support' } })).toEqual({ team: 'support' });
  });

  it('is null for metadata=null and undefined without a filter', () => {
    expect(metadataFilter({ metadata: 'null' })).toBeNull();
    expect(metadataFilter({ metadata: '' })).toBeNull();
    expect(metadataFilter({ after: 'ftjob-x' })).toBeUndefined();
  });

  it('refuses a pair given twice and a metadata that is neither null nor pairs', () => {
    expect(() => metadataFilter({ 'metadata[team]': ['a', 'b'] })).toThrow(ServiceError);
    expect(() => metadataFilter({ metadata: 'team' })).toThrow(ServiceError);
    expect(() => metadataFilter({ 'metadata[team]': 'a\u0000b' })).toThrow(ServiceError);
    expect(() => metadataFilter({ 'metadata[\ud800]': 'a' })).toThrow(ServiceError);
  });
});
