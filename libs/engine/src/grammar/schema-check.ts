import { ANY_WHITESPACE, ONE_LINE, SchemaProbe } from './schema-probe';

/** Schemas seen to compile, most recently used last: agents send the same tools on every turn. */
const KNOWN_GOOD_LIMIT = 256;

/**
 * Whether a JSON schema compiles into a decoding grammar exactly as the inference workers
 * compile it (strict, one line), without loading a tokenizer or a model: services in front
 * of the inference queue use it to refuse a schema before any work is queued.
 */
export class JsonSchemaChecker {
  private readonly probe = new SchemaProbe();
  private readonly knownGood = new Set<string>();

  /** null when the schema compiles; otherwise why it does not. */
  async problem(schema: unknown): Promise<string | null> {
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON schema object';
    const text = JSON.stringify(schema);
    if (this.knownGood.delete(text)) {
      this.knownGood.add(text);
      return null;
    }
    try {
      await this.probe.check(text, true, ANY_WHITESPACE, ONE_LINE);
    } catch (err) {
      return `cannot be compiled: ${(err as Error).message}`;
    }
    this.knownGood.add(text);
    if (this.knownGood.size > KNOWN_GOOD_LIMIT) this.knownGood.delete(this.knownGood.values().next().value as string);
    return null;
  }
}
