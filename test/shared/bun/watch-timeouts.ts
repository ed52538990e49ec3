/**
 * Test helper process (run with Bun, as the executables run): block-controller/shared's watch
 * against a local HTTP server that never answers (`/silent`) and one that answers 200 and then
 * sends nothing (`/idle`), with a 300 ms inactivity timeout. Prints one JSON line: for each,
 * the error `done` received (name, code) and the query the server saw.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeconfigTlsWatch } from '../../../block-controller/shared/watch.ts';

const queries: Record<string, string> = {};
const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  queries[url.pathname] = url.search;
  if (url.pathname === '/idle') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.flushHeaders();
  }
  // /silent: no answer at all
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;
const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
  users: [{ name: 'u' }],
  contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
  currentContext: 'x',
});
const watch = new KubeconfigTlsWatch(kc, { inactivityMs: 300 });
const outcome = (path: string): Promise<{ name?: string; code?: string }> =>
  new Promise((resolve) => {
    void watch.watch(
      path,
      { resourceVersion: '7' },
      () => undefined,
      (err) => {
        const e = err as { name?: string; code?: string } | null;
        resolve({ ...(e?.name ? { name: e.name } : {}), ...(e?.code ? { code: e.code } : {}) });
      },
    );
  });
const silent = await outcome('/silent');
const idle = await outcome('/idle');
process.stdout.write(`${JSON.stringify({ silent, idle, queries })}\n`);
server.closeAllConnections();
server.close();
process.exit(0);
