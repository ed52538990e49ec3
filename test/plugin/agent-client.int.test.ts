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
import { fakeAgent, okOutcome, type AgentReply, type FakeAgent } from './helpers/fake-agent.ts';
import {
  assertAdded,
  assertCniError,
  assertSilentSuccess,
  env,
  handle,
  setupSuite,
  type Suite,
} from './helpers/conformance.ts';
import type { CniCallRequest } from 'blockipam/core/node-ipam/protocol';

void describe('the executable as the node agent thin client', () => {
  let s: Suite;
  let agent: FakeAgent;
  let reply: (req: CniCallRequest) => AgentReply = () => ({ outcome: okOutcome });
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
    reply = () => ({ outcome: okOutcome });
    const r = assertAdded(await s.run(env('ADD', 'ag1'), viaAgent({}, '0.4.0')));
    assert.deepEqual(r, {
      cniVersion: '0.4.0',
      ips: [{ version: '4', address: '10.244.0.5/26', gateway: '10.244.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
    });
    const req = agent.requests.at(-1) as CniCallRequest;
    assert.equal(req.v, 2);
    assert.equal(req.env.CNI_COMMAND, 'ADD');
    assert.equal(req.stdin, viaAgent({}, '0.4.0'), 'stdin as the runtime gave it');
    assert.deepEqual((agent.calls.at(-1)?.call as { attachment: unknown }).attachment, {
      network: 'confnet',
      containerID: 'ag1',
      ifname: 'eth0',
    });
    assert.equal(allocated('ag1'), false);
    assertSilentSuccess(await s.run(env('DEL', 'ag1'), viaAgent()));
    assert.equal((agent.requests.at(-1) as CniCallRequest).env.CNI_COMMAND, 'DEL');
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
    reply = () => ({ raw: '{"v":2,"code":0,"stdout":{}}\n' });
    const doc = assertCniError(await s.run(env('ADD', 'ag6'), viaAgent()), 999);
    assert.match(String(doc.details), /response\.stdout/);
    assert.equal(allocated('ag6'), false);
  });
  void it("the agent's answer is written as it is: exit code, stdout, stderr", async () => {
    reply = () => ({ answer: { code: 7, stdout: '{"x":1}\n', stderr: 'line\n' } });
    const r = await s.run(env('ADD', 'ag7'), viaAgent());
    assert.deepEqual([r.status, r.stdout, r.stderr], [7, '{"x":1}\n', 'line\n']);
    assert.equal(allocated('ag7'), false);
  });
});
