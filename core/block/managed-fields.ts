/**
 * `metadata.managedFields`: the API server's record of who set which field. Nothing in blockipam
 * reads it, and every writer of an object may rewrite it — a node credential included (the
 * admission policy cannot bound its size: docs/install.md §Security) — so a block can be grown to
 * etcd's 1.5 MiB value limit that every watcher of blocks then pays for. Core's writes reset it
 * (core/datastore/kube.ts); this rule names a block whose record is larger than any set of writes
 * of core could leave, so the controller resets it and `ipamctl check` reports it. Pure.
 *
 * The bound: one manager's record lists at most every field of the object once, in ~0.7 of the
 * object's own JSON (an allocation's `"f:handle":{}` against `"handle":"…"`), and each write of
 * core resets the record to its own; so even four managers' full records (the agent, a plugin's
 * direct path, the controller's status, an admin's tool) stay within three times the object's
 * own JSON plus {@link MANAGED_FIELDS_SLACK_BYTES} for their names and times.
 */
import type { ObjectMeta } from '../resources.ts';

/** Bytes a record may exceed three times the object's own JSON by before it counts as oversized. */
export const MANAGED_FIELDS_SLACK_BYTES = 8 * 1024;

/** An oversized record: its JSON bytes and the bound it exceeds. */
export interface ManagedFieldsExcess {
  readonly bytes: number;
  readonly bound: number;
}

/**
 * The excess of `object`'s managedFields over the bound, or undefined when within it (or absent).
 * O(size of the record); the object itself is serialised only when the record alone exceeds the
 * slack.
 */
export function managedFieldsExcess(object: { metadata: ObjectMeta }): ManagedFieldsExcess | undefined {
  const record = object.metadata.managedFields;
  if (!record || record.length === 0) return undefined;
  const bytes = JSON.stringify(record).length;
  if (bytes <= MANAGED_FIELDS_SLACK_BYTES) return undefined;
  const { managedFields: _record, ...metadata } = object.metadata;
  const bound = 3 * JSON.stringify({ ...object, metadata }).length + MANAGED_FIELDS_SLACK_BYTES;
  return bytes > bound ? { bytes, bound } : undefined;
}
