/**
 * What `ipamctl check` says about a node's deletion queue (docs/design-plugin.md §Deletion queue,
 * docs/design-cli.md §check): a DEL the plugin could not serve waits there for the agent, and its
 * addresses stay allocated meanwhile — so the cluster-wide audit calls them leaked. Each entry is
 * a `queued-del` finding (information: the agent's replay resolves it), a file that is no entry
 * `queued-del-unreadable` (a problem: the agent never replays it), and a leak whose handle is
 * queued says so. Pure functions of the entries core's `readDeletionQueue` returns.
 */
import { join } from 'node:path';
import { addressTextAt, handleOf, parseCidr } from 'blockipam/core';
import type { IPAMBlock } from 'blockipam/core';
import type { QueuedDel, QueuedRead } from 'blockipam/core/cni';
import type { OwnerFinding } from './owner-checks.ts';
import { problem } from './problems.ts';
import type { LeakedAllocation, Problem } from './problems.ts';

/** One queued entry as the report shows it: the entry with its handle, or why the file is none. */
export type QueuedEntry = ({ file: string; handle: string } & QueuedDel) | { file: string; error: string };

/** The queue check read (report field `deletionQueue`): its directory and every file in it. */
export interface DeletionQueueView {
  dir: string;
  entries: QueuedEntry[];
}

/** The view of `reads` (core's `readDeletionQueue(dir)`), each entry given its handle. */
export function deletionQueueView(dir: string, reads: readonly QueuedRead[]): DeletionQueueView {
  return {
    dir,
    entries: reads.map((r) => {
      if ('error' in r) return { file: r.file, error: r.error };
      const { network, containerID, ifname } = r.entry.attachment;
      // core checks the attachment and node only: a hand-written entry may lack the rest
      const text = (v: unknown): string => (typeof v === 'string' ? v : '?');
      return {
        file: r.file,
        handle: handleOf(network, containerID, ifname),
        ...r.entry,
        queuedAt: text(r.entry.queuedAt),
        reason: text(r.entry.reason),
      };
    }),
  };
}

type Queued = Extract<QueuedEntry, { handle: string }>;

const queuedOnly = (view: DeletionQueueView): Queued[] =>
  view.entries.filter((e): e is Queued => 'handle' in e);

/**
 * Whether the agent's replay of `entry` releases `allocation`: the same handle on the same node,
 * and no other pod UID (core's release by handle leaves an allocation of another pod UID alone).
 */
function releases(entry: Queued, allocation: Pick<LeakedAllocation, 'handle' | 'node' | 'podUID'>): boolean {
  return (
    entry.handle === allocation.handle &&
    entry.node === allocation.node &&
    (!entry.podUID || !allocation.podUID || entry.podUID === allocation.podUID)
  );
}

/**
 * The owner findings with a note on each whose allocation a queued DEL releases: its DEL was
 * answered and waits for the agent, so the leak is explained (still reported: it is held).
 */
export function noteQueuedLeaks(findings: readonly OwnerFinding[], view: DeletionQueueView): OwnerFinding[] {
  const entries = queuedOnly(view);
  return findings.map((f) => {
    const entry = entries.find((e) => releases(e, f.allocation));
    if (!entry) return f;
    const note = `; its DEL is queued on this node (${join(view.dir, entry.file)}, since ${entry.queuedAt}): the agent releases it when it runs`;
    return { ...f, problem: { ...f.problem, message: `${f.problem.message}${note}` } };
  });
}

/**
 * A `queued-del` finding per entry, naming what it holds in `blocks` (the snapshot's), and a
 * `queued-del-unreadable` problem per file that is no entry.
 */
export function queuedDelProblems(view: DeletionQueueView, blocks: readonly IPAMBlock[]): Problem[] {
  const out: Problem[] = [];
  for (const e of view.entries) {
    const path = join(view.dir, e.file);
    if ('error' in e) {
      out.push(
        problem(
          'queued-del-unreadable',
          `${path} is no queued DEL: ${e.error}`,
          [],
          `the agent never replays it and logs it on every pass: read it; if it names an attachment still holding an address, release that (ipamctl release --ip ADDRESS); then remove the file`,
        ),
      );
      continue;
    }
    const held = heldBy(e, blocks);
    const what =
      held.length > 0
        ? `holds ${held.join(', ')}`
        : 'no allocation of it in the snapshot (its replay releases nothing)';
    out.push(
      problem(
        'queued-del',
        `DEL of ${e.handle} (node ${e.node}, pod uid ${e.podUID ?? '?'}) queued at ${e.queuedAt} in ${path}, ${what}: ${e.reason}`,
        [`Node/${e.node}`],
      ),
    );
  }
  return out;
}

/** "ADDRESS (IPAMBlock NAME)" of each allocation in `blocks` the replay of `entry` releases. */
function heldBy(entry: Queued, blocks: readonly IPAMBlock[]): string[] {
  const out: string[] = [];
  for (const block of blocks) {
    const cidr = parseCidr(block.spec.cidr);
    if (!cidr) continue;
    for (const [key, a] of Object.entries(block.spec.allocations))
      if (releases(entry, a))
        out.push(`${addressTextAt(cidr, Number(key))} (IPAMBlock ${block.metadata.name})`);
  }
  return out;
}
