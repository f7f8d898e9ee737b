// One response written by the proxy's own HTTP/1.1 server: the head is built once from a flat header list,
// framed (content-length as given, else chunked, else close-delimited for HTTP/1.0 clients) and sent with
// the first body bytes in one socket write, or alone when the upstream's head came without any (sendHead).
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ProxyResponse, ResponseListener } from '../exchange.js';
import { equalsLowerCase, InvalidHeaderError, isHeaderName, isValidFieldValue } from '../wire/http-syntax.js';
import { LAST_CHUNK, lastChunk } from '../wire/trailers.js';

/** What the connection learns from its response. */
export interface ResponseConnection {
  readonly socket: Socket;
  /** No further request will be read on the connection (its server is closing, or the client half-closed). */
  readonly lastResponse: boolean;
  responseFinished(response: ClientResponse): void;
  /** Answers `status` (or cuts a response under way) and closes without reading the rest of the request. */
  abortRequest(status: number): void;
}

const statusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    statusLines.set(status, line);
  }
  return line;
}

// The Date header for responses that lack one, rebuilt at most once a second.
let dateSecond = -1;
let dateLine = '';
function currentDateLine(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateLine = `date: ${new Date(now).toUTCString()}\r\n`;
  }
  return dateLine;
}

/** Heads and bodies up to this size go out as one buffer (one write); larger ones as two writes. */
const COALESCE_BYTES = 16 * 1024;
/** Bodies up to this size go out with their head as one string (latin1 keeps every byte as it is). */
const TEXT_BYTES = 1024;

export class ClientResponse implements ProxyResponse {
  statusCode = 200;
  /** gRPC needs HTTP/2: an HTTP/1.1 request gets HTTP answers. */
  readonly grpc = false;
  headersSent = false;
  /** end() ran: every byte is with the socket. */
  writableFinished = false;
  /** The connection closes once this response is written. */
  closeAfter: boolean;
  bodyBytesSent = 0;
  listener: ResponseListener | undefined = undefined;
  /** write() returned false; the next 'drain' of the socket is reported to the listener. */
  awaitingDrain = false;
  private pendingHead: string | undefined = undefined;
  private chunked = false;
  private noBody = false;
  private closed = false;

  constructor(
    private readonly connection: ResponseConnection,
    private readonly headRequest: boolean,
    /** The client speaks HTTP/1.0. */
    private readonly http10: boolean,
    keepAlive: boolean,
  ) {
    this.closeAfter = !keepAlive;
  }

  /**
   * Sets the status and header lines (name, value, ...), sent with the first body bytes. `validate`: check
   * names and values (set from configuration); throws InvalidHeaderError for a header that cannot be sent.
   */
  writeHead(status: number, lines: string[], validate = false): void {
    if (this.headersSent) throw new Error('response head already written');
    let text = '';
    let hasLength = false;
    let hasDate = false;
    let saysClose = false;
    for (let i = 0; i < lines.length; i += 2) {
      const name = lines[i]!;
      const value = lines[i + 1]!;
      if (validate && (!isHeaderName(name) || !isValidFieldValue(value)))
        throw new InvalidHeaderError(`invalid character in header ${JSON.stringify(name)}`);
      const n = name.length;
      if (n === 14 && equalsLowerCase(name, 'content-length')) hasLength = true;
      else if (n === 4 && equalsLowerCase(name, 'date')) hasDate = true;
      else if (n === 10 && equalsLowerCase(name, 'connection') && equalsLowerCase(value, 'close'))
        saysClose = true;
      else if (n === 17 && equalsLowerCase(name, 'transfer-encoding')) continue;
      text += `${name}: ${value}\r\n`;
    }
    this.finishHead(status, text, hasLength, hasDate, saysClose, saysClose);
  }

  writeHeadText(status: number, lines: string, hasLength: boolean, hasDate: boolean, close: boolean): void {
    if (this.headersSent) throw new Error('response head already written');
    this.finishHead(status, lines, hasLength, hasDate, close, false);
  }

  /** The head from its header lines: framing, date and connection lines added as the response needs them. */
  private finishHead(
    status: number,
    lines: string,
    hasLength: boolean,
    hasDate: boolean,
    close: boolean,
    saysClose: boolean,
  ): void {
    let head = statusLine(status) + lines;
    if (close || this.connection.lastResponse) this.closeAfter = true;
    this.noBody = this.headRequest || status === 204 || status === 304 || status < 200;
    if (!hasLength && !this.noBody) {
      if (this.http10) this.closeAfter = true;
      else {
        this.chunked = true;
        head += 'transfer-encoding: chunked\r\n';
      }
    }
    if (!hasDate) head += currentDateLine();
    if (this.http10 && !this.closeAfter) head += 'connection: keep-alive\r\n';
    else if (this.closeAfter && !saysClose) head += 'connection: close\r\n';
    this.statusCode = status;
    this.headersSent = true;
    this.pendingHead = `${head}\r\n`;
  }

