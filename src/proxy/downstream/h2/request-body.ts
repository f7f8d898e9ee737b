// An HTTP/2 request body as the handler reads it: the stream's DATA with backpressure, ended only by the
// client's END_STREAM. Node also ends the readable side of a stream the client reset: that must reach an
// HTTP/1.1 backend as a broken upload, never as a complete (shorter) body. A trailing HEADERS frame becomes
// the body's trailers (Node emits it before the end).
import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { Readable } from 'node:stream';
import { type BodyLimit, type RequestBody, withinLimit } from '../../exchange.js';
import { headerLines } from '../../wire/h2-header-block.js';
import { forwardableTrailers } from '../../wire/trailers.js';

const { NGHTTP2_NO_ERROR } = constants;

function ignore(): void {}

export class H2RequestBody extends Readable implements RequestBody {
  trailers: string[] | undefined = undefined;
  received = 0;
  limit: BodyLimit | undefined = undefined;

  constructor(private readonly stream: ServerHttp2Stream) {
    super();
    // Whoever reads learns of a broken upload from 'close' (as with an HTTP/1.1 body).
    this.on('error', ignore);
    stream.on('data', (chunk: Buffer) => {
      // Over the limit: the handler answers 413 and resets the stream; nothing more is buffered.
      if (!withinLimit(this, chunk)) return;
      if (!this.push(chunk)) stream.pause();
    });
    stream.once('trailers', (headers: IncomingHttpHeaders) => {
      this.trailers = forwardableTrailers(headerLines(headers));
    });
    stream.on('end', () => {
      const code = stream.rstCode ?? NGHTTP2_NO_ERROR;
      if (code === NGHTTP2_NO_ERROR) this.push(null);
      else this.destroy(new Error(`client reset the stream (code ${code})`));
    });
  }

  override _read(): void {
    this.stream.resume();
  }
}
