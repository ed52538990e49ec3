/**
 * The chart's least privilege on the real API server: its ServiceAccounts, ClusterRoles,
 * bindings and ValidatingAdmissionPolicies (rendered by Helm, applied as they are), then each
 * identity tries what it must not do and the answer — RBAC's 403 or the policy's message — is
 * asserted. The node credentials are the agent's — a TokenRequest token of the node
 * ServiceAccount bound to a Pod object scheduled on a node (spec.nodeName) — and the plugin's —
 * a token of the plugin ServiceAccount bound to the Node, as the agent mints it: both carry the
 * node's name (asserted with `kubectl auth whoami`), both are held to the same per-node rules.
 * No kubelet is needed: the pods never run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { allocateOrdinal, newBlock, nodeLabel, parseCidr, releaseHandle } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { admin, adminOk, allowed, as, ChartIdentities, eventually, refused } from './identities.ts';
import type { KubectlResult } from './identities.ts';

const NS = 'chart-rbac';
const RELEASE = 'rbac'; // objects: rbac-blockipam-*
const chart = new ChartIdentities(NS, RELEASE);
const NODE_SA = chart.nodeSA;
const PLUGIN_SA = chart.pluginSA;
const CONTROLLER_SA = chart.controllerSA;
const NODES = ['rbac-n1', 'rbac-n2'] as const;
const POOL = 'rbac-pool';
const uids = chart.uids;
let seq = 0;
const kubeconfigFor = (name: string, token: string): string => chart.kubeconfigFor(name, token);
const credential = (sa: string, pod?: string): string => chart.credential(sa, pod);

const forbidden = (sa: string, verb: string, resource: string): RegExp =>
  new RegExp(`User "system:serviceaccount:${NS}:${sa}" cannot ${verb} resource "${resource}"`);

/** An IPAMBlock of POOL with allocations {ordinal: node} (and extra labels). */
function block(
  cidr: string,
  affinity: string | null,
  allocations: Record<number, string> = {},
  labels: Record<string, string> = {},
): object {
  const now = new Date().toISOString();
  return {
    apiVersion: 'ipam.blockipam.io/v1alpha1',
    kind: 'IPAMBlock',
    metadata: { name: cidr.replace(/[.:/]/g, '-'), labels: { 'ipam.blockipam.io/pool': POOL, ...labels } },
    spec: {
      cidr,
      affinity,
      affinityClaimTime: now,
      sequence: 100 + ++seq,
      allocations: Object.fromEntries(
        Object.entries(allocations).map(([ordinal, node]) => [
          ordinal,
          // fixed fields: the same allocation written again is unchanged
          {
            handle: `rbac.${node}.${ordinal}`,
            node,
            allocatedAt: '2026-12-01T00:00:00Z',
            sequence: 1 + Number(ordinal),
          },
        ]),
      ),
      freed: [],
    },
  };
}

/** The block as stored (the admin reads it). */
const stored = (name: string): IPAMBlock =>
  JSON.parse(adminOk(['get', 'ipamblock', name, '-o', 'json'])) as IPAMBlock;

/** Core's allocation of `ordinal` for `node` (handle `rbac.<node>.<ordinal>`). */
const allocate = (b: IPAMBlock, ordinal: number, node: string): IPAMBlock =>
  allocateOrdinal(b, ordinal, { handle: `rbac.${node}.${ordinal}`, node }, Date.now())!.block;

/** Core's release of what {@link allocate} made. */
const release = (b: IPAMBlock, ordinal: number, node: string): IPAMBlock =>
  releaseHandle(b, `rbac.${node}.${ordinal}`, {}, Date.now()).block;

