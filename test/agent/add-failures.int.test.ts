/**
 * A failed ADD through the real agent process and the real API server: the answer on the agent's
 * IPAM socket (protocol v2: the CNI call whole) carries core's text in the CNI error's details — the pool, the reason, the next step, within the first 300
 * characters (what the pod's FailedCreatePodSandBox Event shows) — and the agent's
 * blockipam_agent_cni_add_failures_total counts it under pool_exhausted.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubectl } from '../helpers/control-plane.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { answerDoc, askSocket, cniCall, socketConf } from '../helpers/ipam-socket.ts';
import type { SocketAnswer } from '../helpers/ipam-socket.ts';
import { applyNode, eventually, scrape, startAgent } from './agent-process.ts';
import type { AgentProcess } from './agent-process.ts';

const NODE = 'explain-1';
const POOL = 'explain-tiny';
let ds: KubeDatastore;
let agent: AgentProcess;
let dir: string;
let socket: string;

const add = (containerID: string): Promise<SocketAnswer> =>
  askSocket(
    socket,
    cniCall(
      'ADD',
      { ...socketConf({ nodeName: NODE, timeoutMs: 20_000 }), name: 'blockipam' },
      {
        CNI_CONTAINERID: containerID,
      },
    ),
  );

describe('a failed ADD through the agent', () => {
  before(async () => {
    ds = adminDatastore();
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs'])
      kubectl(['delete', kind, '--all', '--wait=true']);
    applyNode(NODE);
    // a /29 of /30 blocks: 2 blocks of 1 pod each
    await ds.pools.create({ metadata: { name: POOL }, spec: { cidr: '10.63.0.0/29', blockSize: 30 } });
    dir = mkdtempSync(join(tmpdir(), 'add-failures-'));
    socket = join(dir, 'agent', 'ipam.sock');
    agent = startAgent(NODE, ['--ipam-socket', socket, '--upkeep-seconds', '1']);
    await agent.waitFor((l) => l.message === 'IPAM server listening', 'IPAM server listening');
  });
  after(async () => {
    await agent?.kill();
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs']) kubectl(['delete', kind, '--all']);
    kubectl(['delete', 'node', NODE]);
    rmSync(dir, { recursive: true, force: true });
    ds.close();
  });

  test('the pool full: exhausted naming the pool, the reason and the next step; counted by reason', async () => {
    // the agent answers CNI 11 until its watches synced
    await eventually('the first ADD served', async () => ((await add('a')).code === 0 ? true : undefined));
    assert.equal((await add('b')).code, 0);
    const third = answerDoc(await add('c'));
    assert.deepEqual([third?.code, third?.msg], [101, 'no free address'], JSON.stringify(third));
    const head = String(third?.details)
      .replace(/^node agent: /, '')
      .slice(0, 300);
    assert.match(head, new RegExp(`^IP pool "${POOL}" exhausted for node "${NODE}" \\(IPv4\\): `));
    assert.match(head, /no unclaimed block left/);
    assert.match(head, /Next step: add or enlarge an IPPool [^.]*\./);
    const metrics = (await scrape(agent)).text;
    assert.match(
      metrics,
      new RegExp(
        `blockipam_agent_cni_add_failures_total\\{node="${NODE}",reason="pool_exhausted"[^}]*\\} 1\\n`,
      ),
    );
    assert.match(
      metrics,
      new RegExp(
        `blockipam_agent_cni_add_failures_total\\{node="${NODE}",reason="node_block_limit"[^}]*\\} 0\\n`,
      ),
    );
  });
});
