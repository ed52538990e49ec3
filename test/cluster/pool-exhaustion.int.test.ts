/**
 * A small pool filled until it is exhausted, on the real 3-node cluster after `helm install`
 * (docs/design-controller.md §Pool conditions): a /26 pool of /28 blocks (4 blocks of 13
 * assignable addresses: 52) used only by the test's namespace (its `ipam.blockipam.io/ippools`
 * annotation), filled by a spread Deployment. IPAMConfig: poolNearlyExhaustedPercent 50 (so the
 * percentage rule shows apart from "no unclaimed block", which a pool of 4 blocks reaches first at
 * the default 90), minFreeAddressesPerNode 1 (each agent pre-claims one block of the pool: 3
 * claimed, 1 unclaimed), emptyBlockReleaseSeconds 10 (idle blocks go back within the test).
 *
 * Steps (one cluster, state shared): Ready with 0 and 25 addresses used (25·100 < 50·52);
 * NearlyExhausted (AboveThreshold) at 26 with a PoolNearlyExhausted Event on the IPPool;
 * Exhausted at 52 with 3 pods Pending, whose FailedCreatePodSandBox Events name the pool and the
 * reason, a PoolExhausted Event, `kubectl get ippools` showing it, `kubectl wait` on the
 * condition; scaled to 0 → Ready again. At each step the leading controller's and the agents'
 * /metrics (scraped directly: no Prometheus here) carry the pool's figures of IPPool.status.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { kubectl, kubectlOk } from '../helpers/cluster.ts';
import { pods, podsRunning, spreadDeployment, waitFor } from './blockipam.ts';
import { installWithPluginLog, setUpChart, tearDownChart, waitRolledOut } from './chart.ts';
import { pick, scrapeAgents, scrapeLeader, sum } from './metrics.ts';

const ns = 'bipam-exhaust';
const app = 'fill';
const POOL = 'bipam-small';
const CAPACITY = 52; // 4 × (16 − network, gateway, broadcast)
const PERCENT = 50;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface PoolStatus {
  capacity?: number;
  allocated?: number;
  free?: number;
  blocks?: number;
  unclaimedBlocks?: number;
  freeInClaimedBlocks?: number;
  state?: string;
  conditions?: Condition[];
}

const statusOf = (): PoolStatus =>
  (JSON.parse(kubectlOk(['get', 'ippool', POOL, '-o', 'json'])) as { status?: PoolStatus }).status ?? {};
const condition = (s: PoolStatus, type: string): Condition | undefined =>
  s.conditions?.find((c) => c.type === type);

before(() => {
  const image = setUpChart(ns);
  kubectlOk(['annotate', 'namespace', ns, `ipam.blockipam.io/ippools=["${POOL}"]`]);
  installWithPluginLog(image, {
    set: [
      `ipamConfig.poolNearlyExhaustedPercent=${PERCENT}`,
      'ipamConfig.minFreeAddressesPerNode=1',
      'ipamConfig.emptyBlockReleaseSeconds=10',
    ],
  });
  waitRolledOut();
  kubectlOk(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPPool',
      metadata: { name: POOL },
      spec: {
        cidr: '10.250.0.0/26',
        blockSize: 28,
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      },
    }),
  );
  kubectlOk(['-n', ns, 'apply', '-f', '-'], JSON.stringify(spreadDeployment(app, 0, 0)));
});
after(() => tearDownChart(ns));

function scale(replicas: number): void {
  kubectlOk(['-n', ns, 'scale', `deployment/${app}`, `--replicas=${replicas}`]);
}

/** Waits for the pool's status with `allocated` addresses and state `state`; returns it. */
function poolAt(allocated: number, state: string, extra: (s: PoolStatus) => boolean = () => true) {
  let last: PoolStatus = {};
  return waitFor(
    `IPPool ${POOL} with ${allocated} allocated and state ${state}`,
    () => {
      last = statusOf();
      return last.allocated === allocated && last.state === state && extra(last) ? last : undefined;
    },
    300_000,
    1000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; last status: ${JSON.stringify(last)}`);
  });
}

/** The conditions the stated rule gives for `s`'s figures (core/allocator/pool-conditions.ts). */
function assertRule(s: PoolStatus): void {
  const used = CAPACITY - (s.free ?? 0);
  const nearly = used * 100 >= PERCENT * CAPACITY || s.unclaimedBlocks === 0;
  const exhausted = s.free === 0;
  const show = JSON.stringify(s);
  assert.equal(s.capacity, CAPACITY, show);
  assert.equal(condition(s, 'NearlyExhausted')?.status, nearly ? 'True' : 'False', show);
  assert.equal(condition(s, 'Exhausted')?.status, exhausted ? 'True' : 'False', show);
  assert.equal(condition(s, 'Ready')?.status, exhausted ? 'False' : 'True', show);
}

/**
 * Waits until the leading controller's and every agent's /metrics carry `s`'s figures: the
 * pool's size, allocated, free, blocks claimed / unclaimed and free in claimed blocks (the
 * controller); the agents' free addresses and affine blocks of the pool, summed over the nodes,
 * equal to the controller's free in claimed blocks and blocks claimed (every block of the pool
 * is affine to some node: the agents' watermark claims, never an unowned one).
 */
async function metricsMatch(s: PoolStatus): Promise<void> {
  const want = {
    size: s.capacity,
    allocated: s.allocated,
    free: s.free,
    claimed: s.blocks,
    unclaimed: s.unclaimedBlocks,
    freeInClaimed: s.freeInClaimedBlocks,
    agentsFree: s.freeInClaimedBlocks,
    agentsBlocks: s.blocks,
  };
  let last: Record<string, number | undefined> = {};
  await waitFor(
    `the metrics of ${POOL} to match its status ${JSON.stringify(want)}`,
    () => {
      const c = scrapeLeader();
      if (!c) return undefined;
      const agents = scrapeAgents();
      const pool = { ippool: POOL };
      const agentSum = (name: string): number =>
        agents.reduce((a, { samples }) => a + (sum(samples, name, { pool: POOL }) ?? 0), 0);
      last = {
        size: sum(c, 'blockipam_ipam_ippool_size', pool),
        allocated: sum(c, 'blockipam_ipam_ippool_allocated', pool),
        free: sum(c, 'blockipam_ipam_ippool_free', pool),
        claimed: sum(c, 'blockipam_ipam_ippool_blocks_claimed', pool),
        unclaimed: sum(c, 'blockipam_ipam_ippool_blocks_unclaimed', pool),
        freeInClaimed: sum(c, 'blockipam_ipam_ippool_free_in_claimed_blocks', pool),
        agentsFree: agentSum('blockipam_agent_free_addresses'),
        agentsBlocks: agentSum('blockipam_agent_affine_blocks'),
      };
      return Object.entries(want).every(([k, v]) => last[k] === v) ? true : undefined;
    },
    120_000,
    2000,
  ).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(last)}`);
  });
  const c = scrapeLeader() ?? [];
  for (const type of ['Ready', 'NearlyExhausted', 'Exhausted'])
    assert.equal(
      sum(c, 'blockipam_ipam_ippool_condition', { ippool: POOL, condition: type }),
      condition(s, type)?.status === 'True' ? 1 : 0,
      `blockipam_ipam_ippool_condition{condition="${type}"}`,
    );
}

