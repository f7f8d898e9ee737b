import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redirectLocation, rewritePath } from '../../src/proxy/routing/rewrite.js';
import { hostWithoutPort, lookupHost } from '../../src/proxy/routing/route-table.js';
import { compileSnapshot } from '../../src/proxy/routing/snapshot.js';
import { isInternalAddress } from '../../src/proxy/wire/headers.js';
import { listener, simpleFleet, vhost } from '../support/fleet.js';

describe('routing pieces', () => {
  it('tells internal client addresses from external ones', () => {
    for (const a of [
      '127.0.0.1',
      '10.2.3.4',
      '172.16.0.1',
      '192.168.1.1',
      '::1',
      '::ffff:10.0.0.1',
      'fd00::1',
    ]) {
      assert.equal(isInternalAddress(a), true, a);
    }
    for (const a of ['8.8.8.8', '172.32.0.1', '2001:db8::1', '::ffff:1.2.3.4'])
      assert.equal(isInternalAddress(a), false, a);
  });

  it('strips the Host port, IPv6 included, and lower-cases', () => {
    assert.equal(hostWithoutPort('Example.COM:8080'), 'example.com');
    assert.equal(hostWithoutPort('[::1]:80'), '[::1]');
    assert.equal(hostWithoutPort('[::1]'), '[::1]');
    assert.equal(hostWithoutPort(undefined), '');
  });

  it('looks hosts up exact first, then the longest wildcard, then *', () => {
    const vhosts = [
      vhost(80, 'a.b.example.com', []),
      vhost(80, '*.b.example.com', []),
      vhost(80, '*.example.com', []),
      vhost(80, '*', []),
    ];
    const config = simpleFleet(vhosts);
    const table = compileSnapshot(config, '0').listeners.get(listener(80).name)!.hosts;
    assert.equal(lookupHost(table, 'a.b.example.com')?.hostname, 'a.b.example.com');
    assert.equal(lookupHost(table, 'x.b.example.com')?.hostname, '*.b.example.com');
    assert.equal(lookupHost(table, 'x.y.example.com')?.hostname, '*.example.com');
    assert.equal(lookupHost(table, 'example.com')?.hostname, '*');
  });

  it('replaces a matched prefix segment by segment', () => {
    const prefix = { type: 'PathPrefix', value: '/foo' } as const;
    const to = (value: string) => ({ type: 'ReplacePrefixMatch', value }) as const;
    assert.equal(rewritePath('/foo', to('/bar'), prefix), '/bar');
    assert.equal(rewritePath('/foo/x', to('/bar'), prefix), '/bar/x');
    assert.equal(rewritePath('/foo/', to('/bar'), prefix), '/bar/');
    assert.equal(rewritePath('/foo/x', to('/'), prefix), '/x');
    assert.equal(rewritePath('/foo', to('/'), prefix), '/');
    assert.equal(rewritePath('/foo/x', to('/bar/'), { type: 'PathPrefix', value: '/foo/' }), '/bar/x');
    assert.equal(rewritePath('/any/thing', { type: 'ReplaceFullPath', value: '/fixed' }, prefix), '/fixed');
  });

  it('derives redirect ports as the Gateway API specifies', () => {
    const request = { scheme: 'http' as const, host: 'h.test', path: '/p', search: '?q', listenerPort: 8080 };
    const redirect = (extra: object) =>
      redirectLocation({ type: 'Redirect', statusCode: 302, ...extra }, request, undefined);
    assert.equal(redirect({}), 'http://h.test:8080/p?q');
    assert.equal(redirect({ scheme: 'https' }), 'https://h.test/p?q');
    assert.equal(redirect({ scheme: 'http' }), 'http://h.test/p?q');
    assert.equal(redirect({ port: 443, scheme: 'https' }), 'https://h.test/p?q');
    assert.equal(redirect({ port: 80, scheme: 'https' }), 'https://h.test:80/p?q');
    assert.equal(redirect({ hostname: 'o.test', port: 9000 }), 'http://o.test:9000/p?q');
    assert.equal(
      redirectLocation({ type: 'Redirect', statusCode: 302 }, { ...request, listenerPort: 80 }, undefined),
      'http://h.test/p?q',
    );
  });
});