describe('the chart’s RBAC and admission policy', () => {
  let node1: string; // the node ServiceAccount, token bound to the agent pod on rbac-n1
  let plugin1: string; // the plugin ServiceAccount, token bound to Node rbac-n1
  before(() => {
    chart.install(NODES, [
      ['agent-1', NODE_SA, NODES[0]],
      ['agent-2', NODE_SA, NODES[1]],
      ['controller', CONTROLLER_SA, NODES[0]],
    ]);
    adminOk(['create', 'serviceaccount', 'reader', '-n', NS]);
    adminOk([
      'create',
      'clusterrolebinding',
      'rbac-reader',
      '--clusterrole',
      'rbac-blockipam-reader',
      `--serviceaccount=${NS}:reader`,
    ]);
    chart.usablePool(POOL, '10.77.0.0/16');
    node1 = credential(NODE_SA, 'agent-1');
    plugin1 = chart.nodeCredential(PLUGIN_SA, NODES[0]);
  });
  after(() => {
    admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`]);
    admin(['delete', 'ippool', POOL]);
    admin(['delete', 'clusterrolebinding', 'rbac-reader']);
    chart.uninstall(NODES);
  });

  test('a token bound to a pod with spec.nodeName carries the node name; kubectl create token’s does not', () => {
    const who = JSON.parse(as(node1, ['auth', 'whoami', '-o', 'json']).stdout) as {
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    };
    assert.equal(who.status.userInfo.username, `system:serviceaccount:${NS}:${NODE_SA}`);
    assert.deepEqual(who.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], [NODES[0]]);
    const plain = JSON.parse(as(credential(NODE_SA), ['auth', 'whoami', '-o', 'json']).stdout) as {
      status: { userInfo: { extra?: Record<string, string[]> } };
    };
    assert.equal(plain.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], undefined);
  });

  test('a token bound to a Node carries its name and uid', () => {
    const who = JSON.parse(as(plugin1, ['auth', 'whoami', '-o', 'json']).stdout) as {
      status: { userInfo: { username: string; extra?: Record<string, string[]> } };
    };
    assert.equal(who.status.userInfo.username, `system:serviceaccount:${NS}:${PLUGIN_SA}`);
    assert.deepEqual(who.status.userInfo.extra?.['authentication.kubernetes.io/node-name'], [NODES[0]]);
    assert.deepEqual(who.status.userInfo.extra?.['authentication.kubernetes.io/node-uid'], [uids[NODES[0]]]);
  });

  test('RBAC: no identity reads Secrets or edits IPPools; the reader only reads', () => {
    const controller = credential(CONTROLLER_SA, 'controller');
    const reader = kubeconfigFor('reader', adminOk(['create', 'token', 'reader', '-n', NS]).trim());
    for (const [sa, kc] of [
      [NODE_SA, node1],
      [PLUGIN_SA, plugin1],
      [CONTROLLER_SA, controller],
      ['reader', reader],
    ] as const) {
      refused(
        as(kc, ['get', 'secrets', '-n', 'kube-system']),
        forbidden(sa, 'list', 'secrets'),
        `${sa} lists Secrets`,
      );
      refused(
        as(kc, ['patch', 'ippool', POOL, '--type=merge', '-p', '{"spec":{"disabled":true}}']),
        // kubectl GETs first: an identity that may not read pools is refused there
        forbidden(sa, '(get|patch)', 'ippools'),
        `${sa} edits an IPPool`,
      );
      refused(
        as(kc, ['delete', 'ippool', POOL]),
        forbidden(sa, 'delete', 'ippools'),
        `${sa} deletes an IPPool`,
      );
    }
    allowed(
      as(reader, ['get', 'ipamblocks,ippools,ipamconfigs,ipreservations,nodes,pods', '-A']),
      'the reader reads',
    );
    refused(
      as(reader, ['create', '-f', '-'], block('10.77.9.0/26', null)),
      forbidden('reader', 'create', 'ipamblocks'),
      'the reader writes',
    );
    refused(
      as(node1, ['delete', 'nodes', NODES[1]]),
      forbidden(NODE_SA, 'delete', 'nodes'),
      'the node deletes a Node',
    );
    refused(
      as(controller, ['create', 'token', NODE_SA, '-n', NS]),
      forbidden(CONTROLLER_SA, 'create', 'serviceaccounts/token'),
      'the controller mints a node token',
    );
    refused(
      as(plugin1, ['create', 'token', PLUGIN_SA, '-n', NS]),
      forbidden(PLUGIN_SA, 'create', 'serviceaccounts/token'),
      'the plugin mints a token',
    );
    refused(
      as(node1, ['create', 'token', NODE_SA, '-n', NS]),
      forbidden(NODE_SA, 'create', 'serviceaccounts/token'),
      'the node mints a token of its own ServiceAccount',
    );
  });

  test('the controller: IPPool status, and Events (a pool exhausted) only created, only in default', () => {
    const controller = credential(CONTROLLER_SA, 'controller');
    const event = (namespace: string): object => ({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { generateName: `${POOL}-`, namespace },
      eventTime: '2026-12-03T00:00:00.000000Z',
      reportingController: 'ipam.blockipam.io/controller',
      reportingInstance: 'rbac-test',
      action: 'UpdateStatus',
      reason: 'PoolExhausted',
      type: 'Warning',
      note: 'Exhausted (NoFreeAddresses)',
      regarding: { apiVersion: 'ipam.blockipam.io/v1alpha1', kind: 'IPPool', name: POOL },
    });
    allowed(as(controller, ['create', '-f', '-'], event('default')), 'the controller records a pool Event');
    refused(
      as(controller, ['create', '-f', '-'], event(NS)),
      forbidden(CONTROLLER_SA, 'create', 'events'),
      'the controller records an Event outside default',
    );
    refused(
      as(controller, ['get', 'events.events.k8s.io', '-n', 'default']),
      forbidden(CONTROLLER_SA, 'list', 'events'),
      'the controller reads Events',
    );
    const can = (args: string[]): string => as(controller, ['auth', 'can-i', ...args]).stdout.trim();
    assert.equal(can(['update', 'ippools.ipam.blockipam.io', '--subresource=status']), 'yes');
    assert.equal(can(['patch', 'ippools.ipam.blockipam.io', '--subresource=status']), 'no');
    assert.equal(can(['update', 'ippools.ipam.blockipam.io']), 'no');
    // the blocks of podCIDR pools: created affine to each node by the controller
    assert.equal(can(['create', 'ipamblocks.ipam.blockipam.io']), 'yes');
    assert.equal(can(['patch', 'ipamblocks.ipam.blockipam.io']), 'no');
  });

  test('IPAMNode: only the controller writes it; node credentials only read (no policy rule needed)', () => {
    const controller = credential(CONTROLLER_SA, 'controller');
    const ipamNode = (name: string): object => ({
      apiVersion: 'ipam.blockipam.io/v1alpha1',
      kind: 'IPAMNode',
      metadata: { name },
      spec: { addresses: ['192.0.2.66'], blocks: ['10.77.0.0/26'], borrowed: [] },
    });
    allowed(as(controller, ['create', '-f', '-'], ipamNode(NODES[0])), 'the controller creates an IPAMNode');
    try {
      // RBAC refuses every write of both node credentials before admission: no policy needs a
      // rule for IPAMNodes (a node could otherwise route every node's traffic for a block to itself)
      for (const [sa, kc] of [
        [NODE_SA, node1],
        [PLUGIN_SA, plugin1],
      ] as const) {
        refused(
          as(kc, ['create', '-f', '-'], ipamNode(NODES[1])),
          forbidden(sa, 'create', 'ipamnodes'),
          `${sa} creates an IPAMNode`,
        );
        refused(
          as(kc, ['replace', '-f', '-'], ipamNode(NODES[0])),
          forbidden(sa, '(get|update)', 'ipamnodes'),
          `${sa} replaces its own IPAMNode`,
        );
        refused(
          as(kc, ['delete', 'ipamnode', NODES[0]]),
          forbidden(sa, 'delete', 'ipamnodes'),
          `${sa} deletes an IPAMNode`,
        );
      }
      allowed(as(node1, ['get', 'ipamnodes']), 'the agent lists IPAMNodes (its route source)');
      allowed(as(controller, ['delete', 'ipamnode', NODES[0]]), 'the controller deletes an IPAMNode');
    } finally {
      admin(['delete', 'ipamnode', NODES[0], '--ignore-not-found']);
    }
  });

  // Both node credentials write blocks (the agent serves its node's IPAM; the plugin's direct
  // path when the agent is away): the same per-node rules hold both. Every write below is core's
  // own (allocateOrdinal, releaseHandle, newBlock) applied to the stored block, or one change to
  // it that core never makes; test/charts/policy-walk.int.test.ts probes every field.
  for (const who of ['plugin', 'agent'] as const)
    test(`the policy (the ${who}’s credential): a node writes its own blocks, borrows only its own allocations, never another node’s block`, async () => {
      admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`]);
      const cred = who === 'plugin' ? plugin1 : node1;
      const sa = who === 'plugin' ? PLUGIN_SA : NODE_SA;
      const other = '10.77.1.0/26';
      // effective ~1 s after the binding: until then the probe may pass — undo it and retry
      await eventually(() => {
        const r = as(cred, ['create', '-f', '-'], block(other, NODES[1]));
        if (r.status === 0) admin(['delete', 'ipamblock', '10-77-1-0-26']);
        refused(
          r,
          // either policy may answer first: the claims policy or the per-node blocks policy
          /blockipam: node rbac-n1 (may claim IPAMBlock 10-77-1-0-26 only with spec\.affinity = itself \(got rbac-n2\)|may change a block's affinity only from itself to none \(and affinityClaimTime only with it\); IPAMBlock 10-77-1-0-26 would go from none to rbac-n2)/,
          'claim for another node',
        );
      }, 'the policy takes effect');

      // a claim is what core creates: empty, affine to the node, core's labels
      const own = '10-77-0-0-26';
      allowed(
        as(
          cred,
          ['create', '-f', '-'],
          newBlock({ cidr: parseCidr('10.77.0.0/26')!, pool: POOL, node: NODES[0], nowMs: Date.now() }),
        ),
        'claim its own block',
      );
      allowed(
        as(cred, ['replace', '-f', '-'], allocate(stored(own), 2, NODES[0])),
        'allocate in its own block',
      );
      // node 2 borrows an address in node 1's block (as admin: the test's node 2 identity is not needed)
      adminOk(['replace', '-f', '-'], allocate(stored(own), 3, NODES[1]));
      // a reviewer's probe: the owner freed a borrower's address in its own block (handed out twice
      // later), or took an unowned block holding one to wipe it; owners are bound like anyone else
      refused(
        as(cred, ['replace', '-f', '-'], release(stored(own), 3, NODES[1])),
        /may add or remove only its own allocations in IPAMBlock 10-77-0-0-26 \(affine to rbac-n1\); ordinal\(s\) 3 belong to other nodes/,
        'free a borrower’s address in its own block',
      );
      refused(
        as(cred, ['delete', 'ipamblock', own]),
        /may delete only an empty IPAMBlock that is its own or unowned; 10-77-0-0-26 is affine to rbac-n1 and holds 2 allocation/,
        'delete its own block holding a borrower’s address',
      );
      allowed(as(cred, ['replace', '-f', '-'], release(stored(own), 2, NODES[0])), 'release its own address');
      const unowned = stored(own);
      allowed(
        as(cred, ['replace', '-f', '-'], { ...unowned, spec: { ...unowned.spec, affinity: null } }),
        'give its own block up (affinity → none), the borrower’s address kept',
      );
      const taken = stored(own);
      refused(
        as(cred, ['replace', '-f', '-'], { ...taken, spec: { ...taken.spec, affinity: NODES[0] } }),
        /may change a block's affinity only from itself to none .*would go from none to rbac-n1/,
        'take an unowned block by UPDATE (only a claim or the controller gives affinity)',
      );
      refused(
        as(cred, ['replace', '-f', '-'], release(stored(own), 3, NODES[1])),
        /ordinal\(s\) 3 belong to other nodes/,
        'wipe the unowned block',
      );

      // another node's block: borrowing
      adminOk(
        ['create', '-f', '-'],
        allocate(
          newBlock({ cidr: parseCidr(other)!, pool: POOL, node: NODES[1], nowMs: Date.now() }),
          2,
          NODES[1],
        ),
      );
      const foreign = '10-77-1-0-26';
      allowed(
        as(cred, ['replace', '-f', '-'], allocate(stored(foreign), 5, NODES[0])),
        'borrow: add its own allocation and its node label "borrowed"',
      );
      const labels = (b: IPAMBlock, change: Record<string, string | undefined>): IPAMBlock => ({
        ...b,
        metadata: {
          ...b.metadata,
          labels: Object.fromEntries(
            Object.entries({ ...b.metadata.labels, ...change }).filter(
              (e): e is [string, string] => e[1] !== undefined,
            ),
          ),
        },
      });
      refused(
        as(cred, ['replace', '-f', '-'], labels(stored(foreign), { [nodeLabel(NODES[1])]: undefined })),
        /may not change the labels of IPAMBlock 10-77-1-0-26 \(affine to rbac-n2\) other than a node label "borrowed".*changed: node\.ipam\.blockipam\.io\//,
        'drop the owner’s node label',
      );
      refused(
        as(cred, ['replace', '-f', '-'], labels(stored(foreign), { 'ipam.blockipam.io/pool': 'elsewhere' })),
        /changed: ipam\.blockipam\.io\/pool/,
        'move the block to another pool label',
      );
      refused(
        as(cred, ['replace', '-f', '-'], allocate(stored(foreign), 6, NODES[1])),
        /may add or remove only its own allocations in IPAMBlock 10-77-1-0-26 \(affine to rbac-n2\); ordinal\(s\) 6 belong to other nodes/,
        'add an allocation for another node',
      );
      refused(
        as(cred, ['replace', '-f', '-'], release(stored(foreign), 2, NODES[1])),
        /ordinal\(s\) 2 belong to other nodes/,
        'remove the owner’s allocation',
      );
      const took = stored(foreign);
      refused(
        as(cred, ['replace', '-f', '-'], { ...took, spec: { ...took.spec, affinity: NODES[0] } }),
        /would go from rbac-n2 to rbac-n1/,
        'take another node’s block',
      );
      refused(
        as(cred, ['replace', '-f', '-'], labels(stored(foreign), { x: 'y' })),
        /may not change the labels of IPAMBlock 10-77-1-0-26/,
        'relabel another node’s block',
      );
      refused(
        as(cred, ['delete', 'ipamblock', foreign]),
        /may delete only an empty IPAMBlock that is its own or unowned; 10-77-1-0-26 is affine to rbac-n2/,
        'delete another node’s block',
      );
      allowed(
        as(cred, ['replace', '-f', '-'], release(stored(foreign), 5, NODES[0])),
        'release its borrowed address (and its node label "borrowed" goes)',
      );

      // the same ServiceAccount with a token that names no node writes nothing
      refused(
        as(credential(sa), ['create', '-f', '-'], block('10.77.2.0/26', NODES[0])),
        // either policy may answer first: the per-node blocks policy or the claims policy
        /may write IPAMBlocks only with a token that names its node|node \(none\) may claim IPAMBlock 10-77-2-0-26 only with spec\.affinity = itself/,
        'a token without a node name',
      );
      // the controller is not bound by the per-node policy (it releases any node's leaks)
      allowed(
        as(
          credential(CONTROLLER_SA, 'controller'),
          ['replace', '-f', '-'],
          release(stored(foreign), 2, NODES[1]),
        ),
        'the controller releases',
      );
    });

  test('the policy (the agent’s credential): it claims and deletes only its own blocks', async () => {
    admin(['delete', 'ipamblocks', '-l', `ipam.blockipam.io/pool=${POOL}`]);
    const other = '10.77.1.0/26';
    await eventually(() => {
      const r = as(node1, ['create', '-f', '-'], block(other, NODES[1]));
      if (r.status === 0) admin(['delete', 'ipamblock', '10-77-1-0-26']);
      refused(
        r,
        /blockipam: node rbac-n1 (may claim IPAMBlock 10-77-1-0-26 only with spec\.affinity = itself \(got rbac-n2\)|may change a block's affinity only from itself to none \(and affinityClaimTime only with it\); IPAMBlock 10-77-1-0-26 would go from none to rbac-n2)/,
        'claim for another node',
      );
    }, 'the policy takes effect');
    const claim = newBlock({ cidr: parseCidr('10.77.0.0/26')!, pool: POOL, node: NODES[0], nowMs: 100 });
    allowed(as(node1, ['create', '-f', '-'], claim), 'claim its own block');
    adminOk(['create', '-f', '-'], block(other, NODES[1]));
    refused(
      as(node1, ['delete', 'ipamblock', '10-77-1-0-26']),
      /may delete only an empty IPAMBlock that is its own or unowned; 10-77-1-0-26 is affine to rbac-n2/,
      'delete another node’s block',
    );
    allowed(as(node1, ['delete', 'ipamblock', '10-77-0-0-26']), 'release its own idle block');
    refused(
      as(credential(NODE_SA), ['create', '-f', '-'], block('10.77.2.0/26', NODES[0])),
      // either policy may answer first: the per-node blocks policy or the claims policy
      /may write IPAMBlocks only with a token that names its node|node \(none\) may claim IPAMBlock 10-77-2-0-26 only with spec\.affinity = itself/,
      'a token without a node name',
    );
  });

  test('the policy: a node credential mints plugin tokens bound to its own Node only', async () => {
    const mint = (bound: string[]): KubectlResult =>
      as(node1, ['create', 'token', PLUGIN_SA, '-n', NS, ...bound]);
    const node = (name: string, uid?: string): string[] => [
      ...['--bound-object-kind', 'Node', '--bound-object-name', name],
      ...(uid === undefined ? [] : ['--bound-object-uid', uid]),
    ];
    // effective ~1 s after the binding: until then the probe may pass
    await eventually(
      () =>
        refused(
          mint([]),
          /may request tokens only bound to its own Node rbac-n1; this one is unbound/,
          'an unbound token',
        ),
      'the policy takes effect',
    );
    allowed(mint(node(NODES[0], uids[NODES[0]])), 'a token bound to its own Node (the plugin’s)');
    allowed(mint(node(NODES[0])), 'a token bound to its own Node, uid left to the API server');
    refused(
      mint(node(NODES[1], uids[NODES[1]])),
      /may request tokens only bound to its own Node rbac-n1; this one is bound to Node rbac-n2/,
      'a token bound to another Node',
    );
    refused(
      mint(node(NODES[1])),
      /may request tokens only bound to its own Node rbac-n1; this one is bound to Node rbac-n2/,
      'a token bound to another Node, no uid',
    );
    refused(
      mint(node(NODES[0], uids[NODES[1]])),
      /may request tokens only bound to its own Node rbac-n1; this one is bound to Node rbac-n1/,
      'a token bound to its Node’s name with another Node’s uid',
    );
    refused(
      mint([
        '--bound-object-kind',
        'Pod',
        '--bound-object-name',
        'agent-1',
        '--bound-object-uid',
        uids['agent-1'] ?? '',
      ]),
      /may request tokens only bound to its own Node rbac-n1; this one is bound to Pod agent-1/,
      'a token bound to its own pod (dies with every agent restart)',
    );
    refused(
      mint([
        '--bound-object-kind',
        'Pod',
        '--bound-object-name',
        'agent-2',
        '--bound-object-uid',
        uids['agent-2'] ?? '',
      ]),
      /may request tokens only bound to its own Node rbac-n1; this one is bound to Pod agent-2/,
      'a token bound to another node’s agent',
    );
  });
});
