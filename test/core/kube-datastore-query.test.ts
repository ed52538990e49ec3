// What KubeDatastore puts on the wire for LIST options: a cached LIST asks for the watch cache
// as it is (resourceVersion=0), a default LIST is consistent (no resourceVersion). Local server.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { KubeDatastore, KubeTransport } from 'blockipam/core/kube';

describe('KubeDatastore LIST query', () => {
  let server: http.Server;
  let ds: KubeDatastore;
  const seen: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ds = new KubeDatastore(
      new KubeTransport({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    );
  });
  after(() => {
    ds.close();
    server.closeAllConnections();
    server.close();
  });

  it('list and listMetadata: resourceVersion=0 only when cached', async () => {
    const selector = { matchLabels: { a: 'b' } };
    await ds.pools.list();
    await ds.pools.list({ cached: true });
    await ds.blocks.listMetadata({ labelSelector: selector, cached: true });
    await ds.blocks.list({ labelSelector: selector });
    const queries = seen.map((u) => new URL(u, 'http://x').searchParams);
    assert.deepEqual(
      queries.map((q) => q.get('resourceVersion')),
      [null, '0', '0', null],
    );
    assert.equal(queries[2]?.get('labelSelector'), 'a=b');
  });
});
