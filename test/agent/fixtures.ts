/**
 * What the agent's tests share: a logger that writes nowhere, a node IPAM service whose ADD finds
 * the API server unreachable while DEL, CHECK, GC and STATUS succeed doing nothing, and the
 * handles allocated on a node's blocks.
 */
import { Writable } from 'node:stream';
import { affineSelector, UnavailableError } from 'blockipam/core';
import type { Datastore } from 'blockipam/core';
import type { NodeIpam } from 'blockipam/core/node-ipam';
import { createLogger } from '../../block-controller/shared/index.ts';

export const quietLog = createLogger({
  component: 'test',
  stream: new Writable({ write: (_c, _e, cb) => cb() }),
});

export const unreachableIpam: NodeIpam = {
  add: () => Promise.reject(new UnavailableError('connect ECONNREFUSED')),
  del: () => Promise.resolve({ released: 0 }),
  check: () => Promise.resolve({ kind: 'ok' }),
  gc: () => Promise.resolve({ released: [], errors: [], aliveElsewhere: [] }),
  status: () => Promise.resolve({ kind: 'ready' }),
};

/** The handles allocated in `ds`'s blocks affine to `node` (as the API server holds them). */
export const nodeHandles = async (ds: Pick<Datastore, 'blocks'>, node: string): Promise<string[]> =>
  (await ds.blocks.list({ labelSelector: affineSelector(node) })).flatMap((b) =>
    Object.values(b.spec.allocations).map((a) => a.handle),
  );
