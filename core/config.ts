/**
 * IPAMConfig: the singleton `default`. A missing object or field means the documented default
 * (the object is never written by the IPAM itself). Cross-field rules are enforced by the CRD's
 * CEL rules (crds/ipamconfigs.yaml); {@link configProblems} repeats them for the memory store
 * and ipamctl.
 */
import type { IPAMConfigObject } from './resources.ts';

export const IPAM_CONFIG_NAME = 'default';

/** The effective configuration, every field filled. */
export interface IPAMSettings {
  /** No borrowing from other nodes' blocks. Default false. */
  readonly strictAffinity: boolean;
  /** Nodes may claim blocks on demand. Default true. */
  readonly autoAllocateBlocks: boolean;
  /** Most blocks one node may hold per pool family. Default 20 (Calico's default). */
  readonly maxBlocksPerNode: number;
  /** A released address is reused before this only when nothing else is free. Default 0 s. */
  readonly ipCooldownSeconds: number;
  /** An empty block is released only after staying empty this long. Default 300 s. */
  readonly emptyBlockReleaseSeconds: number;
  /** Leaked allocations are reclaimed after this (controller). Default 900 s (Calico's 15 min). */
  readonly leakGracePeriodSeconds: number;
  /**
   * The node agent's watermark: when the free addresses in a node's affine blocks of an eligible
   * pool fall below this, the agent claims another block of that pool ahead of demand
   * (docs/design-agent.md §Pre-claim). 0 disables pre-claiming. Default 16.
   */
  readonly minFreeAddressesPerNode: number;
  /**
   * A pool is NearlyExhausted (its status condition) once this percentage of its capacity is
   * allocated or reserved (docs/design-controller.md §Pool conditions), 1–100. Default 90.
   */
  readonly poolNearlyExhaustedPercent: number;
}

export const DEFAULT_SETTINGS: IPAMSettings = {
  strictAffinity: false,
  autoAllocateBlocks: true,
  maxBlocksPerNode: 20,
  ipCooldownSeconds: 0,
  // 5 min: long enough that a node whose last pod restarts keeps its block (no ping-pong).
  emptyBlockReleaseSeconds: 300,
  leakGracePeriodSeconds: 900,
  // 16: a burst of 16 pod starts on a node (a kubelet restart, a DaemonSet rollout plus a small
  // Deployment) never claims on the ADD path, while a node with a few pods keeps one /26 block
  // (61 usable addresses) until 45 are in use.
  minFreeAddressesPerNode: 16,
  // 90 %: on a /16 of /26 blocks, 6 500 addresses (about 100 blocks) left when it turns True.
  poolNearlyExhaustedPercent: 90,
};

/** The numeric settings. */
export type NumericSetting = {
  [K in keyof IPAMSettings]: IPAMSettings[K] extends number ? K : never;
}[keyof IPAMSettings];

/**
 * Each numeric setting's range, inclusive: crds/ipamconfigs.yaml's `minimum` / `maximum` (the
 * API server refuses anything else with 422), so a client can refuse a value before sending it.
 * test/core/config.test.ts checks these equal the CRD's.
 */
export const SETTING_LIMITS: Readonly<Record<NumericSetting, { min: number; max: number }>> = {
  maxBlocksPerNode: { min: 1, max: 10_000 },
  ipCooldownSeconds: { min: 0, max: 3_600 },
  emptyBlockReleaseSeconds: { min: 0, max: 86_400 },
  leakGracePeriodSeconds: { min: 0, max: 86_400 },
  minFreeAddressesPerNode: { min: 0, max: 65_536 },
  poolNearlyExhaustedPercent: { min: 1, max: 100 },
};

/** Fills the defaults into a stored IPAMConfig (or none). */
export function settingsOf(config: IPAMConfigObject | undefined): IPAMSettings {
  const spec = config?.spec ?? {};
  return {
    strictAffinity: spec.strictAffinity ?? DEFAULT_SETTINGS.strictAffinity,
    autoAllocateBlocks: spec.autoAllocateBlocks ?? DEFAULT_SETTINGS.autoAllocateBlocks,
    maxBlocksPerNode: spec.maxBlocksPerNode ?? DEFAULT_SETTINGS.maxBlocksPerNode,
    ipCooldownSeconds: spec.ipCooldownSeconds ?? DEFAULT_SETTINGS.ipCooldownSeconds,
    emptyBlockReleaseSeconds: spec.emptyBlockReleaseSeconds ?? DEFAULT_SETTINGS.emptyBlockReleaseSeconds,
    leakGracePeriodSeconds: spec.leakGracePeriodSeconds ?? DEFAULT_SETTINGS.leakGracePeriodSeconds,
    minFreeAddressesPerNode: spec.minFreeAddressesPerNode ?? DEFAULT_SETTINGS.minFreeAddressesPerNode,
    poolNearlyExhaustedPercent:
      spec.poolNearlyExhaustedPercent ?? DEFAULT_SETTINGS.poolNearlyExhaustedPercent,
  };
}

/**
 * The cross-field rules of crds/ipamconfigs.yaml, as messages (empty = valid):
 * - autoAllocateBlocks=false needs strictAffinity=true (as Calico's SetIPAMConfig: without claims
 *   and with borrowing, nodes would live off other nodes' blocks);
 * - emptyBlockReleaseSeconds ≥ ipCooldownSeconds (releasing a block whose addresses still cool
 *   down would let another node claim it and reuse them at once).
 */
export function configProblems(settings: IPAMSettings): string[] {
  const problems: string[] = [];
  if (!settings.autoAllocateBlocks && !settings.strictAffinity)
    problems.push('spec.autoAllocateBlocks: false requires spec.strictAffinity: true');
  if (settings.emptyBlockReleaseSeconds < settings.ipCooldownSeconds)
    problems.push('spec.emptyBlockReleaseSeconds must be >= spec.ipCooldownSeconds');
  return problems;
}
