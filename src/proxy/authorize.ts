// What the handler does around the access pipeline for the external mechanisms: reads the request body a step
// asked for (up to its bound, then replays it to the backend) and answers a refusal that carries a body (an
// authorization service's own answer).
import type { AccessVerdict } from './access/pipeline.js';
import type { ProxyResponse, RequestBody } from './exchange.js';
import { ReplayBody } from './upstream/body-gate.js';
import { grpcAnswerLines } from './wire/grpc-status.js';

/** A request body read whole up to `limit` bytes, with the body the backend gets after it; undefined: larger. */
export function bufferedBody(
  body: RequestBody,
  limit: number,
): Promise<{ bytes: Buffer; replay: RequestBody } | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (whole: boolean): void => {
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('close', onClose);
      if (!whole) {
        body.pause();
        resolve(undefined);
      } else resolve({ bytes: Buffer.concat(chunks, size), replay: new ReplayBody(chunks, body, true) });
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit) finish(false);
    };
    const onEnd = (): void => finish(true);
    // A client gone mid-body: nothing is asked; the response's close ends the request.
    const onClose = (): void => {
      if (!body.readableEnded) finish(false);
    };
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('close', onClose);
  });
}

/** Answers a refusal with its body: status, the service's lines, the body (a gRPC client: its gRPC status). */
export function respondWithBody(
  res: ProxyResponse,
  refusal: AccessVerdict & { allow: false; body: Buffer },
  close: boolean,
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (res.grpc) {
    res.writeHead(200, grpcAnswerLines(refusal.status));
    res.end();
    return;
  }
  const lines = [
    'server',
    'portico',
    ...(refusal.headers ?? []),
    'content-length',
    String(refusal.body.length),
  ];
  if (close) lines.push('connection', 'close');
  try {
    res.writeHead(refusal.status, lines, true);
  } catch {
    // A line Node will not send (odd bytes from the service): the refusal goes without the service's lines.
    res.writeHead(refusal.status, ['server', 'portico', 'content-length', '0']);
    res.end();
    return;
  }
  res.end(refusal.body);
}
