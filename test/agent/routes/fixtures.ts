// Seeds for the route tests: blocks as the allocator writes them, Nodes as the API server holds them.
import { mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import type { RouteNode } from '../../../block-controller/agent/routes/index.ts';

const T0 = Date.parse('2026-12-01T08:00:00Z');

/** A block affine to `affinity`, with `allocations` ordinal → node. */
export function block(
  cidr: string,
  affinity: string | null,
  allocations: Record<number, string> = {},
): IPAMBlock {
  const b = newBlock({ cidr: mustParseCidr(cidr), pool: 'p', node: affinity, nowMs: T0 });
  for (const [ordinal, node] of Object.entries(allocations))
    b.spec.allocations[ordinal] = {
      handle: `net.c${ordinal}.eth0`,
      node,
      allocatedAt: '2026-12-01T08:00:00Z',
      sequence: Number(ordinal),
    };
  return b;
}

/** A Node with InternalIPs (and an ExternalIP that must never be used). */
export function node(name: string, ...internal: string[]): RouteNode {
  return {
    metadata: { name },
    status: {
      addresses: [
        { type: 'Hostname', address: name },
        { type: 'ExternalIP', address: '203.0.113.9' },
        ...internal.map((address) => ({ type: 'InternalIP', address })),
      ],
    },
  };
}