/** The Events on the IPPool with `reason` (namespace default, where the controller writes them). */
function poolEvents(reason: string): { note: string }[] {
  const list = JSON.parse(
    kubectlOk([
      '-n',
      'default',
      'get',
      'events.events.k8s.io',
      '--field-selector',
      `regarding.kind=IPPool,regarding.name=${POOL},reason=${reason}`,
      '-o',
      'json',
    ]),
  ) as { items: { note?: string }[] };
  return list.items.map((e) => ({ note: e.note ?? '' }));
}

test('Ready while under the threshold: each agent pre-claims one block; 25 of 52 used', async () => {
  const empty = await poolAt(0, 'Ready', (s) => s.blocks === 3);
  assertRule(empty);
  assert.equal(condition(empty, 'NearlyExhausted')?.reason, 'BelowThreshold');
  await metricsMatch(empty);
  scale(25);
  await podsRunning(ns, app, 25);
  const s = await poolAt(25, 'Ready');
  assertRule(s);
  assert.equal(s.unclaimedBlocks, 1, `spread 9/8/8: no node needs a second block: ${JSON.stringify(s)}`);
  assert.equal(condition(s, 'NearlyExhausted')?.reason, 'BelowThreshold');
  await metricsMatch(s);
});

test(`NearlyExhausted at ${PERCENT}%: 26 of 52 used, an Event on the IPPool`, async () => {
  scale(26);
  await podsRunning(ns, app, 26);
  const s = await poolAt(26, 'NearlyExhausted');
  assertRule(s);
  assert.equal(condition(s, 'NearlyExhausted')?.reason, 'AboveThreshold');
  assert.match(condition(s, 'NearlyExhausted')?.message ?? '', /26 of 52 .*50%/);
  const events = await waitFor(
    'a PoolNearlyExhausted Event',
    () => {
      const e = poolEvents('PoolNearlyExhausted');
      return e.length > 0 ? e : undefined;
    },
    60_000,
  );
  assert.match(events[0]?.note ?? '', /NearlyExhausted \(AboveThreshold\)/);
  await metricsMatch(s);
});

