/**
 * Checks of the blocks core hands no address out of although it trusts them (docs/design-cli.md
 * §What it reports), one finding per reason of core's `freezesOf` (core/block/frozen.ts), each with
 * what to do: a Terminating block still holding allocations (`terminating-block`; an empty one only
 * waits for its finalizers, reported as such), `metadata.finalizers` and `metadata.ownerReferences`
 * (`foreign-metadata`: core sets neither), a sequence above 2^52 (`unsafe-sequence`). Annotations
 * are not looked at: nothing reads a block's annotations, and tools add their own (kubectl apply's
 * last-applied-configuration). Pure functions of the snapshot; the rules live in core only.
 */
import { freezesOf } from 'blockipam/core';
import type { Allocation, Freeze, FreezeReason, IPAMBlock } from 'blockipam/core';
import { problem } from './problems.ts';
import type { Problem } from './problems.ts';
import type { Snapshot } from './snapshot.ts';

/** Owners named in a message before "and N more" (the objects list names them all). */
const OWNERS_NAMED = 5;

/** Every block's freezes as problems, in core's reason order per block. */
export function frozenBlockProblems(snapshot: Snapshot): Problem[] {
  return snapshot.blocks.flatMap((block) => {
    const freezes = freezesOf(block);
    const held = Object.keys(block.spec.allocations).length;
    const terminating = held > 0 && freezes.some((f) => f.reason === 'terminating');
    return freezes.flatMap((freeze) => FINDINGS[freeze.reason]({ block, freeze, terminating }) ?? []);
  });
}

/** `kubectl patch` removing one metadata field of block `name`. */
export function removeCommand(name: string, field: 'finalizers' | 'ownerReferences'): string {
  return `kubectl patch ipamblock ${name} --type=json -p '[{"op":"remove","path":"/metadata/${field}"}]'`;
}

/** What a finding is built from: the block, one of its freezes, and whether it is Terminating with allocations. */
interface FreezeContext {
  block: IPAMBlock;
  freeze: Freeze;
  /** The block is Terminating and holds allocations: its finalizers must stay. */
  terminating: boolean;
}

/** The problem for each reason (none for an empty Terminating block: it waits for its finalizers). */
const FINDINGS: Record<FreezeReason, (c: FreezeContext) => Problem | undefined> = {
  terminating: ({ block, freeze, terminating }) => {
    if (!terminating) return undefined;
    const { name, allocations } = parts(block);
    return problem(
      'terminating-block',
      `IPAMBlock ${name} (${block.spec.cidr}, affinity ${block.spec.affinity ?? 'none'}) ${freeze.message}, holding ${allocations.length} allocation(s) of ${ownersText(allocations)}: once it goes these addresses are recorded nowhere and can be handed out again while their pods run`,
      [`IPAMBlock/${name}`, ...podObjects(allocations)],
      `keep its finalizers while it holds allocations; restart the pods holding its addresses (kubectl delete pod -n NAMESPACE NAME): their CNI DEL releases them here (a Terminating block still releases) and they come back with addresses of other blocks; once it holds none, ${removeCommand(name, 'finalizers')}`,
    );
  },
  finalizers: ({ block, freeze, terminating }) => {
    const { name } = parts(block);
    return problem(
      'foreign-metadata',
      `IPAMBlock ${name} ${freeze.message} (core sets none): a delete of it hangs with the block Terminating, and the allocator hands out nothing from it`,
      [`IPAMBlock/${name}`],
      terminating
        ? `do not remove them while it holds allocations: the block would go, and its pods' addresses with it (see terminating-block for IPAMBlock ${name})`
        : `${removeCommand(name, 'finalizers')}; find who added them in the API server's audit log`,
    );
  },
  'owner-references': ({ block, freeze }) => {
    const { name, allocations } = parts(block);
    return problem(
      'foreign-metadata',
      `IPAMBlock ${name} ${freeze.message} (core sets none): Kubernetes' garbage collector deletes the block, with its ${allocations.length} allocation(s), once an owner is gone`,
      [`IPAMBlock/${name}`],
      `remove them at once: ${removeCommand(name, 'ownerReferences')}; find who added them in the API server's audit log`,
    );
  },
  'unsafe-sequence': ({ block, freeze }) => {
    const { name } = parts(block);
    return problem(
      'unsafe-sequence',
      `IPAMBlock ${name}: ${freeze.message}: the allocator hands out nothing from it`,
      [`IPAMBlock/${name}`],
      `ipamctl repair sequence ${name} (prints the plan; with --yes writes sequences below 2^52 under the block's resourceVersion)`,
    );
  },
};

function parts(block: IPAMBlock): { name: string; allocations: Allocation[] } {
  return { name: block.metadata.name, allocations: Object.values(block.spec.allocations) };
}

/** "pod ns/a, handle h, … and N more" for the allocations' owners. */
function ownersText(allocations: readonly Allocation[]): string {
  const named = allocations
    .slice(0, OWNERS_NAMED)
    .map((a) => (a.pod ? `pod ${a.namespace ?? ''}/${a.pod}` : `handle ${a.handle}`));
  const more = allocations.length - named.length;
  return `${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

function podObjects(allocations: readonly Allocation[]): string[] {
  return allocations.flatMap((a) => (a.pod ? [`Pod/${a.namespace ?? ''}/${a.pod}`] : []));
}
