import { attachmentDisposition, isAcceptableFilename } from './filenames';

describe('upload filenames', () => {
  it.each(['train.jsonl', '../../etc/passwd', '\u202eldnoj.exe', '😀 data.jsonl', 'x'.repeat(255)])('accepts %p as a label', (name) => {
    expect(isAcceptableFilename(name)).toBe(true);
  });

  it.each(['', 'a\u0000b', 'line\nbreak', 'cr\r', 'tab\tname', 'del\u007f', '\u001b[31mred', 'x'.repeat(256)])('refuses %p', (name) => {
    expect(isAcceptableFilename(name)).toBe(false);
  });
});

describe('download Content-Disposition', () => {
  it('keeps an ASCII name as it is', () => {
    expect(attachmentDisposition('train.jsonl')).toBe(`attachment; filename="train.jsonl"; filename*=UTF-8''train.jsonl`);
  });

  it('carries any other name exactly in filename*, with a header-safe ASCII fallback', () => {
    const header = attachmentDisposition('dé"jà\\😀\r\n.jsonl');
    expect(header).toMatch(/^[\x20-\x7e]*$/);
    expect(header).toBe(`attachment; filename="d__j______.jsonl"; filename*=UTF-8''d%C3%A9%22j%C3%A0%5C%F0%9F%98%80%0D%0A.jsonl`);
    const encoded = /filename\*=UTF-8''(.*)$/.exec(header)?.[1] ?? '';
    expect(decodeURIComponent(encoded)).toBe('dé"jà\\😀\r\n.jsonl');
  });

  it('falls back to the ASCII form for a name that cannot be encoded (half a surrogate pair)', () => {
    expect(attachmentDisposition('a\ud800b')).toBe('attachment; filename="a_b"');
  });
});
