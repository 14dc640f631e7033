/**
 * A filename is only a label (files are stored under their id), but it is echoed in headers and
 * stored as text: no control characters (NUL, CR, LF, ...), and a length a filesystem would take.
 */
export function isAcceptableFilename(name: string): boolean {
  return name.length >= 1 && name.length <= 255 && ![...name].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f');
}

/**
 * Content-Disposition for a download (RFC 6266): a plain-ASCII `filename` for old clients and the
 * exact name, percent-encoded, in `filename*`. A header value can carry neither non-Latin-1
 * characters (Node refuses them: a 500) nor quotes and line breaks (header injection).
 */
export function attachmentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  let encoded: string;
  try {
    encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  } catch {
    return `attachment; filename="${fallback}"`;
  }
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
