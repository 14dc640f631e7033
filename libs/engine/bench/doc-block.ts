import * as fs from 'node:fs';

/**
 * Rewrites the block a bench owns in a document, between `<!-- <name>: begin -->` and
 * `<!-- <name>: end -->`, and leaves the rest of the document (the prose around the figures)
 * as it is. A document without the block gets it appended.
 */
export function writeDocBlock(file: string, name: string, body: string): void {
  const begin = `<!-- ${name}: begin -->\n`;
  const end = `<!-- ${name}: end -->`;
  const doc = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  const from = doc.indexOf(begin);
  const to = from >= 0 ? doc.indexOf(end, from) : -1;
  const block = begin + body.trimEnd() + '\n' + end;
  const next = from >= 0 && to >= 0 ? doc.slice(0, from) + block + doc.slice(to + end.length) : doc.trimEnd() + (doc ? '\n\n' : '') + block + '\n';
  fs.writeFileSync(file, next);
}