  /**
   * A body chunk (copied: the caller may reuse its buffer); false when the socket's buffer is full (wait for
   * the listener's onResponseDrain).
   */
  write(chunk: Buffer): boolean {
    if (this.closed || this.writableFinished) return true;
    if (this.noBody || chunk.length === 0) {
      this.sendHead();
      return true;
    }
    this.bodyBytesSent += chunk.length;
    const ok = this.chunked ? this.sendChunk(chunk) : this.send(chunk, '');
    if (!ok) this.awaitingDrain = true;
    return ok;
  }

  /** Ends the response, with its last body bytes if given (copied); trailers go along when it is chunked. */
  end(chunk?: Buffer, trailers?: string[]): void {
    if (this.closed || this.writableFinished) return;
    if (!this.headersSent) this.writeHead(this.statusCode, ['content-length', '0']);
    const last = this.chunked ? lastChunk(trailers) : LAST_CHUNK;
    if (this.noBody || chunk === undefined || chunk.length === 0) {
      if (this.chunked) this.send(undefined, last);
      else this.sendHead();
    } else {
      this.bodyBytesSent += chunk.length;
      if (this.chunked) this.sendChunk(chunk, last);
      else this.send(chunk, '');
    }
    this.writableFinished = true;
    this.connection.responseFinished(this);
    this.close();
  }

  /**
   * The request cannot be completed (its body stopped, or did not arrive in time): answers `status` with no body
   * and closes the connection without waiting for the rest of the request. Once a head went out, cuts instead.
   */
  abort(status: number): void {
    if (this.closed || this.writableFinished) return;
    this.connection.abortRequest(status);
    this.close();
  }

  get protocol(): string {
    return this.http10 ? 'HTTP/1.0' : 'HTTP/1.1';
  }

  /** Abandons the response: the connection is cut (a client must not take a short body for a whole one). */
  destroy(): void {
    this.connection.socket.destroy();
    this.close();
  }

  /** Reports the end once (from end(), or from the connection when its socket closed first). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.listener?.onResponseClose();
  }

  sendHead(): void {
    const head = this.pendingHead;
    if (head === undefined) return;
    this.pendingHead = undefined;
    this.connection.socket.write(head, 'latin1');
  }

  /** The pending head (if any), `chunk` and `suffix`, in one write when small. */
  private send(chunk: Buffer | undefined, suffix: string): boolean {
    const socket = this.connection.socket;
    const head = this.pendingHead;
    this.pendingHead = undefined;
    const bodyLength = chunk === undefined ? 0 : chunk.length;
    if (head === undefined && suffix === '') return socket.write(Buffer.from(chunk!));
    const prefix = head ?? '';
    if (bodyLength === 0) return socket.write(prefix + suffix, 'latin1');
    if (bodyLength <= TEXT_BYTES) {
      // As text: one string write, where a buffer would take three calls into Node (allocate, write, copy).
      return socket.write(`${prefix}${chunk!.toString('latin1')}${suffix}`, 'latin1');
    }
    if (bodyLength <= COALESCE_BYTES) {
      const total = prefix.length + bodyLength + suffix.length;
      const out = Buffer.allocUnsafe(total);
      out.write(prefix, 0, 'latin1');
      chunk!.copy(out, prefix.length);
      if (suffix !== '') out.write(suffix, prefix.length + bodyLength, 'latin1');
      return socket.write(out);
    }
    socket.cork();
    if (prefix !== '') socket.write(prefix, 'latin1');
    let ok = socket.write(Buffer.from(chunk!));
    if (suffix !== '') ok = socket.write(suffix, 'latin1');
    socket.uncork();
    return ok;
  }

  /** A chunk; `last`: the last-chunk (with trailers) that ends the body after it. */
  private sendChunk(chunk: Buffer, last?: string): boolean {
    const head = this.pendingHead ?? '';
    this.pendingHead = `${head}${chunk.length.toString(16)}\r\n`;
    return this.send(chunk, last === undefined ? '\r\n' : `\r\n${last}`);
  }
}
