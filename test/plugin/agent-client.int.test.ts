/**
 * The executable as a thin client (Bun's native sockets, host/unix-socket.ts), against a
 * stand-in agent on a Unix socket and the real API server behind the direct path: a forwarded
 * ADD, the fallback to the direct path only when connect() fails (it allocates on the API
 * server), and no fallback once the request was sent (no answer, a close, a malformed answer:
 * nothing is allocated on the API server although the direct path would have succeeded).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fakeAgent, okOutcomes, type AgentReply, type FakeAgent } from './helpers/fake-agent.ts';
import {
  assertAdded,
  assertCniError,
  assertSilentSuccess,
  env,
  handle,
  setupSuite,
  type Suite,
} from './helpers/conformance.ts';
import type { NodeIpamRequest } from 'blockipam/core/node-ipam/protocol';

void describe('the executable as the node agent thin client', () => {
  let s: Suite;
  let agent: FakeAgent;
  let reply: (req: NodeIpamRequest) => AgentReply = (req) => ({ outcome: okOutcomes[req.op] });
  before(async () => {
    s = setupSuite();
    agent = await fakeAgent((req) => reply(req));
  });
  after(async () => {
    await agent?.close();
    await s?.teardown();
  });
  const viaAgent = (ipam: Record<string, unknown> = {}, version = '1.0.0') =>
    s.conf(version, { agentSocket: agent.socket, ...ipam });
  const allocated = (id: string) => s.fx.allocations().has(handle(id));

  void it('ADD goes to the agent: its result in the request cniVersion, nothing on the API server', async () => {
    reply = (req) => ({ outcome: okOutcomes[req.op] });
    const r = assertAdded(await s.run(env('ADD', 'ag1'), viaAgent({}, '0.4.0')));
    assert.deepEqual(r, {
      cniVersion: '0.4.0',
      ips: [{ version: '4', address: '10.244.0.5/26', gateway: '10.244.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
    });
    const req = agent.requests.at(-1) as NodeIpamRequest;
    assert.equal(req.op, 'add');
    assert.deepEqual(req.op === 'add' ? req.call.attachment : undefined, {
      network: 'confnet',
      containerID: 'ag1',
      ifname: 'eth0',
    });
    assert.equal(allocated('ag1'), false);
    assertSilentSuccess(await s.run(env('DEL', 'ag1'), viaAgent()));
    assert.equal((agent.requests.at(-1) as NodeIpamRequest).op, 'del');
  });
  void it('no socket file: the direct path allocates on the API server', async () => {
    const conf = s.conf('1.0.0', { agentSocket: join(s.tmp, 'no-agent.sock') });
    assertAdded(await s.run(env('ADD', 'ag2'), conf));
    assert.equal(allocated('ag2'), true);
    assertSilentSuccess(await s.run(env('DEL', 'ag2'), conf));
    assert.equal(allocated('ag2'), false);
  });
  void it('ipam.mode standalone: the direct path, and the live socket gets no connection', async () => {
    const before = agent.connections;
    assertAdded(await s.run(env('ADD', 'ag3'), viaAgent({ mode: 'standalone' })));
    assert.equal(allocated('ag3'), true);
    assert.equal(agent.connections, before);
    assertSilentSuccess(await s.run(env('DEL', 'ag3'), viaAgent({ mode: 'standalone' })));
  });
  void it('the agent never answers: 11 within ipam.timeoutMs, and no fallback', async () => {
    reply = () => ({ silent: true });
    const t0 = performance.now();
    const r = await s.run(env('ADD', 'ag4'), viaAgent({ timeoutMs: 500 }));
    const took = performance.now() - t0;
    const doc = assertCniError(r, 11);
    assert.match(String(doc.msg), /did not answer in time/);
    assert.ok(took >= 450 && took < 5_000, `answered after ${Math.round(took)} ms`);
    assert.equal(allocated('ag4'), false, 'the direct path did not run');
  });
  void it('the agent closes without an answer: 11, no fallback', async () => {
    reply = () => ({ close: true });
    const doc = assertCniError(await s.run(env('ADD', 'ag5'), viaAgent()), 11);
    assert.match(String(doc.msg), /without an answer/);
    assert.equal(allocated('ag5'), false);
  });
  void it('a malformed answer: 999 naming the problem, no fallback', async () => {
    reply = () => ({ raw: '{"v":1,"ok":true,"outcome":{"kind":"allocated"}}\n' });
    const doc = assertCniError(await s.run(env('ADD', 'ag6'), viaAgent()), 999);
    assert.match(String(doc.details), /outcome\.ips/);
    assert.equal(allocated('ag6'), false);
  });
  void it('an error kind: its code (unavailable → 11; STATUS 50)', async () => {
    reply = () => ({ error: { kind: 'unavailable', message: 'API server down' } });
    assertCniError(await s.run(env('ADD', 'ag7'), viaAgent()), 11);
    const status = {
      CNI_COMMAND: 'STATUS',
      CNI_PATH: '/opt/cni/bin',
    };
    assertCniError(await s.run(status, viaAgent({}, '1.1.0')), 50);
  });
});
