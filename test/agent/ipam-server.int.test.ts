/**
 * The agent's IPAM server (block-controller/agent/ipam/) with the real agent process against the
 * real API server, through its Unix socket in wire v3: readiness per command — NOT_SERVED while
 * the blocks' watch has not listed, a DEL and an ADD served while the Namespaces and IPAMNodes
 * watches have not; ADD, a repeated ADD, CHECK, DEL, GC, STATUS, each answered with the plugin's
 * exit code and stdout; 50 concurrent ADDs (distinct addresses; block UPDATEs the API server
 * saw, through test/agent/api-gate.ts, and the same in the agent's batching metrics); the
 * socket's and directory's modes; malformed, wrong-version and oversized requests NOT_SERVED
 * while it keeps serving; SIGTERM removes the socket.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { affineSelector, cidrContains, cidrOf, parseIP } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { agentSocketPath, MAX_STDIN_BYTES } from 'blockipam/core/node-ipam';
import { kubectl } from '../helpers/control-plane.ts';
import { answerDoc, askSocket, cniCall, frameRequest } from '../helpers/ipam-socket.ts';
import type { CallPayload, SocketAnswer } from '../helpers/ipam-socket.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { applyNode, eventually, scrape, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';
import { startApiGate, type ApiGate } from './api-gate.ts';
import { nodeHandles } from './fixtures.ts';

const NODE = 'ipams-1';
const NETWORK = 'blockipam';
let ds: KubeDatastore;
let gate: ApiGate;
let agent: AgentProcess;
let dir: string;
let socket: string;

/** One call over the socket: framed, or bytes as they are. */
const ask = (payload: CallPayload | Buffer): Promise<SocketAnswer> => askSocket(socket, payload);

/** This node's netconf; `top` merged in at the top level. */
const conf = (top: Record<string, unknown> = {}, cniVersion = '1.0.0') => ({
  cniVersion,
  name: NETWORK,
  type: 'ptp',
  ipam: { type: 'blockipam', nodeName: NODE, timeoutMs: 20_000 },
  ...top,
});
const call = (command: string, containerID: string, top: Record<string, unknown> = {}, env = {}) =>
  ask(cniCall(command, conf(top), { CNI_CONTAINERID: containerID, ...env }));
const add = (containerID: string, env: Record<string, string> = {}) => call('ADD', containerID, {}, env);
const del = (containerID: string) => call('DEL', containerID);
const check = (containerID: string, address: string) =>
  call('CHECK', containerID, { prevResult: { cniVersion: '1.0.0', ips: [{ address }] } });
const status = () => ask(cniCall('STATUS', conf({}, '1.1.0')));

/** The CNI result of a successful answer (fails the test on anything else). */
function result(answer: SocketAnswer): Record<string, unknown> {
  assert.equal(answer.code, 0, JSON.stringify(answer));
  return answerDoc(answer) ?? {};
}
/** Success with nothing on stdout (DEL, CHECK, GC, STATUS). */
function silent(answer: SocketAnswer): void {
  assert.deepEqual([answer.code, answer.stdout], [0, ''], JSON.stringify(answer));
}
/** The CNI error document of a failed answer. */
function cniError(answer: SocketAnswer): Record<string, unknown> {
  assert.equal(answer.code, 1, JSON.stringify(answer));
  return answerDoc(answer) ?? {};
}

const addressOf = (answer: SocketAnswer): string =>
  ((result(answer).ips as { address: string }[])[0] as { address: string }).address;
