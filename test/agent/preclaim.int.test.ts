/**
 * The node agent's pre-claim and idle-block release on the real API server, with the real agent
 * process (block-controller/agent/main.ts): claims under the watermark, never past
 * maxBlocksPerNode (also when a concurrent claim gets there first: through test/agent/api-gate.ts,
 * which holds the agent's region LIST), nothing without autoAllocateBlocks, pools chosen by nodeSelector (and a
 * relabelled node), release after emptyBlockReleaseSeconds but never the last per (node, family),
 * SIGKILL during a pre-claim and restart, SIGTERM.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import {
  affineSelector,
  autoAssign,
  cidrOf,
  claimNodeBlock,
  REGION_LABEL,
  releaseByHandle,
} from 'blockipam/core';
import type { IPAMBlock, IPAMConfigSpec, IPPoolSpec } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import { kubectl } from '../helpers/control-plane.ts';
import { adminDatastore } from '../helpers/crds.ts';
import { applyNode, eventually, scrape, startAgent } from './agent-process.ts';
import { startApiGate, type ApiGate } from './api-gate.ts';
import type { AgentProcess } from './agent-process.ts';

let ds: KubeDatastore;
const running: AgentProcess[] = [];
let gate: ApiGate | undefined;
const agent = (node: string, args: string[] = []): AgentProcess => {
  const a = startAgent(node, ['--upkeep-seconds', '1', ...args]);
  running.push(a);
  return a;
};

async function reset(config: IPAMConfigSpec, pools: Record<string, IPPoolSpec>): Promise<void> {
  for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs'])
    kubectl(['delete', kind, '--all', '--wait=true']);
  await ds.configs.create({ metadata: { name: 'default' }, spec: config });
  for (const [name, spec] of Object.entries(pools)) await ds.pools.create({ metadata: { name }, spec });
}

/**
 * Resolves once `a` has finished two more upkeep passes than now: at least one of them started
 * after this call, so it planned on everything done before it.
 */
async function nextPass(a: AgentProcess): Promise<void> {
  const done = async (): Promise<number> =>
    Number(
      /blockipam_agent_upkeep_passes_total\{node="[^"]+",status="done",component="agent"\} (\d+)/.exec(
        (await scrape(a)).text,
      )?.[1] ?? 0,
    );
  const start = await done();
  await eventually('an upkeep pass', async () => ((await done()) >= start + 2 ? true : undefined));
}

const affine = async (node: string): Promise<IPAMBlock[]> =>
  ds.blocks.list({ labelSelector: affineSelector(node) });

/** Fills `count` addresses of `node` through core's allocator, as the plugin's ADDs would. */
async function allocate(node: string, count: number, from = 0): Promise<void> {
  for (let i = from; i < from + count; i++) {
    const got = await autoAssign(ds, { handle: `test.c${i}.eth0`, node, nodeLabels: {} });
    assert.equal(got.ok, true, JSON.stringify(got));
  }
}

