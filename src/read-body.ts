import type { IncomingMessage } from 'node:http';

/**
 * Reads a whole request body of at most `limit` bytes. A declared Content-Length over the
 * limit is refused before reading; a body that grows past it is cut off (the socket is
 * destroyed) and refused. `tooLarge` builds the caller's own 413 error.
 */
export async function readBodyUpTo(req: IncomingMessage, limit: number, tooLarge: () => Error): Promise<Buffer> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.destroy();
      throw tooLarge();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