/** The handles allocated on this node's blocks. */
const handles = (): Promise<string[]> => nodeHandles(ds, NODE);

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

  test('readiness per command: NOT_SERVED until its watches listed; no wait for the others', async () => {
    // the LISTs of the node's blocks fail (500), and of the Namespaces and IPAMNodes (404: as
    // after an upgrade that skipped the CRDs)
    const list = gate.refuse(
      (method, url) =>
        method === 'GET' &&
        url.pathname.endsWith('/ipamblocks') &&
        url.searchParams.get('watch') !== 'true' &&
        (url.searchParams.get('labelSelector') ?? '').startsWith('node.ipam.blockipam.io/'),
      500,
    );
    const others = gate.refuse(
      (method, url) =>
        method === 'GET' &&
        (url.pathname === '/api/v1/namespaces' || url.pathname.endsWith('/ipamnodes')) &&
        url.searchParams.get('watch') !== 'true',
      404,
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
    await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening');
    await eventually('the watches started', async () => {
      const why = (await del('c-early')).notServed;
      return why !== 'the agent has not started its watches' ? true : undefined;
    });
    assert.match(String((await del('c-early')).notServed), /^not synced yet: blocks$/);
    assert.match(String((await status()).notServed), /^not synced yet: blocks$/);
    list.lift();
    // served although the Namespaces and IPAMNodes watches have not listed
    await eventually('DEL served', async () => ((await del('c-early')).code === 0 ? true : undefined));
    const early = await add('c-early');
    addressOf(early);
    silent(await del('c-early'));
    others.lift();
  });

  test('socket 0600 in a 0700 directory, both root-owned', () => {
    const s = statSync(agentSocketPath(socket));
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
    assert.equal(cniError(await add('c-one')).code, 100, 'duplicate allocation');
    // a pod the watch of this node's pods does not hold is read from the API server: none there
    const ghost = await add('c-ghost', { CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=ghost' });
    addressOf(ghost);
    assert.match(String(ghost.stderr), /pod not found: allocation recorded without a pod reference/);
    silent(await del('c-ghost'));
    assert.equal((await handles()).includes(`${NETWORK}.c-ghost.eth0`), false);
    silent(await check('c-one', address));
    silent(await del('c-one'));
    assert.equal(cniError(await check('c-one', address)).code, 103, 'missing');
    silent(await del('c-one'));
    // GC: of two attachments only c-keep is valid
    addressOf(await add('c-keep'));
    addressOf(await add('c-stale'));
    silent(
      await ask(
        cniCall(
          'GC',
          conf({ 'cni.dev/valid-attachments': [{ containerID: 'c-keep', ifname: 'eth0' }] }, '1.1.0'),
        ),
      ),
    );
    const left = await handles();
    assert.equal(left.includes(`${NETWORK}.c-stale.eth0`), false, 'c-stale released');
    assert.equal(left.includes(`${NETWORK}.c-keep.eth0`), true, 'c-keep kept');
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
    const stored = await handles();
    for (let i = 0; i < 50; i++)
      assert.ok(stored.includes(`${NETWORK}.burst-${i}.eth0`), `burst-${i} stored`);
  });

  test('malformed, wrong-version and oversized requests: NOT_SERVED naming the problem; it keeps serving', async () => {
    const refused = (answer: SocketAnswer, reason: RegExp): void =>
      assert.match(String(answer.notServed), reason);
    const v2 = { v: 2, env: { CNI_COMMAND: 'STATUS' }, stdin: JSON.stringify(conf()) };
    refused(await ask(Buffer.from(`${JSON.stringify(v2)}\n`)), /protocol version 123, this agent speaks 3/);
    refused(await ask(frameRequest(cniCall('STATUS', conf()), 2)), /protocol version 2, this agent speaks 3/);
    const oversized = frameRequest({ env: {}, stdin: '' });
    oversized.writeUint32BE(MAX_STDIN_BYTES + 10, 13);
    refused(await ask(oversized), /over 1048576/);
    refused(await ask({ ...cniCall('STATUS', conf()), deadlineMs: -1 }), /deadline has passed/);
    silent(await status());

    const metrics = (await scrape(agent)).text;
    const has = (re: RegExp): void => assert.ok(re.test(metrics), `metrics show ${re}`);
    has(
      /blockipam_agent_ipam_requests_total\{node="ipams-1",op="add",outcome="allocated",component="agent"\} 55\n/,
    );
    has(
      /blockipam_agent_ipam_requests_total\{node="ipams-1",op="add",outcome="duplicate",component="agent"\} 1\n/,
    );
    has(
      /blockipam_agent_ipam_requests_total\{node="ipams-1",op="unknown",outcome="not_served",component="agent"\} 3\n/,
    );
    has(/blockipam_agent_ipam_request_duration_seconds_count\{[^}]*op="add"[^}]*\} 56\n/);
  });

  test('SIGTERM: stops serving and removes the socket', async () => {
    assert.equal(existsSync(agentSocketPath(socket)), true);
    agent.child.kill('SIGTERM');
    assert.equal(await agent.exited(), 0);
    assert.equal(existsSync(agentSocketPath(socket)), false);
  });
});
