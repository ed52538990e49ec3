/**
 * The thin client in-process (ipam-plugin/call.ts on node:net) against a stand-in agent on a real
 * Unix socket that runs core/cni's dispatcher as the agent does: each command forwarded whole
 * (protocol v2: the set CNI_* variables and stdin as received), the answer written as it is,
 * results in the request's cniVersion, the fallback only when connect() fails, never after a
 * request was sent, the client's own errors (11, 999) in the netconf's cniVersion,
 * `ipam.mode: standalone`, and the netconf fields. (The executable, on Bun's sockets:
 * agent-client.int.test.ts.)
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CniCallRequest, NodeIpamErrorKind } from 'blockipam/core/node-ipam/protocol';
import { fakeAgent, okOutcome, type AgentReply, type FakeAgent } from './helpers/fake-agent.ts';
import { fakeBackend } from './helpers/fake-backend.ts';
import { baseEnv, invoke, netconf } from './helpers/run-dispatch.ts';

const env = (command: string, extra: Record<string, string> = {}) => ({
  ...baseEnv,
  CNI_COMMAND: command,
  ...extra,
});

/** A stand-in agent whose reply the test sets per case. */
let reply: (req: CniCallRequest) => AgentReply;
let agent: FakeAgent;
before(async () => {
  agent = await fakeAgent((req) => reply(req));
});
after(() => agent.close());
const conf = (version: string, ipam: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  netconf(version, { agentSocket: agent.socket, ...ipam }, top);
/** The request the agent got last. */
const lastRequest = (): CniCallRequest => agent.requests.at(-1) as CniCallRequest;
/** The node IPAM call the agent's dispatcher made last. */
const lastCall = () => agent.calls.at(-1);

void describe('thin client: forwarding', () => {
  void it('ADD: the call as core types it; the result in the request cniVersion', async () => {
    reply = () => ({ outcome: okOutcome });
    const backend = fakeBackend();
    const r = await invoke(
      env('ADD', { CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p1;K8S_POD_UID=u1' }),
      conf(
        '0.3.1',
        { assignIPv6: true, ipv4Pools: ['a'] },
        {
          runtimeConfig: { ips: ['10.244.0.9'], 'io.kubernetes.cri.pod-annotations': { k: 'v' } },
        },
      ),
      backend,
    );
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(r.json, {
      cniVersion: '0.3.1',
      ips: [{ version: '4', address: '10.244.0.5/26', gateway: '10.244.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
    });
    const stdin = conf(
      '0.3.1',
      { assignIPv6: true, ipv4Pools: ['a'] },
      { runtimeConfig: { ips: ['10.244.0.9'], 'io.kubernetes.cri.pod-annotations': { k: 'v' } } },
    );
    assert.deepEqual(lastRequest(), {
      v: 2,
      env: { ...env('ADD'), CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=p1;K8S_POD_UID=u1' },
      stdin,
    });
    assert.deepEqual(lastCall(), {
      op: 'add',
      call: {
        attachment: { network: 'net1', containerID: 'ctr1', ifname: 'eth0' },
        pod: { namespace: 'ns1', name: 'p1', uid: 'u1' },
        node: 'node-a',
        families: [4, 6],
        pools: { 4: ['a'], 6: [] },
        staticIPs: ['10.244.0.9'],
        staticIPsFrom: 'runtimeConfig.ips',
        podAnnotations: { k: 'v' },
      },
    });
    assert.deepEqual(backend.calls, [], 'the direct path never ran');
  });
  void it('ADD in 0.2.0 and 1.1.0: the shape of each version', async () => {
    reply = () => ({ outcome: okOutcome });
    const old = await invoke(env('ADD'), conf('0.2.0'), fakeBackend());
    assert.deepEqual(old.json, {
      cniVersion: '0.2.0',
      ip4: { ip: '10.244.0.5/26', gateway: '10.244.0.1', routes: [{ dst: '0.0.0.0/0' }] },
    });
    const cur = await invoke(env('ADD'), conf('1.1.0'), fakeBackend());
    assert.equal(cur.json?.cniVersion, '1.1.0');
  });
  const silent: [string, Record<string, string>, string, unknown][] = [
    [
      'DEL',
      { CNI_ARGS: 'K8S_POD_UID=u9' },
      '{}',
      {
        attachment: { network: 'net1', containerID: 'ctr1', ifname: 'eth0' },
        node: 'node-a',
        podUID: 'u9',
      },
    ],
    [
      'CHECK',
      {},
      JSON.stringify({ prevResult: { ips: [{ address: '10.244.0.5/26' }] } }),
      {
        attachment: { network: 'net1', containerID: 'ctr1', ifname: 'eth0' },
        node: 'node-a',
        expectedIPs: ['10.244.0.5'],
      },
    ],
    [
      'GC',
      {},
      JSON.stringify({ 'cni.dev/valid-attachments': [{ containerID: 'c2', ifname: 'eth0' }] }),
      { network: 'net1', node: 'node-a', validAttachments: [{ containerID: 'c2', ifname: 'eth0' }] },
    ],
    ['STATUS', {}, '{}', { node: 'node-a', families: [4], pools: { 4: [], 6: [] } }],
  ];
  for (const [command, extra, top, call] of silent)
    void it(`${command}: forwarded with its call; success prints nothing`, async () => {
      reply = () => ({ outcome: okOutcome });
      const backend = fakeBackend();
      const r = await invoke(
        env(command, extra),
        conf('1.1.0', {}, JSON.parse(top) as Record<string, unknown>),
        backend,
      );
      assert.equal(r.code, 0, r.stdout);
      assert.equal(r.stdout, '');
      assert.equal(lastRequest().env.CNI_COMMAND, command);
      assert.deepEqual(lastCall(), { op: command.toLowerCase(), call });
      assert.deepEqual(backend.calls, []);
    });
  void it('an ADD outcome maps to the CNI error the direct path gives (duplicate → 100 …)', async () => {
    const cases: [unknown, number][] = [
      [{ kind: 'duplicate', message: 'm' }, 100],
      [{ kind: 'exhausted', message: 'm' }, 101],
      [{ kind: 'addressRefused', message: 'runtimeConfig.ips: 10.1.1.1 taken' }, 102],
      [{ kind: 'rejected', message: 'm' }, 104],
      [{ kind: 'misconfigured', message: 'm' }, 7],
    ];
    for (const [outcome, code] of cases) {
      reply = () => ({ outcome });
      const r = await invoke(env('ADD'), conf('1.0.0'), fakeBackend());
      assert.equal(r.json?.code, code, JSON.stringify(outcome));
    }
    // CHECK's mismatch and STATUS's notReady are outcomes too
    reply = () => ({ outcome: { kind: 'mismatch', message: 'prevResult names 10.1.1.1' } });
    assert.equal((await invoke(env('CHECK'), conf('1.0.0'), fakeBackend())).json?.code, 103);
    reply = () => ({ outcome: { kind: 'notReady', message: 'no free address' } });
    assert.equal((await invoke(env('STATUS'), conf('1.1.0'), fakeBackend())).json?.code, 50);
  });
});

void describe('thin client: the wire', () => {
  void it('only the CNI_* variables that are set travel; stdin as received, byte for byte', async () => {
    reply = () => ({ outcome: okOutcome });
    const stdin = `  ${conf('1.0.0')}\n\n`; // whitespace around the document: still the agent's to parse
    const r = await invoke(
      { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c9', CNI_IFNAME: 'eth1', CNI_PATH: '/p', HOME: '/root' },
      stdin,
      fakeBackend(),
    );
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(lastRequest(), {
      v: 2,
      env: { CNI_COMMAND: 'DEL', CNI_CONTAINERID: 'c9', CNI_IFNAME: 'eth1', CNI_PATH: '/p' },
      stdin,
    });
  });
  void it("the answer is written as it is: the agent's exit code, stdout and stderr", async () => {
    reply = () => ({ answer: { code: 3, stdout: 'out\n', stderr: 'err\n' } });
    const backend = fakeBackend();
    const r = await invoke(env('ADD'), conf('1.0.0'), backend);
    assert.deepEqual([r.code, r.stdout, r.stderr], [3, 'out\n', 'err\n']);
    assert.deepEqual(backend.calls, []);
  });
});

void describe('thin client: failures', () => {
  const kinds: [NodeIpamErrorKind, number][] = [
    ['notReady', 11],
    ['unavailable', 11],
    ['timeout', 11],
    ['auth', 105],
    ['forbidden', 105],
    // an admission policy's denial: its own code, apart from credentials (105)
    ['admission', 107],
    ['apiRejected', 106],
    ['badRequest', 999],
    // a call naming another node than the agent's: ipam.nodeName is wrong, as the direct path says
    ['misconfigured', 7],
    ['internal', 999],
  ];
  for (const [kind, addCode] of kinds)
    void it(`error kind ${kind} → ${addCode}, the agent's message in details, no fallback`, async () => {
      reply = () => ({ error: { kind, message: `agent says ${kind}` } });
      const backend = fakeBackend();
      const add = await invoke(env('ADD'), conf('1.0.0'), backend);
      assert.equal(add.json?.code, addCode, add.stdout);
      assert.match(String(add.json?.details), new RegExp(`agent says ${kind}`));
      assert.deepEqual(backend.calls, [], 'no fallback after a request was sent');
    });
  void it("the agent's refusal reaches the CNI error whole: policy, node and pool past 300 characters", async () => {
    const why = `ValidatingAdmissionPolicy 'r-blockipam-node-claims' denied the request (HTTP 403 Forbidden): POST /apis/ipam.blockipam.io/v1alpha1/ipamblocks: HTTP 403: ipamblocks.ipam.blockipam.io "10-78-0-0-26" is forbidden: ValidatingAdmissionPolicy 'r-blockipam-node-claims' with binding 'r-blockipam-node-claims' denied request: blockipam: node n1 may claim IPAMBlock 10-78-0-0-26 only in a usable IPPool; label ipam.blockipam.io/pool is "claims-pool", which the controller has not listed in ConfigMap ns/r-blockipam-claim-pools`;
    reply = () => ({ error: { kind: 'admission', message: why } });
    const r = await invoke(env('ADD'), conf('1.0.0'), fakeBackend());
    assert.equal(r.json?.code, 107, r.stdout);
    assert.equal(r.json?.msg, 'admission policy denied the write');
    assert.equal(r.json?.details, `node agent: ${why}`);
  });
  const malformed: [string, string, RegExp][] = [
    ['not JSON', 'hello\n', /not JSON/],
    ['protocol version 1', '{"v":1,"ok":true,"outcome":{}}\n', /protocol version 1, this plugin speaks 2/],
    ['an unknown protocol version', '{"v":"2","code":0,"stdout":"","stderr":""}\n', /protocol version "2"/],
    ['a code that is no integer', '{"v":2,"code":"0","stdout":"","stderr":""}\n', /response\.code/],
    ['a code out of range', '{"v":2,"code":256,"stdout":"","stderr":""}\n', /response\.code: 256/],
    ['no stdout', '{"v":2,"code":0,"stderr":""}\n', /response\.stdout/],
    ['stderr not a string', '{"v":2,"code":0,"stdout":"","stderr":1}\n', /response\.stderr/],
  ];
  for (const [what, raw, problem] of malformed)
    void it(`a malformed answer (${what}) → 999 naming the problem, no fallback`, async () => {
      reply = () => ({ raw });
      const backend = fakeBackend();
      const r = await invoke(env('ADD'), conf('1.0.0'), backend);
      assert.equal(r.json?.code, 999, r.stdout);
      assert.equal(r.json?.msg, 'node agent answer malformed');
      assert.match(String(r.json?.details), problem);
      assert.deepEqual(backend.calls, []);
    });
  void it('an answer cut off (closed before its newline) → 11 "incomplete", not 999, no fallback', async () => {
    for (const raw of ['{"v":2,', '{"v":2,"code":0,"stdout":"","stderr":""}']) {
      reply = () => ({ raw });
      const backend = fakeBackend();
      const r = await invoke(env('ADD'), conf('1.0.0'), backend);
      assert.equal(r.json?.code, 11, `${raw}: ${r.stdout}`);
      assert.equal(r.json?.msg, 'node agent answer incomplete');
      assert.match(String(r.json?.details), new RegExp(`after ${raw.length} bytes of the answer`));
      assert.deepEqual(backend.calls, []);
    }
  });
  void it('the agent closes without an answer → 11, no fallback', async () => {
    reply = () => ({ close: true });
    const backend = fakeBackend();
    const r = await invoke(env('DEL'), conf('1.0.0'), backend);
    assert.equal(r.json?.code, 11, r.stdout);
    assert.match(String(r.json?.msg), /closed the connection without an answer/);
    assert.deepEqual(backend.calls, []);
  });
  void it('the agent accepts and never answers → 11 within the budget, no fallback', async () => {
    reply = () => ({ silent: true });
    const backend = fakeBackend();
    const t0 = performance.now();
    const r = await invoke(env('ADD'), conf('1.0.0', { timeoutMs: 300 }), backend);
    const took = performance.now() - t0;
    assert.equal(r.json?.code, 11, r.stdout);
    assert.match(String(r.json?.msg), /did not answer in time/);
    assert.ok(took >= 250 && took < 3_000, `answered after ${Math.round(took)} ms`);
    assert.deepEqual(backend.calls, []);
  });
  const versions: [string, string, string][] = [
    // what, stdin's cniVersion, the client's error document's
    ['a supported one', '0.4.0', '0.4.0'],
    ['any string (the agent would refuse it; the client only echoes)', '9.9.9', '9.9.9'],
  ];
  for (const [what, given, echoed] of versions)
    void it(`the client's own error is in the netconf's cniVersion: ${what}`, async () => {
      reply = () => ({ close: true });
      const r = await invoke(env('ADD'), conf(given), fakeBackend());
      assert.equal(r.json?.cniVersion, echoed, r.stdout);
    });
  void it("the client's own error without a cniVersion: 1.1.0", async () => {
    reply = () => ({ raw: 'hello\n' });
    const stdin = JSON.stringify({ name: 'n', ipam: { type: 'blockipam', agentSocket: agent.socket } });
    const r = await invoke(env('ADD'), stdin, fakeBackend());
    assert.deepEqual([r.code, r.json?.cniVersion, r.json?.code], [1, '1.1.0', 999]);
  });
});

void describe('thin client: the direct path', () => {
  void it('no socket file (ENOENT): the direct path serves the call, and the log says why', async () => {
    const backend = fakeBackend();
    const r = await invoke(
      env('ADD'),
      netconf('1.0.0', { agentSocket: join(agent.socket, '..', 'none.sock') }),
      backend,
    );
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(
      backend.calls.map((c) => c.op),
      ['add'],
    );
    assert.match(r.stderr, /node agent unreachable: taking the direct path.*ENOENT/);
  });
  void it('a file that is no socket (ECONNREFUSED): the direct path', async () => {
    const file = join(agent.socket, '..', 'plain-file');
    writeFileSync(file, '');
    const backend = fakeBackend();
    const r = await invoke(env('DEL'), netconf('1.0.0', { agentSocket: file }), backend);
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(
      backend.calls.map((c) => c.op),
      ['del'],
    );
  });
  void it('ipam.mode standalone never connects, even to a live socket', async () => {
    reply = () => ({ outcome: okOutcome });
    const before = agent.connections;
    const backend = fakeBackend();
    const r = await invoke(env('ADD'), conf('1.0.0', { mode: 'standalone' }), backend);
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(
      backend.calls.map((c) => c.op),
      ['add'],
    );
    assert.equal(agent.connections, before);
  });
  void it('without ipam.agentSocket: the direct path (today behaviour)', async () => {
    const backend = fakeBackend();
    const r = await invoke(env('ADD'), netconf('1.0.0'), backend);
    assert.equal(r.code, 0, r.stdout);
    assert.equal(backend.calls.length, 1);
  });
});

void describe('netconf: agentSocket and mode', () => {
  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['a relative agentSocket', { agentSocket: 'run/ipam.sock' }, /ipam\.agentSocket/],
    ['a non-string agentSocket', { agentSocket: 7 }, /ipam\.agentSocket/],
    [
      'an agentSocket too long for sun_path',
      { agentSocket: `/${'s'.repeat(107)}` },
      /ipam\.agentSocket: 108 bytes/,
    ],
    ['an unknown mode', { mode: 'proxy' }, /ipam\.mode/],
    ['mode agent without agentSocket', { mode: 'agent' }, /ipam\.mode: "agent" needs ipam\.agentSocket/],
  ];
  for (const [what, ipam, field] of bad)
    void it(`${what} → 7 naming the field`, async () => {
      const r = await invoke(env('ADD'), netconf('1.0.0', ipam), fakeBackend());
      assert.equal(r.json?.code, 7, r.stdout);
      assert.match(String(r.json?.details), field);
    });
});

void describe('thin client: what the agent answered is final', () => {
  // The agent decides STATUS itself while it has not synced (it asks the API server: agent
  // tests); the client never asks the direct path once the request was written.
  const answered: [string, AgentReply, number, RegExp][] = [
    ['notReady', { error: { kind: 'notReady', message: 'stopping' } }, 11, /node agent not ready/],
    ['closed without an answer', { close: true }, 11, /closed the connection without an answer/],
    ['no answer in time', { silent: true }, 11, /did not answer in time/],
    ['a malformed answer', { raw: 'hello\n' }, 999, /answer malformed/],
  ];
  for (const [what, answer, code, msg] of answered)
    void it(`STATUS: ${what} → ${code}, not asked again on the direct path`, async () => {
      reply = () => answer;
      const backend = fakeBackend();
      const r = await invoke(env('STATUS'), conf('1.1.0', { timeoutMs: 300 }), backend);
      assert.equal(r.json?.code, code, r.stdout);
      assert.match(String(r.json?.msg), msg);
      assert.deepEqual(backend.calls, []);
    });
  void it('an ADD the agent did not answer is never retried on the direct path', async () => {
    reply = () => ({ error: { kind: 'notReady', message: 'the agent has not synced yet (all)' } });
    const backend = fakeBackend();
    assert.equal((await invoke(env('ADD'), conf('1.0.0'), backend)).json?.code, 11);
    assert.deepEqual(backend.calls, []);
  });
});
