// The Kubernetes change feed of `get -w`: every fresh list wakes the watcher once (a change made between the
// watcher's own list and the stream's start sends no event), every event but a bookmark wakes it, and a stream
// the server ends is opened again from a new list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watchFeed } from '../../src/cli/resource-source.js';
import { createFakeKubernetesApi } from '../support/fake-kubernetes-api.js';

/** The API server: lists (`lists()`, the list requests in order) and the watch streams opened on them. */
function fakeClient() {
  const api = createFakeKubernetesApi();
  const lists = () => api.requests.filter((r) => r.method === 'GET' && !r.query.has('watch'));
  /** The streams opened so far, in order, open or ended. */
  const streams = () => api.requests.filter((r) => r.query.has('watch'));
  return { api, client: api.client, lists, streams };
}

async function settled<T>(promise: Promise<T>, ms = 1000): Promise<boolean> {
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
  ]);
}

test('a fresh list wakes the watcher once; then only events do, bookmarks not', async () => {
  const { api, client, streams } = fakeClient();
  const stop = new AbortController();
  const feed = watchFeed(client, '/apis/x/v1/namespaces/a/things', stop.signal);
  assert.equal(await settled(feed.next()), true, 'the first list may hold a change no event reports');
  assert.equal(streams()[0]?.path, '/apis/x/v1/namespaces/a/things?watch=1&resourceVersion=1');
  const quiet = feed.next();
  api.watches[0]?.send({ type: 'BOOKMARK', object: {} });
  assert.equal(await settled(quiet, 200), false, 'a bookmark is no change');
  api.watches[0]?.send({ type: 'MODIFIED', object: {} });
  assert.equal(await settled(quiet), true);
  stop.abort();
  assert.equal(await settled(feed.next()), true, 'a stopped feed never waits');
});

test('a stream the server ends is opened again from a new list, which wakes the watcher', async () => {
  const { api, client, lists, streams } = fakeClient();
  const stop = new AbortController();
  const feed = watchFeed(client, '/apis/x/v1/things', stop.signal);
  await feed.next();
  // Something else changes on the server meanwhile (a new version, no event on this stream), then it ends it.
  await client.request('POST', '/apis/x/v1/namespaces/b/others', { metadata: { name: 'o' } });
  api.watches[0]?.end();
  assert.equal(await settled(feed.next()), true);
  assert.equal(lists().length, 2);
  assert.equal(streams()[1]?.path, '/apis/x/v1/things?watch=1&resourceVersion=2');
  stop.abort();
});
