/**
 * The IPAM socket server (block-controller/agent/ipam/server.ts, cni-call.ts, socket-path.ts)
 * with a stand-in service, protocol v2 (the CNI call forwarded whole): outcomes and failures
 * answered as the CNI error documents the plugin prints, the budget from the netconf's
 * `ipam.timeoutMs`, the directory brought to 0700, a stale socket replaced, a file that is not a
 * socket refused; a trickling client closed at the read deadline, a connection past
 * maxConnections answered busy (CNI 11), a call naming another node refused (CNI 7), STATUS
 * before the sync asked elsewhere, a successor's socket at the same path left by close(). (With
 * the real agent and API server: ipam-server.int.test.ts.)
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
import { MAX_REQUEST_BYTES, servedNodeProblem, type NodeIpam } from 'blockipam/core/node-ipam';
import { startIpamServer, type IpamServerOptions } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { createLogger } from '../../block-controller/shared/index.ts';
import { answerDoc, askSocket, cniCall, socketConf } from '../helpers/ipam-socket.ts';

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
/** A DEL of container c on node n1 (or `node`), with `ipam.timeoutMs`. */
const del = (timeoutMs = 1000, node = 'n1') => cniCall('DEL', socketConf({ timeoutMs, nodeName: node }));
/** Success: exit code 0, nothing on stdout or stderr (DEL). */
const silentOk = { v: 2, code: 0, stdout: '', stderr: '' };
/** The CNI error an answer carries (exit code 1, the document on stdout). */
function cniError(answer: Record<string, unknown>): Record<string, unknown> {
  assert.equal(answer.code, 1, JSON.stringify(answer));
  return answerDoc(answer) ?? {};
}

