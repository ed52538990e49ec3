/**
 * The IPAM socket server (block-controller/agent/ipam/server.ts, socket-path.ts) with a stand-in
 * service: failures answered with their kind, any positive timeoutMs taken, the directory brought
 * to 0700, a stale socket replaced, a file that is not a socket refused; a trickling client
 * closed at the read deadline, a connection past maxConnections answered busy, a call naming
 * another node refused, a successor's socket at the same path left by close(). (With the real
 * agent and API server: ipam-server.int.test.ts.)
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { UnavailableError } from 'blockipam/core';
import { servedNodeProblem, type NodeIpam } from 'blockipam/core/node-ipam';
import { startIpamServer, type IpamServerOptions } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { createLogger } from '../../block-controller/shared/index.ts';
import { askSocket } from '../helpers/ipam-socket.ts';

const root = mkdtempSync(join(tmpdir(), 'ipam-socket-'));
const log = createLogger({ component: 'test', stream: new Writable({ write: (_c, _e, cb) => cb() }) });
const ipam: NodeIpam = {
  add: () => Promise.reject(new UnavailableError('connect ECONNREFUSED')),
  del: () => Promise.resolve({ released: 0 }),
  check: () => Promise.resolve({ kind: 'ok' }),
  gc: () => Promise.resolve({ released: [], errors: [], aliveElsewhere: [] }),
  status: () => Promise.resolve({ kind: 'ready' }),
};
const start = (path: string, service: NodeIpam | string = ipam, more: Partial<IpamServerOptions> = {}) =>
  startIpamServer({ path, node: 'n1', ipam: () => service, log, metrics: createAgentMetrics(), ...more });
const ask = askSocket;

/** A service whose DEL waits for `release()`; `entered(n)` resolves once `n` DELs are waiting. */
function heldDel(): { service: NodeIpam; release: () => void; entered: (n: number) => Promise<void> } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let calls = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const service: NodeIpam = {
    ...ipam,
    del: async () => {
      calls += 1;
      for (const w of waiters.filter((x) => calls >= x.n)) w.resolve();
      await held;
      return { released: 0 };
    },
  };
  const entered = (n: number): Promise<void> =>
    calls >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
  return { service, release, entered };
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

  test(
    'a client that trickles its request is closed at the read deadline, unanswered',
    { timeout: 20_000 },
    async () => {
      const path = join(root, 'e', 'ipam.sock');
      const server = await start(path, ipam, { readDeadlineMs: 300 });
      const s = connect(path);
      let received = '';
      s.on('data', (c: Buffer) => (received += c.toString()));
      s.on('error', () => undefined);
      // a space every 20 ms, for ever: never idle, never a complete request
      const trickle = setInterval(() => s.write(' '), 20);
      await once(s, 'close');
      clearInterval(trickle);
      assert.equal(received, '');
      assert.equal((await ask(path, del(1000))).ok, true, 'and goes on serving');
      await server.close(1000);
    },
  );

  test('past maxConnections a connection is answered busy (notReady), the service not asked', async () => {
    const path = join(root, 'f', 'ipam.sock');
    const held = heldDel();
    const server = await start(path, held.service, { maxConnections: 2, readDeadlineMs: 600_000 });
    const first = [ask(path, del(5000)), ask(path, del(5000))];
    await held.entered(2);
    assert.deepEqual(await ask(path, del(5000)), {
      v: 1,
      ok: false,
      error: { kind: 'notReady', message: 'busy: 2 connections open (maxConnections); try again' },
    });
    // a refused client that never ends its side is closed by the server once answered, not
    // held open until the read deadline (so the cap bounds the server's descriptors)
    const lingering = connect(path);
    let busyAnswer = '';
    lingering.on('data', (chunk) => (busyAnswer += chunk.toString()));
    await once(lingering, 'close');
    assert.match(busyAnswer, /"kind":"notReady"/);
    held.release();
    for (const answer of await Promise.all(first)) assert.equal(answer.ok, true);
    // their slots free as the server closes them (just after the client saw the answer's end)
    let again = await ask(path, del(5000));
    for (let i = 0; i < 100 && !again.ok; i++) again = await ask(path, del(5000));
    assert.equal(again.ok, true, JSON.stringify(again));
    await server.close(1000);
  });

  test('a call naming another node is refused misconfigured, synced or not; a DEL is served here', async () => {
    const path = join(root, 'g', 'ipam.sock');
    const call = { ...del(1000).call, node: 'n2' };
    const wrong = { v: 1, op: 'check', timeoutMs: 1000, call: { ...call, expectedIPs: ['10.0.0.1'] } };
    const refused = {
      v: 1,
      ok: false,
      error: { kind: 'misconfigured', message: servedNodeProblem('n2', 'n1') },
    };
    assert.match(
      refused.error.message ?? '',
      /serves node "n1", but this plugin's node name is "n2" \(ipam\.nodeName/,
    );
    const delNodes: string[] = [];
    const never: NodeIpam = {
      ...ipam,
      check: () => Promise.reject(new Error('must not be called')),
      del: (c) => {
        delNodes.push(c.node);
        return Promise.resolve({ released: 1 });
      },
    };
    const server = await start(path, never);
    assert.deepEqual(await ask(path, wrong), refused);
    // DEL of a container on this host: its address can only be in this node's blocks
    assert.deepEqual(await ask(path, { ...del(1000), call }), { v: 1, ok: true, outcome: { released: 1 } });
    assert.deepEqual(delNodes, ['n1']);
    await server.close(1000);
    const notSynced = await start(path, 'the agent has not synced yet (ownBlocks)');
    assert.deepEqual(await ask(path, wrong), refused);
    await notSynced.close(1000);
  });

  test("close() leaves a successor's socket at the same path in place", async () => {
    const path = join(root, 'h', 'ipam.sock');
    const held = heldDel();
    const first = await start(path, held.service);
    const pending = ask(path, del(5000));
    await held.entered(1);
    const closing = first.close(5000); // stops accepting at once, drains the DEL in flight
    const successor = await start(path); // the first no longer accepts: its socket is stale
    const bound = statSync(path).ino;
    held.release();
    assert.equal((await pending).ok, true);
    await closing;
    assert.equal(statSync(path).ino, bound, "the successor's socket is still there");
    assert.equal((await ask(path, del(1000))).ok, true);
    await successor.close(1000);
    assert.throws(() => statSync(path), /ENOENT/, 'the successor removes its own');
  });

  test('a file that is not a socket is refused, naming the path', async () => {
    const path = join(root, 'd', 'ipam.sock');
    mkdirSync(join(root, 'd'));
    writeFileSync(path, 'not a socket');
    await assert.rejects(start(path), new RegExp(`IPAM socket ${path}: exists and is not a socket`));
  });
});
