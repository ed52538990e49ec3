/**
 * The IPAM socket server (block-controller/agent/ipam/server.ts, socket-path.ts) with a stand-in
 * service: failures answered with their kind, any positive timeoutMs taken, the directory brought
 * to 0700, a stale socket replaced, a file that is not a socket refused. (With the real agent
 * and API server: ipam-server.int.test.ts.)
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { UnavailableError } from 'blockipam/core';
import type { NodeIpam } from 'blockipam/core/node-ipam';
import { startIpamServer } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { createLogger } from '../../block-controller/shared/index.ts';

const root = mkdtempSync(join(tmpdir(), 'ipam-socket-'));
const log = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
const ipam: NodeIpam = {
  add: () => Promise.reject(new UnavailableError('connect ECONNREFUSED')),
  del: () => Promise.resolve({ released: 0 }),
  check: () => Promise.resolve({ kind: 'ok' }),
  gc: () => Promise.resolve({ released: [], errors: [], aliveElsewhere: [] }),
  status: () => Promise.resolve({ kind: 'ready' }),
};
const start = (path: string, service: NodeIpam | string = ipam) =>
  startIpamServer({ path, node: 'n1', ipam: () => service, log, metrics: createAgentMetrics() });

function ask(path: string, doc: unknown): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const s = connect(path);
    let answer = '';
    s.on('data', (c) => (answer += c.toString()));
    s.on('error', reject);
    s.on('end', () => resolve(JSON.parse(answer) as Record<string, unknown>));
    s.end(`${JSON.stringify(doc)}\n`);
  });
}
const del = (timeoutMs: number) => ({
  v: 1,
  op: 'del',
  timeoutMs,
  call: { node: 'n1', attachment: { network: 'n', containerID: 'c', ifname: 'eth0' } },
});

describe('IPAM socket server', () => {
  after(() => rmSync(root, { recursive: true, force: true }));

  test('answers outcomes and failures by kind; any positive timeoutMs is taken', async () => {
    const path = join(root, 'a', 'ipam.sock');
    const server = await start(path);
    assert.deepEqual(await ask(path, del(1.5)), { v: 1, ok: true, outcome: { released: 0 } });
    assert.deepEqual(await ask(path, del(1e15)), { v: 1, ok: true, outcome: { released: 0 } });
    const add = {
      v: 1,
      op: 'add',
      timeoutMs: 1000,
      call: {
        node: 'n1',
        attachment: { network: 'n', containerID: 'c', ifname: 'eth0' },
        families: [4],
        pools: { 4: [], 6: [] },
        staticIPs: [],
      },
    };
    assert.deepEqual(await ask(path, add), {
      v: 1,
      ok: false,
      error: { kind: 'unavailable', message: 'connect ECONNREFUSED' },
    });
    await server.close(1000);
  });

  test('not ready: the reason as a notReady error', async () => {
    const path = join(root, 'b', 'ipam.sock');
    const server = await start(path, 'the agent has not synced yet (ownBlocks)');
    assert.deepEqual(await ask(path, del(1000)), {
      v: 1,
      ok: false,
      error: { kind: 'notReady', message: 'the agent has not synced yet (ownBlocks)' },
    });
    await server.close(1000);
  });

  test('a 0755 directory is made 0700; a stale socket is replaced', async () => {
    const dir = join(root, 'c');
    mkdirSync(dir, { mode: 0o755 });
    chmodSync(dir, 0o755);
    const path = join(dir, 'ipam.sock');
    // a socket nobody serves any more (its server closed without removing it cannot be made
    // portably; a bound-then-closed handle leaves none): bind one and keep its file
    const stale = createServer();
    await new Promise<void>((resolve) => stale.listen(path, resolve));
    (stale as unknown as { _handle: { close(): void } | null })._handle?.close();
    const server = await start(path);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal((await ask(path, del(1000))).ok, true);
    await server.close(1000);
  });

  test('a file that is not a socket is refused, naming the path', async () => {
    const path = join(root, 'd', 'ipam.sock');
    mkdirSync(join(root, 'd'));
    writeFileSync(path, 'not a socket');
    await assert.rejects(start(path), new RegExp(`IPAM socket ${path}: exists and is not a socket`));
  });
});