describe('agent pre-claim and release', () => {
  before(() => {
    ds = adminDatastore();
    applyNode('pc-1');
  });
  afterEach(async () => {
    for (const a of running.splice(0)) await a.kill();
    await gate?.close();
    gate = undefined;
  });
  after(() => {
    for (const kind of ['ipamblocks', 'ippools', 'ipamconfigs']) kubectl(['delete', kind, '--all']);
    kubectl(['delete', 'node', 'pc-1', 'pc-2']);
    ds.close();
  });

  test('claims a block ahead of demand, and the next one when free addresses fall below the watermark', async () => {
    await reset({ minFreeAddressesPerNode: 16 }, { v4: { cidr: '10.50.0.0/16' } });
    const a = agent('pc-1');
    const first = await eventually('a first block', async () =>
      (await affine('pc-1')).length === 1 ? true : undefined,
    );
    assert.equal(first, true);
    // 61 usable in a /26: 45 allocations leave 16 free (at the watermark: no claim) ...
    await allocate('pc-1', 45);
    await a.waitFor((l) => l.message === 'block pre-claimed', 'first claim');
    await nextPass(a);
    assert.equal((await affine('pc-1')).length, 1, 'at the watermark: still one block');
    // ... the 46th leaves 15: the agent claims the second block, no ADD had to.
    const breach = Date.now();
    await allocate('pc-1', 1, 45);
    await eventually('a second block', async () => ((await affine('pc-1')).length === 2 ? true : undefined));
    const claimMs = Date.now() - breach;
    assert.equal((await affine('pc-1')).length, 2);
    const metrics = (await scrape(a)).text;
    assert.match(
      metrics,
      /blockipam_agent_blocks_claimed_total\{node="pc-1",pool="v4",component="agent"\} 2/,
    );
    assert.match(
      metrics,
      /blockipam_agent_free_addresses\{node="pc-1",pool="v4",family="4",component="agent"\} 76/,
    );
    assert.match(metrics, /blockipam_agent_min_free_addresses\{node="pc-1",component="agent"\} 16/);
    console.log(`# watermark breach → second block visible: ${claimMs} ms`);
  });

  test('never claims past maxBlocksPerNode: reports the pool at the limit, and a claim that meets a concurrent one there stops', async () => {
    await reset({ minFreeAddressesPerNode: 500, maxBlocksPerNode: 2 }, { v4: { cidr: '10.51.0.0/16' } });
    gate = await startApiGate();
    const a = agent('pc-1', ['--kubeconfig', gate.kubeconfig]);
    const atLimit = async (): Promise<true | undefined> =>
      /blockipam_agent_at_block_limit\{node="pc-1",pool="v4",component="agent"\} 1/.test(
        (await scrape(a)).text,
      )
        ? true
        : undefined;
    // By its own count: two blocks, then the pool is reported at the limit.
    await eventually('two blocks', async () => ((await affine('pc-1')).length === 2 ? true : undefined));
    await eventually('at_block_limit 1 at two blocks', atLimit);
    // The limit rises to 3 and the agent claims the third block; its region LIST (core's fresher
    // view, right before the CREATE) is held while a concurrent claim of the node — as an ADD on
    // it makes — takes the third. The agent's own count says 2, the LIST says 3: it must stop.
    const regionList = gate.hold(
      (method, url) =>
        method === 'GET' &&
        url.pathname.endsWith('/ipamblocks') &&
        (url.searchParams.get('labelSelector') ?? '').includes(REGION_LABEL),
    );
    const patched = kubectl([
      'patch',
      'ipamconfigs',
      'default',
      '--type=merge',
      '-p',
      '{"spec":{"maxBlocksPerNode":3}}',
    ]);
    assert.equal(patched.status, 0, patched.stderr);
    await regionList.held;
    const pools = await ds.pools.list();
    const pool = pools.find((p) => p.metadata.name === 'v4');
    assert.ok(pool);
    const third = await claimNodeBlock(ds, {
      pool,
      pools,
      node: 'pc-1',
      reservations: [],
      held: 2,
      maxBlocksPerNode: 3,
    });
    assert.notEqual(typeof third, 'string', `the concurrent claim got ${JSON.stringify(third)}`);
    regionList.release();
    await a.waitFor((l) => l.message === 'at maxBlocksPerNode; not pre-claiming', 'limit');
    // The next pass sees the third block through the watch and reports the limit again.
    await eventually('at_block_limit 1 at three blocks', atLimit);
    assert.equal((await affine('pc-1')).length, 3);
    const creates = gate.requests.filter(
      (r) => r.method === 'POST' && r.url.pathname.endsWith('/ipamblocks'),
    );
    assert.equal(creates.length, 2, 'the agent created its two blocks and never tried a third');
  });

  test('with autoAllocateBlocks false (strictAffinity) it claims nothing', async () => {
    await reset({ autoAllocateBlocks: false, strictAffinity: true }, { v4: { cidr: '10.52.0.0/16' } });
    const a = agent('pc-1');
    await eventually('ready', async () => ((await scrape(a, '/readyz')).status === 200 ? true : undefined));
    await nextPass(a);
    assert.equal((await affine('pc-1')).length, 0);
  });

  test('claims only in pools whose nodeSelector matches, and follows a relabelled node', async () => {
    applyNode('pc-2', { zone: 'b' });
    await reset(
      {},
      {
        zonea: { cidr: '10.53.0.0/16', nodeSelector: { matchLabels: { zone: 'a' } } },
        zoneb: { cidr: '10.54.0.0/16', nodeSelector: { matchLabels: { zone: 'b' } } },
      },
    );
    agent('pc-2');
    const blocks = await eventually('a zone-b block', async () => {
      const got = await affine('pc-2');
      return got.length > 0 ? got : undefined;
    });
    assert.deepEqual(
      blocks.map((b) => b.metadata.labels?.['ipam.blockipam.io/pool']),
      ['zoneb'],
    );
    applyNode('pc-2', { zone: 'a' });
    const pools = await eventually('a zone-a block after relabelling', async () => {
      const got = (await affine('pc-2')).map((b) => b.metadata.labels?.['ipam.blockipam.io/pool']);
      return got.includes('zonea') ? got : undefined;
    });
    assert.deepEqual(pools.sort(), ['zonea', 'zoneb']);
  });

  test('releases idle blocks after emptyBlockReleaseSeconds, never the last per (node, family)', async () => {
    await reset(
      { minFreeAddressesPerNode: 0, emptyBlockReleaseSeconds: 2 },
      { v4: { cidr: '10.55.0.0/16', blockSize: 29 }, v6: { cidr: 'fd00:55::/64', blockSize: 125 } },
    );
    // 3 IPv4 blocks of 5 usable (a /29) and 2 IPv6 blocks of 6 (a /125): fill, then free them.
    for (let i = 0; i < 15; i++) {
      const got = await autoAssign(ds, {
        handle: `rel.c${i}.eth0`,
        node: 'pc-1',
        nodeLabels: {},
        ipv6: i < 12,
      });
      assert.equal(got.ok, true, JSON.stringify(got));
    }
    const before = await affine('pc-1');
    assert.deepEqual(
      [
        before.filter((b) => cidrOf(b).family === 4).length,
        before.filter((b) => cidrOf(b).family === 6).length,
      ],
      [3, 2],
    );
    for (let i = 0; i < 15; i++) await releaseByHandle(ds, `rel.c${i}.eth0`);
    const a = agent('pc-1');
    const left = await eventually('one block per family left', async () => {
      const got = await affine('pc-1');
      return got.length === 2 ? got : undefined;
    });
    assert.deepEqual(left.map((b) => cidrOf(b).family).sort(), [4, 6]);
    await a.waitFor((l) => l.message === 'idle block released', 'released');
    await nextPass(a);
    assert.equal((await affine('pc-1')).length, 2, 'the last block of each family stays');
    assert.match(
      (await scrape(a)).text,
      /blockipam_agent_blocks_released_total\{node="pc-1",pool="v4",component="agent"\} 2/,
    );
  });

  test('SIGKILL during a pre-claim, restart: exactly the blocks the watermark needs, none leaked or doubled', async () => {
    // 300 free addresses need 5 /26 blocks (61 each).
    await reset({ minFreeAddressesPerNode: 300 }, { v4: { cidr: '10.56.0.0/16' } });
    const first = agent('pc-1');
    await first.waitFor((l) => l.message === 'block pre-claimed', 'first claim');
    await first.kill();
    const held = (await affine('pc-1')).length;
    assert.ok(held >= 1 && held <= 5, `held ${held}`);
    const second = agent('pc-1');
    await eventually('five blocks', async () => ((await affine('pc-1')).length >= 5 ? true : undefined));
    await eventually('ready', async () =>
      (await scrape(second, '/readyz')).status === 200 ? true : undefined,
    );
    await nextPass(second);
    const blocks = await ds.blocks.list();
    assert.equal(blocks.length, 5, `blocks: ${blocks.map((b) => b.metadata.name).join(', ')}`);
    assert.ok(blocks.every((b) => b.spec.affinity === 'pc-1'));
    assert.equal(new Set(blocks.map((b) => b.spec.cidr)).size, 5);
  });

  test('SIGTERM: stops its watches and exits 0', async () => {
    await reset({}, { v4: { cidr: '10.57.0.0/16' } });
    const a = agent('pc-1');
    await eventually('ready', async () => ((await scrape(a, '/readyz')).status === 200 ? true : undefined));
    a.child.kill('SIGTERM');
    assert.equal(await a.exited(), 0);
    const stopped = a.lines.find((l) => l.message === 'stopped');
    assert.equal(stopped?.clean, true);
  });
});
