// The Kubernetes change feed of `get -w`: every fresh list wakes the watcher once (a change made between the
// watcher's own list and the stream's start sends no event), every event but a bookmark wakes it, and a stream
// the server ends is opened again from a new list.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { watchFeed } from '../../src/cli/resource-source.js';
import type { ApiClient, WatchEvent } from '../../src/provider/kubernetes/api-client.js';

interface FakeStream {
  path: string;
  emit: (event: WatchEvent) => void;
  end: () => void;
}

function fakeClient() {
  const lists: string[] = [];
  const streams: FakeStream[] = [];
  let version = 0;
  const client: ApiClient = {
    async request(_method, path) {
      lists.push(path);
      version++;
      return { status: 200, body: { metadata: { resourceVersion: String(version) }, items: [] } };
    },
    watch(path, onEvent) {
      let end: () => void = () => {};
      const done = new Promise<void>((resolve) => {
        end = resolve;
      });
      streams.push({ path, emit: onEvent, end });
      return { done, stop: end };
    },
  };
  return { client, lists, streams };
}

async function settled<T>(promise: Promise<T>, ms = 1000): Promise<boolean> {
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
  ]);
}

test('a fresh list wakes the watcher once; then only events do, bookmarks not', async () => {
  const { client, streams } = fakeClient();
  const stop = new AbortController();
  const feed = watchFeed(client, '/apis/x/v1/namespaces/a/things', stop.signal);
  assert.equal(await settled(feed.next()), true, 'the first list may hold a change no event reports');
  assert.equal(streams[0]?.path, '/apis/x/v1/namespaces/a/things?watch=1&resourceVersion=1');
  const quiet = feed.next();
  streams[0]?.emit({ type: 'BOOKMARK', object: {} });
  assert.equal(await settled(quiet, 200), false, 'a bookmark is no change');
  streams[0]?.emit({ type: 'MODIFIED', object: {} });
  assert.equal(await settled(quiet), true);
  stop.abort();
  assert.equal(await settled(feed.next()), true, 'a stopped feed never waits');
});

test('a stream the server ends is opened again from a new list, which wakes the watcher', async () => {
  const { client, lists, streams } = fakeClient();
  const stop = new AbortController();
  const feed = watchFeed(client, '/apis/x/v1/things', stop.signal);
  await feed.next();
  streams[0]?.end();
  assert.equal(await settled(feed.next()), true);
  assert.equal(lists.length, 2);
  assert.equal(streams[1]?.path, '/apis/x/v1/things?watch=1&resourceVersion=2');
  stop.abort();
});
