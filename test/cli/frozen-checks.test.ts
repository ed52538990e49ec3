// What ipamctl check says about tampered blocks (cli/audit/frozen-checks.ts, block-checks.ts'
// future-date split, owner-checks.ts' pod-ip-unallocated), through the whole audit on the memory
// store: each shape gives exactly its kinds, core's words and the hint saying what to do.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryDatastore, nodeLabel } from 'blockipam/core';
import type { IPAMBlock, Pod } from 'blockipam/core';
import { runAudit } from '../../cli/audit/audit.ts';
import type { AuditResult } from '../../cli/audit/audit.ts';
import { removeCommand } from '../../cli/audit/frozen-checks.ts';
import { buildReport } from '../../cli/audit/report.ts';
import { printSummary } from '../../cli/audit/summary.ts';
import { MAIN, shapedBlock, SHAPES_T0, VICTIM } from '../core/block-shapes.ts';

const NOW = SHAPES_T0 + 3_600_000;
const NAME = '10-244-88-192-26';

/** node-2's block holding ordinal 6 (10.244.88.198), changed by `edit`. */
function victim(edit: (b: IPAMBlock) => void = () => undefined): IPAMBlock {
  const block = shapedBlock(VICTIM);
  edit(block);
  return block;
}

/** A Running pod on node-1 with `ip`. */
function pod(name: string, ip: string): Pod {
  return {
    metadata: { namespace: 'ns', name, uid: `uid-${name}` },
    spec: { nodeName: 'node-1' },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

async function audit(blocks: IPAMBlock[], pods: Pod[] = []): Promise<AuditResult> {
  const ds = new MemoryDatastore({
    pools: [MAIN],
    blocks,
    pods,
    nodes: [{ metadata: { name: 'node-1' } }, { metadata: { name: 'node-2' } }],
  });
  return runAudit(ds, { nowMs: NOW });
}

/** Kind, message pattern and hint pattern (undefined: no hint) of one finding. */
type Want = [string, RegExp, RegExp | undefined];

const sequenceHint = new RegExp(`^ipamctl repair sequence ${NAME} \\(prints the plan`);

describe('check names tampered blocks, each finding with what to do', () => {
  // Each case: blocks, pods, and every finding expected (kind, message, hint), in report order.
  const cases: { name: string; blocks: IPAMBlock[]; pods?: Pod[]; want: Want[] }[] = [
    { name: 'a block as core writes it: nothing', blocks: [victim()], want: [] },
    {
      // annotations: nothing reads them, and kubectl apply adds its own
      name: 'annotations: nothing',
      blocks: [victim((b) => (b.metadata.annotations = { 'example.com/note': 'x' }))],
      want: [],
    },
    {
      name: 'finalizers: foreign-metadata, remove them',
      blocks: [victim((b) => (b.metadata.finalizers = ['example.com/hold']))],
      want: [
        [
          'foreign-metadata',
          new RegExp(
            `^IPAMBlock ${NAME} carries finalizers example\\.com/hold \\(core sets none\\): a delete of it hangs`,
          ),
          new RegExp(`^${escape(removeCommand(NAME, 'finalizers'))}; find who added them`),
        ],
      ],
    },
    {
      // the wipe: once the owner is gone, the garbage collector deletes the block
      name: 'ownerReferences: foreign-metadata, remove them at once',
      blocks: [
        victim(
          (b) =>
            (b.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'u' }]),
        ),
      ],
      want: [
        [
          'foreign-metadata',
          new RegExp(
            `^IPAMBlock ${NAME} carries ownerReferences to Node node-1 \\(core sets none\\): Kubernetes' garbage collector deletes the block, with its 1 allocation`,
          ),
          new RegExp(`^remove them at once: ${escape(removeCommand(NAME, 'ownerReferences'))}`),
        ],
      ],
    },
    {
      // deleted, held by a finalizer: its live allocation goes with it
      name: 'Terminating with an allocation: terminating-block first, finalizers kept',
      blocks: [
        victim((b) => {
          b.metadata.deletionTimestamp = '2026-12-03T08:30:00Z';
          b.metadata.finalizers = ['example.com/hold'];
        }),
      ],
      want: [
        [
          'terminating-block',
          new RegExp(
            `^IPAMBlock ${NAME} \\(10\\.244\\.88\\.192/26, affinity node-2\\) deleted at 2026-12-03T08:30:00Z, still Terminating, holding 1 allocation\\(s\\) of handle net\\.c6\\.eth0: once it goes`,
          ),
          /^keep its finalizers while it holds allocations; restart the pods .* once it holds none, kubectl patch/,
        ],
        ['foreign-metadata', /carries finalizers/, /^do not remove them while it holds allocations/],
      ],
    },
    {
      name: 'Terminating and empty: only its finalizers, which may go',
      blocks: [
        (() => {
          const b = shapedBlock({ cidr: '10.244.1.0/26' });
          b.metadata.deletionTimestamp = '2026-12-03T08:30:00Z';
          b.metadata.finalizers = ['example.com/hold'];
          return b;
        })(),
      ],
      want: [
        [
          'foreign-metadata',
          /^IPAMBlock 10-244-1-0-26 carries finalizers/,
          /^kubectl patch ipamblock 10-244-1-0-26 /,
        ],
        ['empty-block', /^IPAMBlock 10-244-1-0-26 /, undefined],
      ],
    },
    {
      // 2^53 + 1 as JSON reads as 2^53
      name: 'spec.sequence above 2^52: unsafe-sequence, repair it',
      blocks: [victim((b) => (b.spec.sequence = 2 ** 53))],
      want: [
        [
          'unsafe-sequence',
          new RegExp(
            `^IPAMBlock ${NAME}: spec\\.sequence 9007199254740992 is above 2\\^52 .*: the allocator hands out nothing from it$`,
          ),
          sequenceHint,
        ],
      ],
    },
    {
      name: "an allocation's sequence above 2^52 too: one finding naming both",
      blocks: [
        victim((b) => {
          b.spec.sequence = 2 ** 53;
          b.spec.allocations[6]!.sequence = 2 ** 53;
        }),
      ],
      want: [
        [
          'unsafe-sequence',
          /spec\.sequence 9007199254740992 .*; allocation 6 has sequence 9007199254740992/,
          sequenceHint,
        ],
      ],
    },
    {
      // once as future-date, not again as invalid-block
      name: 'a freed entry dated 2099: future-date only',
      blocks: [victim((b) => (b.spec.freed = [{ ordinal: 9, releasedAt: '2099-01-01T00:00:00Z' }]))],
      want: [
        [
          'future-date',
          new RegExp(`^IPAMBlock ${NAME}: freed ordinal 9 releasedAt 2099-01-01T00:00:00Z is in the future$`),
          /^core reads a freed entry's releasedAt or the affinityClaimTime later than now as the epoch/,
        ],
      ],
    },
    {
      // core reads 2099 as the epoch, so the release after it is in order: no invalid-block
      name: 'a freed entry dated 2099, then a release now: future-date only',
      blocks: [
        victim(
          (b) =>
            (b.spec.freed = [
              { ordinal: 9, releasedAt: '2099-01-01T00:00:00Z' },
              { ordinal: 10, releasedAt: new Date(NOW - 60_000).toISOString() },
            ]),
        ),
      ],
      want: [['future-date', /freed ordinal 9 releasedAt 2099-01-01T00:00:00Z is in the future$/, /epoch/]],
    },
    {
      name: 'affinityClaimTime in the future: future-date',
      blocks: [victim((b) => (b.spec.affinityClaimTime = '2099-01-01T00:00:00Z'))],
      want: [
        ['future-date', /affinityClaimTime 2099-01-01T00:00:00Z is in the future$/, /kubectl edit ipamblock/],
      ],
    },
    {
      name: 'a future date beside another broken rule: each in its own kind',
      blocks: [
        victim((b) => {
          b.spec.allocations[6]!.allocatedAt = '2099-01-01T00:00:00Z';
          b.spec.freed = [{ ordinal: 0, releasedAt: '2026-12-03T08:00:00Z' }];
        }),
      ],
      want: [
        ['invalid-block', /freed ordinal 0 is not assignable$/, undefined],
        ['future-date', /ordinal 6 allocatedAt 2099-01-01T00:00:00Z is in the future$/, /kubectl edit/],
      ],
    },
    {
      // a node credential may strip the "borrowed" label of its own addresses
      name: 'a stripped "borrowed" label: invalid-block',
      blocks: [
        (() => {
          const b = shapedBlock({ ...VICTIM, allocations: { 6: 'node-2', 7: 'node-1' } });
          delete b.metadata.labels?.[nodeLabel('node-1')];
          return b;
        })(),
      ],
      want: [
        [
          'invalid-block',
          new RegExp(
            `node "node-1" holds ordinal 7 but the label ${escape(nodeLabel('node-1'))}=borrowed is missing`,
          ),
          undefined,
        ],
      ],
    },
    {
      name: 'a foreign "borrowed" label: invalid-block',
      blocks: [victim((b) => (b.metadata.labels![nodeLabel('node-3')] = 'borrowed'))],
      want: [
        [
          'invalid-block',
          /stale label node\.ipam\.blockipam\.io\/[0-9a-f]+: no allocation of that node/,
          undefined,
        ],
      ],
    },
    {
      // the wipe: the pod's block is gone, its address recorded nowhere
      name: 'a live pod whose address no block covers: pod-ip-unallocated, may be handed out twice',
      blocks: [victim()],
      pods: [pod('web', '10.244.5.7')],
      want: [
        [
          'pod-ip-unallocated',
          /^pod ns\/web \(uid uid-web, node node-1\) has IP 10\.244\.5\.7, which no IPAMBlock allocates: no IPAMBlock covers it in IPPool main \(its block is gone/,
          /^10\.244\.5\.7 may be handed out twice: .*any node can claim its block again.*kubectl delete pod -n ns web/,
        ],
      ],
    },
    {
      name: 'a live pod whose address its block does not record: pod-ip-unallocated naming the block',
      blocks: [victim()],
      pods: [pod('web', '10.244.88.199')],
      want: [
        [
          'pod-ip-unallocated',
          new RegExp(`which no IPAMBlock allocates: IPAMBlock ${NAME} covers it and does not record it$`),
          new RegExp(`its ordinal is free in IPAMBlock ${NAME}`),
        ],
      ],
    },
  ];
  for (const { name, blocks, pods, want } of cases)
    test(name, async () => {
      const { problems } = await audit(blocks, pods);
      assert.deepEqual(
        problems.map((p) => p.kind),
        want.map(([kind]) => kind),
        JSON.stringify(problems, null, 1),
      );
      for (const [i, [, message, hint]] of want.entries()) {
        assert.match(problems[i]?.message ?? '', message);
        if (hint) assert.match(problems[i]?.hint ?? '', hint);
        else assert.equal(problems[i]?.hint, undefined);
      }
    });
});

test('the summary prints each finding’s hint under it', async () => {
  const result = await audit([victim((b) => (b.metadata.finalizers = ['example.com/hold']))]);
  let out = '';
  printSummary(
    { write: (t: string) => (out += t) },
    buildReport(result, { server: 's', kubeSystemUID: 'u' }),
    0,
  );
  assert.match(
    out,
    new RegExp(
      `\\[foreign-metadata\\] \\(1\\):\\n {4}- IPAMBlock ${NAME} carries finalizers .*\\n {6}what to do: ${escape(removeCommand(NAME, 'finalizers'))}; `,
    ),
  );
  assert.match(out, /Check complete: 1 problems found\./);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
