/**
 * `metadata.managedFields` grown as another writer can (any credential that may update a block:
 * the API server stores the record it is sent), for the tests of core's, the controller's and
 * ipamctl's answers to it.
 */
import type { IPAMBlock } from 'blockipam/core';
import type { KubeDatastore } from 'blockipam/core/kube';

/** The JSON bytes of a block's managedFields. */
export const managedFieldsBytes = (block: IPAMBlock | undefined): number =>
  JSON.stringify(block?.metadata.managedFields ?? []).length;

/**
 * Rewrites the stored block `name` with a record of 2,000 made-up field entries (~50 KB) under a
 * manager "planter".
 * @returns the block as the API server answered the write
 */
export async function growManagedFields(ds: KubeDatastore, name: string): Promise<IPAMBlock> {
  const stored = await ds.blocks.get(name);
  if (!stored) throw new Error(`IPAMBlock ${name} does not exist`);
  const junk = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`f:junk.example/k${i}`, {}]));
  return ds.transport.request<IPAMBlock>('PUT', `/apis/ipam.blockipam.io/v1alpha1/ipamblocks/${name}`, {
    body: {
      ...stored,
      metadata: {
        ...stored.metadata,
        managedFields: [
          {
            manager: 'planter',
            operation: 'Update',
            apiVersion: 'ipam.blockipam.io/v1alpha1',
            time: '2026-01-01T00:00:00Z',
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:metadata': { 'f:labels': junk } },
          },
        ],
      },
    },
  });
}
