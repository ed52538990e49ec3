/**
 * The IPAM socket server (block-controller/agent/ipam/server.ts, cni-call.ts, socket-path.ts)
 * with a stand-in service, wire v3: outcomes and failures answered as the CNI error documents
 * the plugin prints, the budget from the client's deadline less the netconf's margin, the
 * directory brought to 0700, a stale socket replaced, a file that is not a socket refused;
 * NOT_SERVED — nothing done — for a trickling client, a connection past maxConnections, a
 * command not served yet, a request of another version or malformed; a call naming another node
 * refused (CNI 7); nothing started for a client gone or past its deadline, and a call aborted
 * when its client closes; a successor's socket at the same path left by close(). (With the real
 * agent and API server: ipam-server.int.test.ts; with the Go forwarder: ipam-hand-off.test.ts.)
 */
import assert from 'node:assert/strict';
import {
  chmodSync,
  type Stats,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  unwatchFile,
  utimesSync,
  watchFile,
  writeFileSync,
} from 'node:fs';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { agentSocketPath, MAX_STDIN_BYTES, servedNodeProblem, type NodeIpam } from 'blockipam/core/node-ipam';
import { startIpamServer, type IpamServerOptions } from '../../block-controller/agent/ipam/server.ts';
import { createAgentMetrics } from '../../block-controller/agent/metrics.ts';
import { answerDoc, askSocket, cniCall, frameRequest, socketConf } from '../helpers/ipam-socket.ts';
import type { SocketAnswer } from '../helpers/ipam-socket.ts';
import { quietLog as log, unreachableIpam } from './fixtures.ts';

const root = mkdtempSync(join(tmpdir(), 'ipam-socket-'));
const ipam = unreachableIpam;
const start = (path: string, service: NodeIpam | string = ipam, more: Partial<IpamServerOptions> = {}) =>
  startIpamServer({
    path,
    node: 'n1',
    ipam: () => service,
    serves: () => undefined,
    log,
    metrics: createAgentMetrics(),
    ...more,
  });
const ask = askSocket;

/**
 * A service whose DEL waits for `release()`; `entered(n)` resolves once `n` DELs are waiting,
 * `aborted` once a DEL's signal fired (`onSignal` sees each DEL's signal).
 */
