/**
 * Pod and namespace annotations that steer an allocation (docs/design-core.md §2). The names are
 * defined here once; core's node IPAM service parses the values (node-ipam/annotations.ts).
 *
 * - `ipam.blockipam.io/ippools` (pod or namespace): JSON list of pool names or CIDRs;
 * - `ipam.blockipam.io/ip-addrs` (pod): JSON list of static addresses, at most one per family.
 */

export const POOLS_ANNOTATION = 'ipam.blockipam.io/ippools';
export const IP_ADDRS_ANNOTATION = 'ipam.blockipam.io/ip-addrs';

/** The name of an annotation an allocation reads. Adding one to the reader means adding it here. */
type AllocationAnnotation = typeof POOLS_ANNOTATION | typeof IP_ADDRS_ANNOTATION;

/**
 * The annotations an allocation reads, by name (an object's full annotation map fits this type,
 * so a reader typed on it can take either, and cannot read a name outside the set).
 */
export type AllocationAnnotations = Readonly<Partial<Record<AllocationAnnotation, string>>>;
