// The uninstall signal (block-controller/agent/install/owner.ts): only a deletion of the agent's
// own DaemonSet counts — a delete event or a deletionTimestamp (foreground deletion); an add or
// an update of a live DaemonSet (a rollout changes its template, a restart changes nothing) never.
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
