/**
 * What the agent's unit tests share: a logger that writes nowhere, and a node IPAM service whose
 * ADD finds the API server unreachable while DEL, CHECK, GC and STATUS succeed doing nothing.
 */
import { Writable } from 'node:stream';
import { UnavailableError } from 'blockipam/core';
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
