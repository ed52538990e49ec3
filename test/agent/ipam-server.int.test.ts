/**
 * The agent's IPAM server (block-controller/agent/ipam/) with the real agent process against the
 * real API server, through its Unix socket: "not ready" before the first sync; ADD, a repeated
 * ADD, CHECK, DEL, GC, STATUS; 50 concurrent ADDs (distinct addresses; block UPDATEs the API
 * server saw, through test/agent/api-gate.ts, and the same in the agent's batching metrics); the socket's and directory's modes; malformed,
 * wrong-version and oversized requests answered badRequest while it keeps serving; SIGTERM
 * removes the socket.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { affineSelector, cidrContains, cidrOf, parseIP } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { MAX_REQUEST_BYTES, NODE_IPAM_PROTOCOL } from 'blockipam/core/node-ipam/protocol';
import { kubectl } from '../helpers/control-plane.ts';
import { askSocket } from '../helpers/ipam-socket.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { applyNode, eventually, scrape, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';
import { startApiGate, type ApiGate } from './api-gate.ts';

const NODE = 'ipams-1';
const NETWORK = 'blockipam';
let ds: KubeDatastore;
let gate: ApiGate;
let agent: AgentProcess;
let dir: string;
let socket: string;

/** One request over the socket: the raw text, or a JSON document. */
const ask = (payload: unknown): Promise<Record<string, unknown>> => askSocket(socket, payload);

const request = (op: string, call: Record<string, unknown>): Record<string, unknown> => ({
  v: NODE_IPAM_PROTOCOL,
  op,
  timeoutMs: 20_000,
  call: { node: NODE, ...call },
});
const attachment = (containerID: string) => ({ network: NETWORK, containerID, ifname: 'eth0' });
const add = (containerID: string) =>
  ask(
    request('add', {
      attachment: attachment(containerID),
      families: [4],
      pools: { 4: [], 6: [] },
      staticIPs: [],
    }),
  );
const status = () => ask(request('status', { families: [4], pools: { 4: [], 6: [] } }));

/** The outcome of an ok answer (fails the test on an error answer). */
function outcome(answer: Record<string, unknown>): Record<string, unknown> {
  assert.equal(answer.ok, true, JSON.stringify(answer));
  return answer.outcome as Record<string, unknown>;
}

const errorOf = (answer: Record<string, unknown>) => {
  assert.equal(answer.ok, false, JSON.stringify(answer));
  return answer.error as { kind: string; message: string };
};

const addressOf = (answer: Record<string, unknown>): string =>
  ((outcome(answer).ips as { address: string }[])[0] as { address: string }).address;

