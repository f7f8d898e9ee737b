// An OTLP/HTTP (JSON) traces receiver on loopback: every span it is sent, as the proxy encoded it.
import { createServer } from 'node:http';
import { closeServer, listen } from './http.js';

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: { stringValue?: string; intValue?: string } }[];
  status: { code?: number };
}

export interface OtlpCollector {
  port: number;
  /** The traces URL to give a proxy. */
  endpoint: string;
  spans: OtlpSpan[];
  /** The resource attributes and content type of every export, in order. */
  exports: { resource: unknown; contentType: string | undefined }[];
  close(): Promise<void>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const spans: OtlpSpan[] = [];
  const exports: OtlpCollector['exports'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
    });
    req.on('end', () => {
      for (const rs of JSON.parse(body).resourceSpans) {
        exports.push({ resource: rs.resource, contentType: req.headers['content-type'] });
        for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.end('{}');
    });
  });
  const port = await listen(server);
  return {
    port,
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    exports,
    close: () => closeServer(server),
  };
}

export function attributeOf(span: OtlpSpan, key: string): string | undefined {
  const found = span.attributes.find((a) => a.key === key)?.value;
  return found?.stringValue ?? found?.intValue;
}