test('Exhausted at 52: Pending pods say which pool and why; kubectl shows and waits for it', async (t) => {
  scale(55);
  kubectlOk(['wait', '--for=condition=Exhausted', `ippool/${POOL}`, '--timeout=300s']);
  const s = await poolAt(CAPACITY, 'Exhausted');
  assertRule(s);
  assert.equal(s.free, 0);
  assert.equal(condition(s, 'Exhausted')?.reason, 'NoFreeAddresses');
  // the pods that found no address: their sandbox events carry the plugin's error
  const pending = await waitFor(
    '3 pods Pending and 52 Running',
    () => {
      const all = pods(ns, `app=${app}`);
      const running = all.filter((p) => p.status.phase === 'Running' && p.status.podIP);
      const waiting = all.filter((p) => p.status.phase === 'Pending');
      return running.length === CAPACITY && waiting.length === 3 ? waiting : undefined;
    },
    300_000,
    2000,
  );
  const names = new Set(pending.map((p) => p.metadata.name));
  const messages = await waitFor(
    'FailedCreatePodSandBox Events of the Pending pods',
    () => {
      const list = JSON.parse(
        kubectlOk([
          '-n',
          ns,
          'get',
          'events',
          '--field-selector',
          'reason=FailedCreatePodSandBox',
          '-o',
          'json',
        ]),
      ) as { items: { involvedObject: { name: string }; message: string }[] };
      const mine = list.items.filter((e) => names.has(e.involvedObject.name)).map((e) => e.message);
      return mine.length > 0 ? mine : undefined;
    },
    120_000,
    2000,
  );
  // the pool by name, the reason and the next step (core/allocator/failure-text.ts); the quotes
  // may come escaped (\") through the runtime's error text
  const said = new RegExp(
    `IP pool \\\\?"${POOL}\\\\?" exhausted for node \\\\?"node-\\d\\\\?" \\(IPv4\\): every block full, no unclaimed block left.*Next step: `,
  );
  const explained = messages.filter((m) => said.test(m));
  assert.ok(explained.length > 0, `no sandbox event names ${POOL} and the reason:\n${messages.join('\n')}`);
  t.diagnostic(`sandbox event: ${explained[0] ?? ''}`);
  // the Event on the IPPool, and the columns of kubectl get ippools
  const events = await waitFor(
    'a PoolExhausted Event',
    () => {
      const e = poolEvents('PoolExhausted');
      return e.length > 0 ? e : undefined;
    },
    60_000,
  );
  assert.match(events[0]?.note ?? '', /Exhausted \(NoFreeAddresses\)/);
  const table = kubectlOk(['get', 'ippools', POOL]).trim().split('\n');
  assert.match(table[0] ?? '', /^NAME\s+CIDR\s+BLOCK SIZE\s+USED\s+FREE\s+STATE\s+AGE$/);
  assert.match(
    table[1] ?? '',
    new RegExp(`^${POOL}\\s+10\\.250\\.0\\.0/26\\s+28\\s+52\\s+0\\s+Exhausted\\s`),
  );
  const wide = kubectlOk(['get', 'ippools', POOL, '-o', 'wide']).trim().split('\n');
  const columns = (wide[0] ?? '').split(/\s{2,}/);
  const values = (wide[1] ?? '').split(/\s{2,}/);
  const at = (name: string): string | undefined => values[columns.indexOf(name)];
  assert.equal(at('READY'), 'False', wide.join('\n'));
  assert.equal(at('NEARLY EXHAUSTED'), 'True', wide.join('\n'));
  assert.equal(at('EXHAUSTED'), 'True', wide.join('\n'));
  assert.equal(at('UNCLAIMED'), '0', wide.join('\n'));
  await metricsMatch(s);
  // the agents counted the refused ADDs by reason
  const refused = scrapeAgents().reduce(
    (a, { samples }) =>
      a +
      pick(samples, 'blockipam_agent_ipam_requests_total', { op: 'add', outcome: 'exhausted' }).reduce(
        (b, x) => b + x.value,
        0,
      ),
    0,
  );
  assert.ok(refused > 0, 'blockipam_agent_ipam_requests_total{op="add",outcome="exhausted"} counted none');
  const byReason = scrapeAgents().reduce(
    (a, { samples }) =>
      a + (sum(samples, 'blockipam_agent_cni_add_failures_total', { reason: 'pool_exhausted' }) ?? 0),
    0,
  );
  assert.ok(byReason > 0, 'blockipam_agent_cni_add_failures_total{reason="pool_exhausted"} counted none');
});

test('scaled to 0: the idle blocks go back and the pool is Ready again', async () => {
  scale(0);
  await waitFor(
    'every pod of the Deployment gone',
    () => (pods(ns, `app=${app}`).length === 0 ? true : undefined),
    300_000,
  );
  kubectlOk(['wait', '--for=condition=NearlyExhausted=False', `ippool/${POOL}`, '--timeout=300s']);
  const s = await poolAt(0, 'Ready');
  assertRule(s);
  assert.equal(condition(s, 'Exhausted')?.status, 'False');
  await metricsMatch(s);
  const failed = kubectl(['-n', ns, 'get', 'pods', '--no-headers']);
  assert.equal(failed.stdout.trim(), '', failed.stdout);
});
