/**
 * The block shapes of the trust tests (issue 23, D1: blocks a node credential could forge), shared
 * by core's classifyBlocks tests and the audit's ignored-block tests: a block described by its
 * CIDR, pool, affinity, allocations, creation time and forged labels, built as core writes it.
 */
import { allocateOrdinal, mustParseCidr, newBlock } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import { pool } from './fixtures.ts';

/** When the shapes' blocks are written (ms since the epoch). */
export const SHAPES_T0 = Date.parse('2026-12-03T08:00:00Z');
/** The pool every shape is in unless it names another: 10.244.0.0/16, /26 blocks. */
export const MAIN = pool('main', { cidr: '10.244.0.0/16' });
/** Applied over `main` later with /28 blocks (possible through kubectl): shadowed. */
export const LATE = pool('late', { cidr: '10.244.88.0/24', blockSize: 28 }, '2026-11-20T00:00:00Z');

export interface BlockShape {
  readonly cidr: string;
  /** default `main` */
  readonly pool?: string;
  /** the affinity; default `node-2`, null: unowned */
  readonly node?: string | null;
  /** ordinal → node holding it */
  readonly allocations?: Readonly<Record<number, string>>;
  /** creationTimestamp; default 2026-12-01T00:00:00Z */
  readonly created?: string;
  /** merged over the labels core wrote (a forged label) */
  readonly labels?: Readonly<Record<string, string>>;
}

/** node-2's /26 holding 10.244.88.198 (ordinal 6) for its own pod. */
export const VICTIM: BlockShape = { cidr: '10.244.88.192/26', node: 'node-2', allocations: { 6: 'node-2' } };

/** A block as core writes it (labels recomputed on every allocation), then `labels` merged over. */
export function shapedBlock(shape: BlockShape): IPAMBlock {
  let b = newBlock({
    cidr: mustParseCidr(shape.cidr),
    pool: shape.pool ?? 'main',
    node: shape.node === undefined ? 'node-2' : shape.node,
    nowMs: SHAPES_T0,
  });
  for (const [ordinal, node] of Object.entries(shape.allocations ?? {}))
    b = allocateOrdinal(b, Number(ordinal), { handle: `net.c${ordinal}.eth0`, node }, SHAPES_T0)!.block;
  b.metadata.creationTimestamp = shape.created ?? '2026-12-01T00:00:00Z';
  b.metadata.labels = { ...b.metadata.labels, ...shape.labels };
  return b;
}
