/**
 * The thin client through the dispatcher, in-process (node:net) against a stand-in agent on a
 * real Unix socket: each command forwarded with its call, results in the request's cniVersion,
 * the fallback only when connect() fails, never after a request was sent, error kinds → CNI
 * codes, `ipam.mode: standalone`, and the netconf fields. (The executable, on Bun's sockets:
 * agent-client.int.test.ts.)
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NodeIpamErrorKind, NodeIpamRequest } from 'blockipam/core/node-ipam/protocol';
import { agentBudgetMs } from '../../ipam-plugin/backend/agent-client.ts';
import { fakeAgent, okOutcomes, type AgentReply, type FakeAgent } from './helpers/fake-agent.ts';
import { fakeBackend } from './helpers/fake-backend.ts';
import { baseEnv, invoke, netconf } from './helpers/run-dispatch.ts';

const env = (command: string, extra: Record<string, string> = {}) => ({
  ...baseEnv,
  CNI_COMMAND: command,
  ...extra,
});

/** A stand-in agent whose reply the test sets per case. */
let reply: (req: NodeIpamRequest) => AgentReply;
let agent: FakeAgent;
before(async () => {
  agent = await fakeAgent((req) => reply(req));
});
after(() => agent.close());
const conf = (version: string, ipam: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  netconf(version, { agentSocket: agent.socket, ...ipam }, top);
/** The request the agent got last. */
const lastRequest = (): NodeIpamRequest => agent.requests.at(-1) as NodeIpamRequest;

void describe('thin client: forwarding', () => {
  void it('ADD: the call as core types it; the result in the request cniVersion', async () => {
    reply = (req) => ({ outcome: okOutcomes[req.op] });
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
    assert.deepEqual(lastRequest(), {
      v: 1,
      op: 'add',
      timeoutMs: agentBudgetMs(30_000),
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
    reply = (req) => ({ outcome: okOutcomes[req.op] });
    const old = await invoke(env('ADD'), conf('0.2.0'), fakeBackend());
    assert.deepEqual(old.json, {
      cniVersion: '0.2.0',
      ip4: { ip: '10.244.0.5/26', gateway: '10.244.0.1', routes: [{ dst: '0.0.0.0/0' }] },
    });
    const cur = await invoke(env('ADD'), conf('1.1.0'), fakeBackend());
    assert.equal(cur.json?.cniVersion, '1.1.0');
  });
  const silent: [string, Record<string, string>, string, NodeIpamRequest['call']][] = [
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
      reply = (req) => ({ outcome: okOutcomes[req.op] });
      const backend = fakeBackend();
      const r = await invoke(
        env(command, extra),
        conf('1.1.0', {}, JSON.parse(top) as Record<string, unknown>),
        backend,
      );
      assert.equal(r.code, 0, r.stdout);
      assert.equal(r.stdout, '');
      assert.equal(lastRequest().op, command.toLowerCase());
      assert.deepEqual(lastRequest().call, call);
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

void describe('thin client: failures', () => {
  const kinds: [NodeIpamErrorKind, number, number][] = [
    // kind, code for ADD, code for STATUS (notReady: not decided by the agent — next describe)
    ['notReady', 11, 0],
    ['unavailable', 11, 50],
    ['timeout', 11, 11],
    ['auth', 105, 105],
    ['forbidden', 105, 105],
    // an admission policy's denial: its own code, apart from credentials (105)
    ['admission', 107, 107],
    ['apiRejected', 106, 106],
    ['badRequest', 999, 999],
    // a call naming another node than the agent's: ipam.nodeName is wrong, as the direct path says
    ['misconfigured', 7, 7],
    ['internal', 999, 999],
  ];
  for (const [kind, addCode, statusCode] of kinds)
    void it(`error kind ${kind} → ${addCode} (STATUS ${statusCode}), the agent's message in details`, async () => {
      reply = () => ({ error: { kind, message: `agent says ${kind}` } });
      const backend = fakeBackend();
      const add = await invoke(env('ADD'), conf('1.0.0'), backend);
      assert.equal(add.json?.code, addCode, add.stdout);
      assert.match(String(add.json?.details), new RegExp(`agent says ${kind}`));
      const status = await invoke(env('STATUS'), conf('1.1.0'), backend);
      assert.equal(status.json?.code ?? 0, statusCode, status.stdout);
      assert.deepEqual(
        backend.calls.map((c) => c.op),
        kind === 'notReady' ? ['status'] : [],
        'no fallback after a request was sent (but a STATUS the agent did not decide)',
      );
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
    ['another protocol version', '{"v":2,"ok":true,"outcome":{}}\n', /protocol version 2/],
    ['an outcome of the wrong shape', '{"v":1,"ok":true,"outcome":{"kind":"allocated","ips":[]}}\n', /ips/],
    ['an unknown error kind', '{"v":1,"ok":false,"error":{"kind":"nope","message":"x"}}\n', /error/],
    ['no newline before close, not JSON', '{"v":1,', /not JSON/],
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
    assert.equal(lastRequest().timeoutMs, agentBudgetMs(300), 'the agent gets the budget less its margin');
    assert.deepEqual(backend.calls, []);
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
    reply = (req) => ({ outcome: okOutcomes[req.op] });
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

void describe('thin client: a STATUS the agent did not decide goes to the direct path', () => {
  // An agent that is restarting answers notReady until it has synced, or is killed mid-call: a
  // STATUS (a read) then asks the API server itself, so the kubelet never sees the node's
  // network not ready for the restart (found on the real cluster).
  void it('notReady (not synced) → the direct path answers: ready', async () => {
    reply = () => ({ error: { kind: 'notReady', message: 'the agent has not synced yet (all)' } });
    const backend = fakeBackend();
    const r = await invoke(env('STATUS'), conf('1.1.0'), backend);
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(
      backend.calls.map((c) => c.op),
      ['status'],
    );
  });
  void it('notReady → the direct path; its failure is STATUS 50', async () => {
    reply = () => ({ error: { kind: 'notReady', message: 'stopping' } });
    const down = await invoke(env('STATUS'), conf('1.1.0'), fakeBackend({ unreachable: true }));
    assert.equal(down.json?.code, 50, down.stdout);
  });
  void it('the direct path gets what is left of the one ipam.timeoutMs, not a fresh budget', async () => {
    // the agent says notReady 300 ms after the request: at most 1000 - 300 ms are left
    reply = () => ({
      after: new Promise((resolve) => setTimeout(resolve, 300)),
      then: { error: { kind: 'notReady', message: 'the agent has not synced yet (all)' } },
    });
    const backend = fakeBackend();
    const given: number[] = [];
    const r = await invoke(env('STATUS'), conf('1.1.0', { timeoutMs: 1000 }), (c) => {
      given.push(c.timeoutMs);
      return Promise.resolve(backend);
    });
    assert.equal(r.code, 0, r.stdout);
    assert.equal(given.length, 1);
    assert.ok((given[0] as number) <= 700, `the direct path was given ${given[0]} ms`);
    assert.match(r.stderr, /asking the API server directly.*"timeoutMs":\d+/);
  });
  const decided: [string, AgentReply, number, RegExp][] = [
    ['closed without an answer', { close: true }, 11, /closed the connection without an answer/],
    ['no answer in time', { silent: true }, 11, /did not answer in time/],
    ['a malformed answer', { raw: 'hello\n' }, 999, /answer malformed/],
  ];
  for (const [what, answer, code, msg] of decided)
    void it(`${what} → ${code}, not asked again on the direct path`, async () => {
      reply = () => answer;
      const backend = fakeBackend();
      const r = await invoke(env('STATUS'), conf('1.1.0', { timeoutMs: 300 }), backend);
      assert.equal(r.json?.code, code, r.stdout);
      assert.match(String(r.json?.msg), msg);
      assert.deepEqual(backend.calls, []);
    });
  void it('an outcome the agent decided (notReady: no free address) is not asked again', async () => {
    reply = () => ({ outcome: { kind: 'notReady', message: 'no free address' } });
    const backend = fakeBackend();
    assert.equal((await invoke(env('STATUS'), conf('1.1.0'), backend)).json?.code, 50);
    assert.deepEqual(backend.calls, []);
  });
  void it('an ADD the agent did not answer is never retried on the direct path', async () => {
    reply = () => ({ error: { kind: 'notReady', message: 'the agent has not synced yet (all)' } });
    const backend = fakeBackend();
    assert.equal((await invoke(env('ADD'), conf('1.0.0'), backend)).json?.code, 11);
    assert.deepEqual(backend.calls, []);
  });
});
