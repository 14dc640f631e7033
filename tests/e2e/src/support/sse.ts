/**
 * The event blocks of a Server-Sent Events body as they arrive: the text between blank lines
 * ("id: ...\nevent: ...\ndata: ..."), one at a time. A consumer that stops early (break,
 * return) cancels the body, which closes the stream.
 */
export async function* sseBlocks(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        yield block;
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}