describe('IPAM socket server', () => {
  after(() => rmSync(root, { recursive: true, force: true }));

  test('answers outcomes, and failures as the CNI error the plugin prints; timeoutMs from the netconf', async () => {
    const path = join(root, 'a', 'ipam.sock');
    const server = await start(path);
    assert.deepEqual(await ask(path, del(100)), silentOk);
    assert.deepEqual(await ask(path, del(600_000)), silentOk);
    const add = await ask(path, cniCall('ADD', socketConf({}, '0.4.0')));
    assert.deepEqual(cniError(add), {
      cniVersion: '0.4.0',
      code: 11,
      msg: 'datastore unreachable',
      details: 'node agent: connect ECONNREFUSED',
    });
    // the call's log lines at warn and above on its stderr, as the executable writes them
    assert.match(String(add.stderr), /"level":"error","msg":"datastore unreachable".*"cmd":"ADD"/);
    await server.close(1000);
  });

  test('not ready: CNI 11 naming the reason; STATUS asks statusWithoutService', async () => {
    const path = join(root, 'b', 'ipam.sock');
    const asked: string[] = [];
    const server = await start(path, 'the agent has not synced yet (ownBlocks)', {
      statusWithoutService: (call) => {
        asked.push(call.node);
        return Promise.resolve({ kind: 'ready' });
      },
    });
    assert.deepEqual(cniError(await ask(path, del(1000))), {
      cniVersion: '1.0.0',
      code: 11,
      msg: 'node agent not ready',
      details: 'node agent: the agent has not synced yet (ownBlocks)',
    });
    assert.deepEqual(await ask(path, cniCall('STATUS', socketConf({}, '1.1.0'))), silentOk);
    assert.deepEqual(asked, ['n1']);
    await server.close(1000);
    const without = await start(path, 'the agent is stopping');
    const status = cniError(await ask(path, cniCall('STATUS', socketConf({}, '1.1.0'))));
    assert.equal(status.code, 50, 'STATUS: an ADD cannot be served');
    assert.match(String(status.details), /the agent is stopping/);
    await without.close(1000);
  });

  test('the budget is ipam.timeoutMs less its margin, from accept: CNI 11 before the client gives up', async () => {
    const path = join(root, 'i', 'ipam.sock');
    const hanging: NodeIpam = {
      ...ipam,
      del: (_c, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason as Error)),
        ),
    };
    const server = await start(path, hanging);
    const t0 = performance.now();
    const answer = cniError(await ask(path, del(500)));
    const took = performance.now() - t0;
    assert.equal(answer.code, 11, JSON.stringify(answer));
    assert.equal(answer.msg, 'time budget exceeded');
    assert.ok(took >= 440 && took < 3_000, `answered after ${Math.round(took)} ms (budget 450 ms)`);
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
    assert.deepEqual(await ask(path, del(1000)), silentOk);
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
      try {
        // not once(s, 'close'): that rejects on 'error', and a space written just as the server
        // closes the connection is an EPIPE/ECONNRESET on this side before the close
        await new Promise((resolve) => s.once('close', resolve));
        clearInterval(trickle);
        assert.equal(received, '');
        assert.deepEqual(await ask(path, del(1000)), silentOk, 'and goes on serving');
      } finally {
        // a failure must not leave the server (and this file's process) running
        clearInterval(trickle);
        await server.close(1000);
      }
    },
  );

  test('past maxConnections a connection is answered busy (CNI 11), the service not asked', async () => {
    const path = join(root, 'f', 'ipam.sock');
    const held = heldDel();
    const server = await start(path, held.service, { maxConnections: 2, readDeadlineMs: 600_000 });
    const first = [ask(path, del(5000)), ask(path, del(5000))];
    await held.entered(2);
    // not served, but its first bytes read: the error in the netconf's cniVersion
    assert.deepEqual(cniError(await ask(path, del(5000))), {
      cniVersion: '1.0.0',
      code: 11,
      msg: 'node agent not ready',
      details: 'busy: 2 connections open (maxConnections); try again',
    });
    // a refused client that never ends its side is closed by the server once answered, not
    // held open until the read deadline (so the cap bounds the server's descriptors)
    const lingering = connect(path);
    let busyAnswer = '';
    lingering.on('data', (chunk) => (busyAnswer += chunk.toString()));
    await once(lingering, 'close');
    assert.match(busyAnswer, /\\"code\\":11/);
    // it sent nothing: CNI's current version
    assert.match(busyAnswer, /\\"cniVersion\\":\\"1\.1\.0\\"/);
    held.release();
    for (const answer of await Promise.all(first)) assert.deepEqual(answer, silentOk);
    // their slots free as the server closes them (just after the client saw the answer's end)
    let again = await ask(path, del(5000));
    for (let i = 0; i < 100 && again.code !== 0; i++) again = await ask(path, del(5000));
    assert.deepEqual(again, silentOk);
    await server.close(1000);
  });

  test('a call naming another node is refused (CNI 7), synced or not; a DEL is served here', async () => {
    const path = join(root, 'g', 'ipam.sock');
    const wrong = cniCall('CHECK', {
      ...socketConf({ nodeName: 'n2' }),
      prevResult: { ips: [{ address: '10.0.0.1/26' }] },
    });
    const refused = {
      cniVersion: '1.0.0',
      code: 7,
      msg: 'node name mismatch',
      details: `node agent: ${servedNodeProblem('n2', 'n1')}`,
    };
    assert.match(refused.details, /serves node "n1", but this plugin's node name is "n2" \(ipam\.nodeName/);
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
    assert.deepEqual(cniError(await ask(path, wrong)), refused);
    // DEL of a container on this host: its address can only be in this node's blocks
    const served = await ask(path, del(1000, 'n2'));
    assert.equal(served.code, 0, JSON.stringify(served));
    assert.match(String(served.stderr), /DEL naming another node served for this node/);
    assert.deepEqual(delNodes, ['n1']);
    await server.close(1000);
    const notSynced = await start(path, 'the agent has not synced yet (ownBlocks)');
    assert.deepEqual(cniError(await ask(path, wrong)), refused);
    await notSynced.close(1000);
  });

  test('requests it cannot run: a CNI error naming the field, or both versions', async () => {
    const path = join(root, 'j', 'ipam.sock');
    const server = await start(path);
    const cases: [string, unknown, string, RegExp][] = [
      // what, request, cniVersion of the error, details
      [
        'a v1 request',
        { v: 1, op: 'del', timeoutMs: 1000, call: {} },
        '1.1.0',
        /protocol version 1, this agent speaks 2/,
      ],
      ['an unknown v', { ...del(), v: 3 }, '0.4.0', /protocol version 3, this agent speaks 2/],
      ['not JSON', 'hello\n', '1.1.0', /request: not JSON/],
      ['env not an object', { v: 2, env: [], stdin: '' }, '1.1.0', /request\.env: not an object/],
      [
        'an env value not a string',
        { v: 2, env: { CNI_COMMAND: 7 }, stdin: '' },
        '1.1.0',
        /request\.env\.CNI_COMMAND: not a string/,
      ],
      [
        'an unknown variable',
        { v: 2, env: { PATH: '/bin' }, stdin: '' },
        '1.1.0',
        /request\.env: "PATH" is not one of CNI_COMMAND/,
      ],
      ['stdin not a string', { v: 2, env: {}, stdin: {} }, '1.1.0', /request\.stdin: not a string/],
    ];
    // refused before it parses: the netconf's cniVersion read from the request's first bytes
    const head = JSON.stringify(cniCall('DEL', socketConf({}, '0.4.0'))).replace(/}$/, '');
    cases.push(
      ['too large', `${head.slice(0, -1)}${' '.repeat(MAX_REQUEST_BYTES)}"}\n`, '0.4.0', /larger than/],
      ['cut short, not JSON', `${head.slice(0, -40)}\n`, '0.4.0', /request: not JSON/],
      [
        'not JSON, a version core/cni does not support',
        `${head.slice(0, -40).replace('0.4.0', '9.9.9')}\n`,
        '1.1.0',
        /request: not JSON/,
      ],
    );
    for (const [what, request, cniVersion, details] of cases) {
      const req =
        what === 'an unknown v'
          ? { ...(request as object), stdin: JSON.stringify(socketConf({}, '0.4.0')) }
          : request;
      const doc = cniError(await ask(path, req));
      assert.equal(doc.code, 999, what);
      assert.equal(doc.msg, 'node agent refused the request', what);
      assert.equal(doc.cniVersion, cniVersion, what);
      assert.match(String(doc.details), details, what);
    }
    // a netconf the CNI layer refuses: the plugin's own error, naming the field
    const bad = cniError(await ask(path, cniCall('ADD', socketConf({ timeoutMs: 'soon' }))));
    assert.equal(bad.code, 7);
    assert.match(String(bad.details), /timeoutMs/);
    await server.close(1000);
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
    assert.deepEqual(await pending, silentOk);
    await closing;
    assert.equal(statSync(path).ino, bound, "the successor's socket is still there");
    assert.deepEqual(await ask(path, del(1000)), silentOk);
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