describe('agent IPAM server', () => {
  before(async () => {
    ds = adminDatastore();
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs'])
      kubectl(['delete', kind, '--all', '--wait=true']);
    applyNode(NODE);
    await ds.configs.create({ metadata: { name: 'default' }, spec: { minFreeAddressesPerNode: 8 } });
    // /24 blocks: 50 concurrent ADDs and the rest fit in the node's first block
    await ds.pools.create({ metadata: { name: 'v4' }, spec: { cidr: '10.61.0.0/16', blockSize: 24 } });
    gate = await startApiGate();
    dir = mkdtempSync(join(tmpdir(), 'ipam-server-'));
    socket = join(dir, 'agent', 'ipam.sock');
  });
  after(async () => {
    await agent?.kill();
    await gate?.close();
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs']) kubectl(['delete', kind, '--all']);
    kubectl(['delete', 'node', NODE]);
    rmSync(dir, { recursive: true, force: true });
    ds.close();
  });

  test('answers notReady before its first sync, then serves', async () => {
    // the first LIST of the node's blocks is held: the agent cannot sync
    const list = gate.hold(
      (method, url) =>
        method === 'GET' &&
        url.pathname.endsWith('/ipamblocks') &&
        url.searchParams.get('watch') !== 'true' &&
        (url.searchParams.get('labelSelector') ?? '').startsWith('node.ipam.blockipam.io/'),
    );
    agent = startAgent(NODE, [
      '--kubeconfig',
      gate.kubeconfig,
      '--upkeep-seconds',
      '1',
      '--ipam-socket',
      socket,
      '--log-level',
      'debug',
    ]);
    await list.held;
    await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening');
    const early = errorOf(await status());
    assert.equal(early.kind, 'notReady');
    assert.match(early.message, /not synced/);
    list.release();
    await eventually('a ready STATUS', async () => {
      const answer = await status();
      return answer.ok === true && (answer.outcome as { kind: string }).kind === 'ready' ? true : undefined;
    });
  });

  test('socket 0600 in a 0700 directory, both root-owned', () => {
    const s = statSync(socket);
    assert.equal(s.isSocket(), true);
    assert.equal(s.mode & 0o777, 0o600);
    assert.equal(s.uid, 0);
    const d = statSync(join(dir, 'agent'));
    assert.equal(d.mode & 0o777, 0o700);
    assert.equal(d.uid, 0);
  });

  test('ADD (also for a pod the API server does not know), repeated ADD, CHECK, DEL, CHECK, GC', async () => {
    const first = await add('c-one');
    const address = addressOf(first);
    const blocks = await ds.blocks.list({ labelSelector: affineSelector(NODE) });
    const ip = parseIP(address.split('/')[0] ?? '');
    assert.ok(ip, `an address: ${address}`);
    const holder = blocks.find((b) => cidrContains(cidrOf(b), ip));
    assert.ok(holder, `${address} lies in a block affine to ${NODE}`);
    assert.ok(
      Object.values(holder.spec.allocations).some((a) => a.handle === `${NETWORK}.c-one.eth0`),
      'the block records the handle',
    );
    assert.equal(outcome(await add('c-one')).kind, 'duplicate');
    // a pod the watch of this node's pods does not hold is read from the API server: none there
    const ghost = outcome(
      await ask(
        request('add', {
          attachment: attachment('c-ghost'),
          pod: { namespace: 'default', name: 'ghost' },
          families: [4],
          pools: { 4: [], 6: [] },
          staticIPs: [],
        }),
      ),
    );
    assert.equal(ghost.kind, 'allocated');
    assert.equal(ghost.podNotFound, true);
    assert.deepEqual(outcome(await ask(request('del', { attachment: attachment('c-ghost') }))), {
      released: 1,
    });
    const bare = address.split('/')[0] as string;
    const check = (expectedIPs: string[]) =>
      ask(request('check', { attachment: attachment('c-one'), expectedIPs }));
    assert.equal(outcome(await check([bare])).kind, 'ok');
    assert.deepEqual(outcome(await ask(request('del', { attachment: attachment('c-one') }))), {
      released: 1,
    });
    assert.equal(outcome(await check([bare])).kind, 'missing');
    assert.deepEqual(outcome(await ask(request('del', { attachment: attachment('c-one') }))), {
      released: 0,
    });
    // GC: of two attachments only c-keep is valid
    addressOf(await add('c-keep'));
    addressOf(await add('c-stale'));
    const gc = outcome(
      await ask(
        request('gc', { network: NETWORK, validAttachments: [{ containerID: 'c-keep', ifname: 'eth0' }] }),
      ),
    );
    assert.deepEqual(gc.released, [`${NETWORK}.c-stale.eth0`]);
    assert.equal(
      outcome(await ask(request('check', { attachment: attachment('c-keep'), expectedIPs: [] }))).kind !==
        'missing',
      true,
    );
  });

  test('50 concurrent ADDs: distinct addresses, few block UPDATEs', async () => {
    const isBlockUpdate = (r: { method: string; url: URL }) =>
      r.method === 'PUT' && r.url.pathname.includes('/ipamblocks/');
    /** The agent's batching counters: `<metric>:<result>` → value. */
    const batching = async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      const text = (await scrape(agent)).text;
      for (const m of text.matchAll(
        /^blockipam_agent_block_(updates|changes)_total\{[^}]*result="(\w+)"[^}]*\} (\S+)$/gm,
      ))
        out[`${m[1]}:${m[2]}`] = Number(m[3]);
      return out;
    };
    const counted = await batching();
    const before = gate.requests.filter(isBlockUpdate).length;
    const from = gate.requests.length;
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => add(`burst-${i}`)));
    const addresses = answers.map(addressOf);
    assert.equal(new Set(addresses).size, 50, 'every address distinct');
    const updates = gate.requests.filter(isBlockUpdate).length - before;
    console.log(`# 50 concurrent ADDs: ${updates} block UPDATEs (${(updates / 50).toFixed(2)} per ADD)`);
    assert.ok(updates < 50, `batched: ${updates} UPDATEs for 50 ADDs`);
    // the agent's metrics count the same UPDATEs and the 50 changes
    const now = await batching();
    const delta = (key: string): number => (now[key] ?? NaN) - (counted[key] ?? NaN);
    assert.equal(delta('updates:written') + delta('updates:conflict') + delta('updates:failed'), updates);
    assert.equal(delta('changes:written'), 50, JSON.stringify(now));
    // warm: the view answers the block LIST and the watches the rest — nothing is read
    const reads = gate.requests
      .slice(from)
      .filter((r) => r.method === 'GET' && r.url.searchParams.get('watch') !== 'true');
    assert.deepEqual(
      reads.map((r) => r.url.pathname),
      [],
      'no reads for warm ADDs',
    );
    const stored = (await ds.blocks.list({ labelSelector: affineSelector(NODE) })).flatMap((b) =>
      Object.values(b.spec.allocations).map((a) => a.handle),
    );
    for (let i = 0; i < 50; i++)
      assert.ok(stored.includes(`${NETWORK}.burst-${i}.eth0`), `burst-${i} stored`);
  });

  test('malformed, wrong-version and oversized requests: badRequest naming the field; it keeps serving', async () => {
    const notJson = errorOf(await ask('{"v": 1, \n'));
    assert.equal(notJson.kind, 'badRequest');
    assert.match(notJson.message, /^request: not JSON/);
    const version = errorOf(await ask({ ...request('status', {}), v: 99 }));
    assert.equal(version.kind, 'badRequest');
    assert.match(version.message, /protocol version 99/);
    const field = errorOf(await ask(request('add', { attachment: attachment('x'), families: [5] })));
    assert.equal(field.kind, 'badRequest');
    assert.match(field.message, /request\.call\.families/);
    const big = errorOf(await ask(Buffer.alloc(MAX_REQUEST_BYTES + 10, 0x20)));
    assert.equal(big.kind, 'badRequest');
    assert.match(big.message, /larger than/);
    assert.equal(outcome(await status()).kind, 'ready');
    const metrics = (await scrape(agent)).text;
    const has = (re: RegExp): void => assert.ok(re.test(metrics), `metrics show ${re}`);
    has(
      /blockipam_agent_ipam_requests_total\{node="ipams-1",op="add",outcome="allocated",component="agent"\} 54\n/,
    );
    has(
      /blockipam_agent_ipam_requests_total\{node="ipams-1",op="add",outcome="duplicate",component="agent"\} 1\n/,
    );
    has(
      /blockipam_agent_ipam_requests_total\{node="ipams-1",op="unknown",outcome="error_badRequest",component="agent"\} 4\n/,
    );
    has(/blockipam_agent_ipam_request_duration_seconds_count\{[^}]*op="add"[^}]*\} 55\n/);
  });

  test('SIGTERM: stops serving and removes the socket', async () => {
    assert.equal(existsSync(socket), true);
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited(), 0);
    assert.equal(existsSync(socket), false);
  });
});