function heldDel(onSignal: (signal: AbortSignal) => void = () => undefined): {
  service: NodeIpam;
  release: () => void;
  entered: (n: number) => Promise<void>;
  calls: () => number;
  aborted: Promise<void>;
} {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let abortSeen!: () => void;
  const aborted = new Promise<void>((resolve) => (abortSeen = resolve));
  let calls = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  const service: NodeIpam = {
    ...ipam,
    del: async (_call, signal) => {
      calls += 1;
      onSignal(signal);
      signal.addEventListener('abort', () => abortSeen());
      for (const w of waiters.filter((x) => calls >= x.n)) w.resolve();
      await held;
      return { released: 0 };
    },
  };
  const entered = (n: number): Promise<void> =>
    calls >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
  return { service, release, entered, calls: () => calls, aborted };
}
/** A request whose env block is `env` as given (a DEL's stdin). */
const rawEnv = (env: string): Buffer => {
  const e = Buffer.from(env);
  const stdin = Buffer.from(del().stdin);
  const h = header(e.length, stdin.length);
  return Buffer.concat([h, e, stdin]);
};
/** A request header alone: version 3, a deadline 30 s off, sizes `envBytes` and `stdinBytes`. */
function header(envBytes: number, stdinBytes: number): Buffer {
  const h = frameRequest({ env: {}, stdin: '' }).subarray(0, 17);
  h.writeUint32BE(envBytes, 9);
  h.writeUint32BE(stdinBytes, 13);
  return h;
}
/** A DEL of container c on node n1 (or `node`), with `ipam.timeoutMs` and the client's deadline as far off. */
const del = (timeoutMs = 1000, node = 'n1') => ({
  ...cniCall('DEL', socketConf({ timeoutMs, nodeName: node })),
  deadlineMs: timeoutMs,
});
/** Success: exit code 0, nothing on stdout or stderr (DEL). */
const silentOk = { code: 0, stdout: '', stderr: '' };
/** The CNI error an answer carries (exit code 1, the document on stdout). */
function cniError(answer: SocketAnswer): Record<string, unknown> {
  assert.ok('code' in answer && answer.code === 1, JSON.stringify(answer));
  return answerDoc(answer) ?? {};
}
/** The NOT_SERVED reason of an answer. */
function notServed(answer: SocketAnswer): string {
  assert.equal(typeof answer.notServed, 'string', JSON.stringify(answer));
  return String(answer.notServed);
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

  test('a command not served yet is NOT_SERVED with the reason, the service not asked', async () => {
    const path = join(root, 'b', 'ipam.sock');
    const asked: string[] = [];
    const server = await start(path, ipam, {
      serves: (command) => {
        asked.push(command);
        return command === 'ADD' ? 'not synced yet: pools' : undefined;
      },
    });
    assert.equal(notServed(await ask(path, cniCall('ADD'))), 'not synced yet: pools');
    assert.deepEqual(await ask(path, del(1000)), silentOk, 'a DEL does not wait for the pools');
    assert.deepEqual(asked, ['ADD', 'DEL']);
    await server.close(1000);
  });

  test("the budget ends ipam.timeoutMs's margin before the client's deadline: CNI 11 before it gives up", async () => {
    const path = join(root, 'i', 'ipam.sock');
    const hanging: NodeIpam = {
      ...ipam,
      del: (_c, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason as Error)),
        ),
    };
    const server = await start(path, hanging);
    const answer = cniError(await ask(path, del(500)));
    assert.equal(answer.code, 11, JSON.stringify(answer));
    assert.equal(answer.msg, 'time budget exceeded');
    await server.close(1000);
  });

  test("the heartbeat: the socket's mtime follows the clock while the server runs", async () => {
    const path = join(root, 'beat', 'ipam.sock');
    const server = await start(path);
    const socket = agentSocketPath(path);
    const past = new Date(Date.now() - 60_000);
    utimesSync(socket, past, past);
    // the next beat sets it to now again: wait for that change (the forwarder reads it as alive)
    await new Promise<void>((resolve) => {
      const beat = (now: Stats): void => {
        if (now.mtimeMs > Date.now() - 2_000) {
          unwatchFile(socket, beat);
          resolve();
        }
      };
      watchFile(socket, { interval: 50 }, beat);
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
    await new Promise<void>((resolve) => stale.listen(agentSocketPath(path), resolve));
    (stale as unknown as { _handle: { close(): void } | null })._handle?.close();
    const server = await start(path);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(agentSocketPath(path)).mode & 0o777, 0o600);
    assert.deepEqual(await ask(path, del(1000)), silentOk);
    await server.close(1000);
  });

  test(
    'a client that trickles its request is NOT_SERVED at the read deadline',
    { timeout: 20_000 },
    async () => {
      const path = join(root, 'e', 'ipam.sock');
      const server = await start(path, ipam, { readDeadlineMs: 300 });
      const s = connect(agentSocketPath(path));
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
        assert.match(received, /^N.*no complete request$/s);
        assert.deepEqual(await ask(path, del(1000)), silentOk, 'and goes on serving');
      } finally {
        // a failure must not leave the server (and this file's process) running
        clearInterval(trickle);
        await server.close(1000);
      }
    },
  );

  test('past maxConnections a connection is NOT_SERVED (busy), the service not asked', async () => {
    const path = join(root, 'f', 'ipam.sock');
    const held = heldDel();
    const server = await start(path, held.service, { maxConnections: 2, readDeadlineMs: 600_000 });
    const first = [ask(path, del(5000)), ask(path, del(5000))];
    await held.entered(2);
    assert.equal(notServed(await ask(path, del(5000))), 'busy: 2 connections open (maxConnections)');
    // one that sends nothing is answered and closed at once, not held to the read deadline
    const lingering = connect(agentSocketPath(path));
    let busy = '';
    lingering.on('data', (chunk) => (busy += chunk.toString()));
    await once(lingering, 'close');
    assert.match(busy, /busy/);
    held.release();
    for (const answer of await Promise.all(first)) assert.deepEqual(answer, silentOk);
    // their slots free as the server closes them (just after the client saw the answer's end)
    let again = await ask(path, del(5000));
    for (let i = 0; i < 100 && !('code' in again); i++) again = await ask(path, del(5000));
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
    assert.ok('code' in served && served.code === 0, JSON.stringify(served));
    assert.match(String(served.stderr), /DEL naming another node served for this node/);
    assert.deepEqual(delNodes, ['n1']);
    await server.close(1000);
    const notSynced = await start(path, 'the agent has not synced yet (ownBlocks)');
    assert.deepEqual(cniError(await ask(path, wrong)), refused);
    await notSynced.close(1000);
  });

  test('requests it cannot run: NOT_SERVED naming the problem, nothing done', async () => {
    const path = join(root, 'j', 'ipam.sock');
    let calls = 0;
    const counting: NodeIpam = { ...ipam, del: () => ((calls += 1), Promise.resolve({ released: 0 })) };
    const server = await start(path, counting);
    const cases: [string, Buffer, RegExp][] = [
      // what, request bytes, the reason
      [
        'a v2 request (JSON)',
        Buffer.from(`${JSON.stringify({ v: 2, ...del() })}\n`),
        /protocol version 123, this agent speaks 3/,
      ],
      ['a v4 request', frameRequest(del(), 4), /protocol version 4, this agent speaks 3/],
      ['an env entry not NAME=value', rawEnv('PATH=/bin\0'), /env: "PATH=\/bin" is not NAME=value/],
      ['an env entry without its NUL', rawEnv('CNI_COMMAND=DEL'), /env: the last entry has no NUL/],
      ['stdin over its bound', header(0, MAX_STDIN_BYTES + 1), /stdin of 1048577 bytes, over 1048576/],
      ['env over its bound', header(65537, 0), /env of 65537 bytes, over 65536/],
      ["the client's deadline passed", frameRequest({ ...del(), deadlineMs: -1 }), /deadline has passed/],
    ];
    for (const [what, request, reason] of cases)
      assert.match(notServed(await ask(path, request)), reason, what);
    assert.equal(calls, 0, 'nothing was run');
    // a netconf the CNI layer refuses: the plugin's own error, naming the field
    const bad = cniError(await ask(path, cniCall('ADD', socketConf({ timeoutMs: 'soon' }))));
    assert.equal(bad.code, 7);
    assert.match(String(bad.details), /timeoutMs/);
    await server.close(1000);
  });

  test('nothing starts for a client that has gone; a call whose client closes is aborted', async () => {
    const path = join(root, 'k', 'ipam.sock');
    const held = heldDel();
    let gate!: () => void;
    const paused = new Promise<void>((resolve) => (gate = resolve));
    let reached!: () => void;
    const atRead = new Promise<void>((resolve) => (reached = resolve));
    const server = await start(path, held.service, {
      pause: async (step) => {
        if (step !== 'read') return;
        reached();
        await paused;
      },
    });
    // gone before the agent read its request: the agent, stalled, reads it later
    const gone = connect(agentSocketPath(path));
    gone.write(frameRequest(del(5000)));
    await atRead;
    gone.destroy();
    await once(gone, 'close');
    gate();
    // gone after READY without GO
    assert.deepEqual(await ask(path, del(5000), { go: false }), { closed: true, ready: true });
    held.release();
    assert.deepEqual(await ask(path, del(5000)), silentOk);
    assert.equal(held.calls(), 1, 'only the call whose client sent GO ran');
    await server.close(1000);

    // a call running when its client closes: its signal fires
    let aborted: unknown;
    const running = heldDel((signal) =>
      signal.addEventListener('abort', () => (aborted = signal.reason as unknown)),
    );
    const second = await start(path, running.service);
    const client = connect(second.path);
    client.on('data', () => client.write(Buffer.of(0x47)));
    client.write(frameRequest(del(5000)));
    await running.entered(1);
    client.destroy();
    await running.aborted;
    assert.match(String(aborted), /client closed the connection/);
    running.release();
    await second.close(1000);
  });

  test("close() leaves a successor's socket at the same path in place", async () => {
    const path = join(root, 'h', 'ipam.sock');
    const held = heldDel();
    const first = await start(path, held.service);
    const pending = ask(path, del(5000));
    await held.entered(1);
    const closing = first.close(5000); // stops accepting at once, drains the DEL in flight
    const successor = await start(path); // the first no longer accepts: its socket is stale
    const bound = statSync(agentSocketPath(path)).ino;
    held.release();
    assert.deepEqual(await pending, silentOk);
    await closing;
    assert.equal(statSync(agentSocketPath(path)).ino, bound, "the successor's socket is still there");
    assert.deepEqual(await ask(path, del(1000)), silentOk);
    await successor.close(1000);
    assert.throws(() => statSync(agentSocketPath(path)), /ENOENT/, 'the successor removes its own');
  });

  test('a file that is not a socket is refused, naming the path', async () => {
    const path = join(root, 'd', 'ipam.sock');
    mkdirSync(join(root, 'd'));
    writeFileSync(agentSocketPath(path), 'not a socket');
    await assert.rejects(
      start(path),
      new RegExp(`IPAM socket ${agentSocketPath(path)}: exists and is not a socket`),
    );
  });
});
