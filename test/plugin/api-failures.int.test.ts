/**
 * API failures reach the runtime with their CNI code, the executable against a local server
 * that is not an API server: a 2xx answer that is not JSON (a proxy's login page) is 106
 * naming the request, not 999 "internal error" (a raw SyntaxError before).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertCniError, env, setupSuite, type Suite } from './helpers/conformance.ts';

void describe('API failures through the executable', () => {
  let s: Suite;
  let server: http.Server;
  let kubeconfig = '';
  before(async () => {
    s = setupSuite();
    server = http.createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Proxy login</body></html>'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    kubeconfig = join(s.tmp, 'html.kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "${url}"}}]`,
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    server?.closeAllConnections();
    server?.close();
    await s?.teardown();
  });

  void it('a 2xx answer that is not JSON: 106 naming the request', async () => {
    const r = await s.run(env('ADD', 'af-html'), s.conf('1.0.0', { kubeconfig }));
    const doc = assertCniError(r, 106);
    assert.match(String(doc.details), /^(GET|PUT|POST) \/apis?\/\S+: HTTP 200 answer is not JSON/);
  });
});
