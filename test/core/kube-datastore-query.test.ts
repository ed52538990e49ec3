// What KubeDatastore puts on the wire for LIST options: a cached LIST asks for the watch cache
// as it is (resourceVersion=0), a default LIST is consistent (no resourceVersion). Local server.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeDatastore, KubeTransport } from 'blockipam/core/kube';

/** A KubeDatastore on a local server answering each request's URL with `answer(url)`, for the describe. */
function localDatastore(answer: (url: string) => string): { ds: KubeDatastore } {
  const local = {} as { ds: KubeDatastore };
  let server: http.Server;
  before(async () => {
    server = http.createServer((req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(answer(req.url ?? '')),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    local.ds = new KubeDatastore(
      new KubeTransport({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    );
  });
  after(() => {
    local.ds.close();
    server.closeAllConnections();
    server.close();
  });
  return local;
}

describe('KubeDatastore LIST query', () => {
  const seen: string[] = [];
  const local = localDatastore((url) => (seen.push(url), '{"items":[]}'));

  it('list and listMetadata: resourceVersion=0 only when cached', async () => {
    const selector = { matchLabels: { a: 'b' } };
    await local.ds.pools.list();
    await local.ds.pools.list({ cached: true });
    await local.ds.blocks.listMetadata({ labelSelector: selector, cached: true });
    await local.ds.blocks.list({ labelSelector: selector });
    const queries = seen.map((u) => new URL(u, 'http://x').searchParams);
    assert.deepEqual(
      queries.map((q) => q.get('resourceVersion')),
      [null, '0', '0', null],
    );
    assert.equal(queries[2]?.get('labelSelector'), 'a=b');
  });
});

// PageOptions.onContinue: a built-in kind's list head (kind, apiVersion, metadata before items)
// tells the continue token before the page is decoded; a head of another shape tells nothing.
describe('KubeDatastore page: the continue token from the list head', () => {
  const answers: Record<string, string> = {
    '/api/v1/pods':
      '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"tok-1","remainingItemCount":1},"items":[{"metadata":{"name":"a","namespace":"n"}}]}',
    '/api/v1/nodes': '{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}',
    '/apis/ipam.blockipam.io/v1alpha1/ipamblocks':
      '{"apiVersion":"ipam.blockipam.io/v1alpha1","items":[],"kind":"IPAMBlockList","metadata":{"continue":"tok-2","resourceVersion":"7"}}',
  };
  const local = localDatastore((url) => answers[new URL(url, 'http://x').pathname] ?? '{}');

  it('pods and nodes: told once, before the page resolves, equal to the decoded token', async () => {
    const told: (string | undefined)[] = [];
    let resolved = false;
    const pending = local.ds.listPodPage({ limit: 1, onContinue: (t) => told.push(resolved ? 'late' : t) });
    const page = await pending.then((p) => ((resolved = true), p));
    assert.deepEqual(told, ['tok-1']);
    assert.equal(page.continue, 'tok-1');
    const last: (string | undefined)[] = [];
    assert.equal(
      (await local.ds.listNodePage({ limit: 1, onContinue: (t) => last.push(t) })).continue,
      undefined,
    );
    assert.deepEqual(last, [undefined], 'the last page is told too');
  });

  it('a custom resource list (items before metadata): not told; the page carries the token', async () => {
    const told: (string | undefined)[] = [];
    const page = await local.ds.blocks.listPage({ limit: 1, onContinue: (t) => told.push(t) });
    assert.deepEqual(told, []);
    assert.equal(page.continue, 'tok-2');
  });
});
