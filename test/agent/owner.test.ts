// The uninstall signal (block-controller/agent/install/owner.ts): only a deletion of the agent's
// own DaemonSet counts — a delete event or a deletionTimestamp (foreground deletion); an add or
// an update of a live DaemonSet (a rollout changes its template, a restart changes nothing) never.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shutdownVerdict } from '../../block-controller/agent/install/confirm.ts';
import { ownerGone } from '../../block-controller/agent/install/owner.ts';

const live = { metadata: { name: 'blockipam-agent', uid: 'u1' } };
const deleting = { metadata: { ...live.metadata, deletionTimestamp: '2026-12-03T22:00:00Z' } };

const cases: [string, Parameters<typeof ownerGone>[0], Parameters<typeof ownerGone>[1], boolean][] = [
  // the watch's first LIST, a restart
  ['add of a live DaemonSet', 'add', live, false],
  // a rollout (helm upgrade) updates the template
  ['update of a live DaemonSet', 'update', live, false],
  // helm uninstall (background propagation), or a re-LIST that no longer finds it
  ['delete', 'delete', live, true],
  // kubectl delete --cascade=foreground: the object stays until its pods are gone
  ['update with a deletionTimestamp', 'update', deleting, true],
  ['add with a deletionTimestamp', 'add', deleting, true],
];

for (const [name, event, object, gone] of cases)
  test(`ownerGone: ${name} → ${gone}`, () => assert.equal(ownerGone(event, object), gone));

// The shutdown confirmation (block-controller/agent/install/confirm.ts), when no event came: the
// agent's GET of its DaemonSet refused counts only when the plugin's credential of the same
// release is refused too (the release's ServiceAccounts gone); the agent's credential refused
// alone — a Role edited, a token problem — never removes the node's CNI.
const verdicts: [
  string,
  Parameters<typeof shutdownVerdict>[0],
  Parameters<typeof shutdownVerdict>[1],
  boolean,
  ReturnType<typeof shutdownVerdict>,
][] = [
  ['404: gone', 'notFound', undefined, false, 'gone'],
  ['the DaemonSet there: stay', 'present', undefined, false, 'stay'],
  ['an error that is no refusal (unreachable): stay', 'error', undefined, false, 'stay'],
  ['refused, the plugin refused too (helm uninstall): gone', 'refused', 'refused', false, 'gone'],
  [
    'refused, the plugin accepted: ask again (its ServiceAccount may go a moment later)',
    'refused',
    'accepted',
    false,
    'again',
  ],
  [
    'refused, the plugin accepted at the last attempt (a credential problem): stay',
    'refused',
    'accepted',
    true,
    'stay',
  ],
  ['refused, the plugin unanswered at the last attempt: stay', 'refused', 'error', true, 'stay'],
  ['refused, no plugin credential: stay', 'refused', undefined, false, 'stay'],
  ['the plugin refused but the DaemonSet there: stay', 'present', 'refused', false, 'stay'],
];
for (const [name, owner, plugin, last, verdict] of verdicts)
  test(`shutdownVerdict: ${name}`, () => assert.equal(shutdownVerdict(owner, plugin, last), verdict));
