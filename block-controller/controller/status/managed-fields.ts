/**
 * The managedFields step (docs/design-controller.md §1, step 6): a block whose
 * `metadata.managedFields` core's `managedFieldsExcess` calls oversized — another writer grew them
 * (a node credential can; no write of blockipam does) and every watcher of blocks reads them —
 * is written back as watched, through core's datastore, whose updates reset the record
 * (`managedFields: [{}]`; a status write does not: the API server keeps the record on the status
 * subresource). Compare-and-swap on the watched resourceVersion: a 409 or 404 means the block
 * changed or went, and the next pass judges it again. A Warning Event `ManagedFieldsReset` names
 * the size; a writer that keeps growing them is reset once per pass.
 */
import { isConflict, isNotFound, managedFieldsExcess } from 'blockipam/core';
import type { PassContext } from '../pass.ts';

/** @returns the blocks whose record was reset this pass, by name */
export async function managedFieldsStep(ctx: PassContext): Promise<string[]> {
  const reset: string[] = [];
  for (const block of ctx.view.blocks()) {
    const excess = managedFieldsExcess(block);
    if (!excess) continue;
    if (!ctx.mayWrite()) break;
    const { name, uid } = block.metadata;
    try {
      await ctx.ds.blocks.update(block);
    } catch (error) {
      if (isConflict(error) || isNotFound(error)) continue;
      ctx.onApiError?.('managed-fields-reset', error);
      ctx.log.warn('IPAMBlock managedFields not reset; retried next pass', {
        block: name,
        error: String(error),
      });
      continue;
    }
    reset.push(name);
    ctx.log.warn('IPAMBlock managedFields reset', { block: name, bytes: excess.bytes, bound: excess.bound });
    ctx.events.emit({
      kind: 'IPAMBlock',
      name,
      ...(uid ? { uid } : {}),
      type: 'Warning',
      reason: 'ManagedFieldsReset',
      action: 'Reset',
      note: `metadata.managedFields were ${excess.bytes} bytes (bound ${excess.bound}): reset by writing the block back; no write of blockipam grows them so, so find their writer in the API server's audit log`,
    });
  }
  return reset;
}
