/** Shared steps of the assignment entry points: inputs, owner record, dual-stack rollback. */
import type { Owner } from '../block/block.ts';
import { loadSnapshot } from './pools.ts';
import type { PoolSnapshot } from './pools.ts';
import type { Context } from './context.ts';
import { releaseAddresses } from './release.ts';
import { assigned } from './describe.ts';
import type { AllocatedAddress, AssignFailure, AssignOutcome, AssignRequestBase } from './types.ts';

/** Snapshot and labels of a request: given ones are used, missing ones are read in parallel. */
export async function gatherInputs(
  ctx: Context,
  request: AssignRequestBase,
): Promise<{
  snapshot: PoolSnapshot;
  nodeLabels: Readonly<Record<string, string>>;
  namespaceLabels: Readonly<Record<string, string>>;
}> {
  const [snapshot, nodeLabels, namespaceLabels] = await Promise.all([
    request.snapshot ?? loadSnapshot(ctx.ds, ctx.clock()),
    request.nodeLabels ?? ctx.ds.getNode(request.node).then((node) => node?.metadata.labels ?? {}),
    request.namespaceLabels ??
      (request.pod ? ctx.ds.getNamespace(request.pod.namespace).then((ns) => ns?.metadata.labels ?? {}) : {}),
  ]);
  return { snapshot, nodeLabels, namespaceLabels };
}

/** The allocation owner record of a request (no undefined fields: they would not survive JSON). */
export function ownerOf(request: AssignRequestBase): Owner {
  return {
    handle: request.handle,
    ...(request.network !== undefined ? { network: request.network } : {}),
    ...(request.pod
      ? {
          namespace: request.pod.namespace,
          pod: request.pod.name,
          ...(request.pod.uid !== undefined ? { podUID: request.pod.uid } : {}),
        }
      : {}),
    node: request.node,
  };
}

/**
 * Releases what a failed multi-family request assigned, each by handle + sequence. Never throws
 * for a release that failed — it tells `ctx.onRollbackFailure` what was left allocated — except
 * once the caller's signal has fired (its reason).
 */
async function rollback(ctx: Context, node: string, done: readonly AllocatedAddress[]): Promise<void> {
  if (done.length === 0) return;
  ctx.stats.rollbacks += 1;
  const report = (addresses: string[], error: Error): void =>
    ctx.onRollbackFailure?.({ addresses, handle: done[0]?.allocation.handle ?? '', error });
  try {
    const result = await releaseAddresses(
      ctx.ds,
      done.map((a) => ({
        address: a.address,
        handle: a.allocation.handle,
        sequence: a.sequence,
        block: a.block,
      })),
      { node },
      ctx,
    );
    const first = result.failed[0];
    if (first)
      report(
        result.failed.map((f) => f.item.address),
        first.error,
      );
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    report(
      done.map((a) => a.address),
      error as Error,
    );
  }
}

/**
 * Runs `assignOne` for each item in order, all-or-nothing (dual-stack): on the
 * first failure, or a throw, everything assigned so far is released again (by handle +
 * sequence) before the failure is returned or the error rethrown.
 */
export async function assignAllOrNothing<T>(
  ctx: Context,
  node: string,
  items: readonly T[],
  assignOne: (item: T) => Promise<AllocatedAddress | { reason: AssignFailure; message: string }>,
): Promise<AssignOutcome> {
  const done: AllocatedAddress[] = [];
  try {
    for (const item of items) {
      const outcome = await assignOne(item);
      if ('reason' in outcome) {
        await rollback(ctx, node, done);
        return { ok: false, ...outcome };
      }
      done.push(outcome);
    }
  } catch (error) {
    // Aborted (the caller's budget): nothing more is written, the rollback included — the
    // runtime's DEL after the failed ADD releases what was assigned.
    if (!ctx.signal?.aborted) await rollback(ctx, node, done).catch(() => undefined); // rejects only on an abort
    throw error;
  }
  const v4 = done.find((a) => a.family === 4);
  const v6 = done.find((a) => a.family === 6);
  return { ok: true, ...(v4 ? { ipv4: assigned(v4) } : {}), ...(v6 ? { ipv6: assigned(v6) } : {}) };
}

/**
 * Refuses a request whose node name the API server would reject in an allocation (the CRD's
 * `node`: 1–253 characters) before anything is claimed, so no block is left behind.
 * @returns a failure message, or undefined when the name is usable
 */
export function nodeNameProblem(node: string): string | undefined {
  if (node.length === 0) return 'node name is empty';
  if (node.length > 253) return `node name is ${node.length} characters; at most 253 are allowed`;
  return undefined;
}
