// The uninstall signal (block-controller/agent/install/owner.ts): only a deletion of the agent's
// own DaemonSet with its pods counts — a delete event or a deletionTimestamp (background or
// foreground deletion); an orphaning deletion (`--cascade=orphan`: the `orphan` finalizer) and
// an add or an update of a live DaemonSet (a rollout, a restart) never.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  credentialAnswer,
  shutdownVerdict,
  tokenExpiryMs,
} from '../../block-controller/agent/install/confirm.ts';
import { ownerState } from '../../block-controller/agent/install/owner.ts';

const live = { metadata: { name: 'blockipam-agent', uid: 'u1' } };
const deleting = { metadata: { ...live.metadata, deletionTimestamp: '2026-12-03T22:00:00Z' } };

const orphaning = { metadata: { ...deleting.metadata, finalizers: ['orphan'] } };
const foreground = { metadata: { ...deleting.metadata, finalizers: ['foregroundDeletion'] } };

const cases: [
  string,
  Parameters<typeof ownerState>[0],
  Parameters<typeof ownerState>[1],
  ReturnType<typeof ownerState>,
][] = [
  // the watch's first LIST, a restart
  ['add of a live DaemonSet', 'add', live, 'live'],
  // a rollout (helm upgrade) updates the template
  ['update of a live DaemonSet', 'update', live, 'live'],
  // helm uninstall (background propagation), or a re-LIST that no longer finds it
  ['delete', 'delete', live, 'deleted'],
  // kubectl delete --cascade=foreground: the object stays until its pods are gone
  ['update with a deletionTimestamp', 'update', deleting, 'deleted'],
  ['update with the foregroundDeletion finalizer', 'update', foreground, 'deleted'],
  ['add with a deletionTimestamp', 'add', deleting, 'deleted'],
  // kubectl delete --cascade=orphan (a selector change): its pods, this agent, stay
  ['update with the orphan finalizer', 'update', orphaning, 'orphaning'],
  ['add with the orphan finalizer (a re-LIST)', 'add', orphaning, 'orphaning'],
  // the delete event of an orphaning deletion carries the object as last stored
  ['delete with the orphan finalizer', 'delete', orphaning, 'orphaning'],
];

for (const [name, event, object, state] of cases)
  test(`ownerState: ${name} → ${state}`, () => assert.equal(ownerState(event, object), state));

// The shutdown confirmation (block-controller/agent/install/confirm.ts), when no event came: the
// agent's GET of its DaemonSet refused counts only when the plugin's credential of the same
// release is refused too (the release's ServiceAccounts gone); the agent's credential refused
// alone — a Role edited, a token problem — never removes the node's CNI; nor does the plugin's
// refusal when its Node was deleted or registered again (a Node deleted while its kubelet runs),
// nor a 404 after an orphaning deletion.
const verdicts: [
  string,
  Parameters<typeof shutdownVerdict>[0],
  Parameters<typeof shutdownVerdict>[1],
  boolean,
  ReturnType<typeof shutdownVerdict>,
  boolean?,
][] = [
  ['404: gone', 'notFound', undefined, false, 'gone'],
  ['the DaemonSet there: stay', 'present', undefined, false, 'stay'],
  ['an error that is no refusal (unreachable): stay', 'error', undefined, false, 'stay'],
  ['401, the plugin refused too (helm uninstall): gone', 'unauthenticated', 'refused', false, 'gone'],
  [
    '401, the plugin accepted: ask again (its ServiceAccount may go a moment later)',
    'unauthenticated',
    'accepted',
    false,
    'again',
  ],
  [
    '401, the plugin accepted at the last attempt (a credential problem): stay',
    'unauthenticated',
    'accepted',
    true,
    'stay',
  ],
  ['401, the plugin unanswered at the last attempt: stay', 'unauthenticated', 'error', true, 'stay'],
  ['401, no plugin credential: stay', 'unauthenticated', undefined, false, 'stay'],
  // the agent's credential broken long enough for the plugin's token to lapse: no evidence
  ['401, the plugin token expired: stay at once', 'unauthenticated', 'expired', false, 'stay'],
  ['403, the plugin token expired: stay at once', 'forbidden', 'expired', false, 'stay'],
  // helm deletes the Role with the ServiceAccount: 403 until the ServiceAccount is gone too
  [
    '403, the plugin refused: ask again (an RBAC refusal is no deletion)',
    'forbidden',
    'refused',
    false,
    'again',
  ],
  ['403, the plugin refused at the last attempt: stay', 'forbidden', 'refused', true, 'stay'],
  ['the plugin refused but the DaemonSet there: stay', 'present', 'refused', false, 'stay'],
  // kubectl delete node while its kubelet runs: the plugin's token and (pod GC) the agent's die
  [
    '401, the plugin’s Node deleted or registered again: stay at once',
    'unauthenticated',
    'nodeGone',
    false,
    'stay',
  ],
  ['403, the plugin’s Node gone: stay at once', 'forbidden', 'nodeGone', false, 'stay'],
  // --cascade=orphan seen, then the orphaned agent deleted before a DaemonSet returns
  ['404 after an orphaning deletion: stay', 'notFound', undefined, false, 'stay', true],
  // helm uninstall --cascade orphan, then the orphaned agents deleted: the release's credentials gone
  [
    '401, the plugin refused, after an orphaning deletion: gone',
    'unauthenticated',
    'refused',
    false,
    'gone',
    true,
  ],
];
for (const [name, owner, plugin, last, verdict, orphaned] of verdicts)
  test(`shutdownVerdict: ${name}`, () =>
    assert.equal(shutdownVerdict(owner, plugin, last, orphaned), verdict));

// tokenExpiryMs reads a service-account token's exp claim (not verified)
const jwt = (claims: unknown): string =>
  ['e30', Buffer.from(JSON.stringify(claims)).toString('base64url'), 'sig'].join('.');
const expiryCases: [string, string, number | undefined][] = [
  ['a JWT with exp', jwt({ exp: 1_800_000_000 }), 1_800_000_000_000],
  ['no exp', jwt({ sub: 'x' }), undefined],
  ['exp not a number', jwt({ exp: '1800000000' }), undefined],
  ['no JWT', 'opaque-token', undefined],
  ['payload not JSON', 'a.!!!.c', undefined],
];
for (const [name, token, want] of expiryCases)
  test(`tokenExpiryMs: ${name}`, () => assert.equal(tokenExpiryMs(token), want));

// credentialAnswer does not ask the API server with a token whose exp passed: its 401 would prove
// nothing (the server here is a closed port: asking would answer `error`, not `expired`)
test('credentialAnswer: an expired plugin token is `expired`, a live one is asked', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'owner-test-'));
  try {
    const kubeconfig = (token: string): string => {
      const path = join(dir, `${token.length}-${Math.random()}.kubeconfig`);
      writeFileSync(
        path,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            { name: 'c', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } },
          ],
          users: [{ name: 'u', user: { token } }],
          contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'c',
        }),
      );
      return path;
    };
    const now = 1_800_000_000_000;
    assert.equal(await credentialAnswer(kubeconfig(jwt({ exp: now / 1000 - 1 })), now), 'expired');
    assert.equal(await credentialAnswer(kubeconfig(jwt({ exp: now / 1000 + 60 })), now), 'error');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
