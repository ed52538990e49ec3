// KubeTransport's `preconnect` on Bun's fetch (the plugin's client): true opens the connection
// when the transport is built, false only with the first request (the plugin turns it off while
// another call holds the node's lock: ipam-plugin/backend/kube-backend.ts). A Bun process builds
// the transport against a local server that counts connections.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

const repoRoot = join(import.meta.dirname, '..', '..');
const bun = join(repoRoot, 'node_modules', '.bin', 'bun');
const probe = join(import.meta.dirname, 'bun', 'preconnect-probe.ts');

void describe('KubeTransport preconnect (Bun fetch)', () => {
  let server: http.Server;
  let url = '';
  let connections = 0;
  let connectionsAtRequest: number[] = [];
  before(async () => {
    server = http.createServer((_req, res) => {
      connectionsAtRequest.push(connections);
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  /** Runs the probe; @returns the connections seen when "ready" + 200 ms, and at the request. */
  async function run(preconnect: boolean): Promise<{ beforeRequest: number; atRequest: number[] }> {
    connections = 0;
    connectionsAtRequest = [];
    const child = spawn(bun, [probe, url, String(preconnect)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    let beforeRequest = -1;
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s: string) => {
      if (!out.includes('ready') && (out + s).includes('ready'))
        setTimeout(() => (beforeRequest = connections), 200);
      out += s;
    });
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    assert.equal(code, 0);
    assert.match(out, /done/);
    return { beforeRequest, atRequest: connectionsAtRequest };
  }

  void it('true: the connection is open before the first request, and the request uses it', async () => {
    const r = await run(true);
    assert.equal(r.beforeRequest, 1);
    assert.deepEqual(r.atRequest, [1]);
  });

  void it('false: no connection until the first request', async () => {
    const r = await run(false);
    assert.equal(r.beforeRequest, 0);
    assert.deepEqual(r.atRequest, [1]);
  });
});
