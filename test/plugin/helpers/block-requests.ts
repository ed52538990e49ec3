/**
 * What the plugin tests that queue calls on the host lock read back (handoff.int, lock-queue.int):
 *  - {@link countedBlockRequests}: the IPAMBlock requests the API server itself counted while a
 *    step ran (apiserver_request_total), as "VERB code" → n;
 *  - {@link doneLines}: the plugin log's `done` lines of chosen calls.
 */
import { readFileSync } from 'node:fs';
import { controlPlane } from '../../helpers/control-plane.ts';
import { delta, requestCounters } from '../../bench/plugin-bench-lib.ts';

const BLOCKS = /^ipam\.blockipam\.io\/ipamblocks /;

/** IPAMBlock requests (`VERB code` → n) made while `run` ran. */
export async function countedBlockRequests<T>(
  run: () => Promise<T>,
): Promise<{ out: T; requests: Record<string, number> }> {
  const cp = controlPlane();
  const before = await requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);
  const out = await run();
  const after = await requestCounters(cp.apiUrl, cp.adminToken, cp.caFile);
  const requests: Record<string, number> = {};
  for (const [key, n] of delta(before, after, BLOCKS)) requests[key.replace(BLOCKS, '')] = n;
  return { out, requests };
}

/** The `done` lines of `ids`' `cmd` calls (by CNI_CONTAINERID) in the plugin log `logFile`. */
export function doneLines(logFile: string, cmd: string, ids: readonly string[]): Record<string, unknown>[] {
  return readFileSync(logFile, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'done' && l.cmd === cmd && ids.includes(String(l.containerID)));
}
