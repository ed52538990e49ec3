/**
 * The write step of `ipamctl release`: frees planned allocations with handle + sequence-number
 * (+ pod UID) preconditions through core's releaseAddresses (each a compare-and-swap UPDATE of
 * its block). An entry that changed after the re-check is left alone and reported.
 */
import { releaseAddresses } from 'blockipam/core';
import type { Allocation } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';
import type { LeakedAllocation } from '../audit/problems.ts';
import { EXIT, println } from '../io.ts';
import type { ExitCode, Io } from '../io.ts';

/**
 * Releases with handle + sequence-number (+ pod UID) preconditions (core's releaseAddresses);
 * an entry that changed since the re-check is left alone and reported.
 * @returns 0 when everything was released, 1 otherwise
 */
export async function applyPlan(
  ds: KubeDatastore,
  go: readonly LeakedAllocation[],
  io: Io,
): Promise<ExitCode> {
  const items = go.map((l) => ({
    address: l.address,
    handle: l.handle,
    sequence: l.sequence,
    block: l.block,
    ...(l.podUID ? { podUID: l.podUID } : {}),
  }));
  const result = await releaseAddresses(ds, items);
  const released = new Set(result.released.map((r) => `${r.block}|${r.address}`));
  const refused = new Map(result.refused.map((r) => [`${r.block}|${r.address}`, r.allocation]));
  // a block that could not be read or written: core went on with the others (its `failed`)
  const failed = new Map(result.failed.map((f) => [`${f.item.block}|${f.item.address}`, f.error]));
  const missed = go.filter((l) => !released.has(`${l.block}|${l.address}`));
  for (const l of missed) {
    const error = failed.get(`${l.block}|${l.address}`);
    println(
      io.stdout,
      `not released ${l.address} (IPAMBlock ${l.block}): ${error ? `the write failed: ${error.message}` : whyRefused(l, refused.get(`${l.block}|${l.address}`))}`,
    );
  }
  println(io.stdout, `Released ${released.size} of ${go.length}.`);
  return missed.length === 0 ? EXIT.OK : EXIT.PROBLEMS;
}

/** Which precondition kept `planned` from being freed; `now` is the allocation the write found. */
function whyRefused(planned: LeakedAllocation, now: Allocation | undefined): string {
  if (!now)
    return `handle ${planned.handle} no longer holds it (released or re-allocated after the re-check)`;
  const reasons: string[] = [];
  if (now.sequence !== planned.sequence)
    reasons.push(`sequence number is now ${now.sequence}, not ${planned.sequence} (re-allocated)`);
  if (planned.podUID !== undefined && now.podUID !== undefined && now.podUID !== planned.podUID)
    reasons.push(`pod UID is ${now.podUID}, not ${planned.podUID} (pod UID precondition)`);
  return `the write's preconditions refused it: ${reasons.join('; ') || 'the allocation changed after the re-check'}`;
}
