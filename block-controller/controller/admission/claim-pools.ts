/**
 * The claimable-pools step (docs/design-controller.md "Claimable pools"): publishes core's
 * {@link claimPoolsData} of the watched IPPools into the ConfigMap that the chart's admission
 * policy takes as its parameter, so a node credential may claim blocks only in usable pools, of
 * the pool's block size. Written only when the data differs, with compare-and-swap on the
 * ConfigMap's resourceVersion (a 409 is retried by the next pass). The chart creates the
 * ConfigMap (RBAC cannot limit `create` to one name); a missing one is logged, never created.
 * It runs first in a pass: a pool created or disabled reaches the policy before any GC work.
 */
import { claimPoolsData, isConflict, isNotFound, sameClaimPoolsData } from 'blockipam/core';
import type { KubeTransport } from 'blockipam/core/kube';
import type { PassContext } from '../pass.ts';

/** Where the list goes. */
export interface ClaimPoolsSink {
  /** Namespace/name, for logs. */
  readonly target: string;
  /**
   * Makes the ConfigMap's data equal `data`.
   * @returns 'written' or 'unchanged'
   * @throws NotFoundError (core) when the ConfigMap does not exist; ConflictError on a
   *   concurrent write; other API errors as core's transport throws them
   */
  publish(data: Readonly<Record<string, string>>, signal?: AbortSignal): Promise<'written' | 'unchanged'>;
}

interface ConfigMap {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string };
  data?: Record<string, string>;
}

/** A sink writing ConfigMap `namespace/name` through core's transport (GET, then PUT if it differs). */
export function kubeClaimPoolsSink(
  transport: KubeTransport,
  options: { namespace: string; name: string },
): ClaimPoolsSink {
  const path = `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/configmaps/${encodeURIComponent(options.name)}`;
  return {
    target: `${options.namespace}/${options.name}`,
    async publish(data, signal) {
      const current = await transport.request<ConfigMap>('GET', path, signal ? { signal } : {});
      if (sameClaimPoolsData(current.data, data)) return 'unchanged';
      // resourceVersion kept: compare-and-swap; binaryData and labels untouched
      await transport.request('PUT', path, {
        body: { ...current, data: { ...data } },
        ...(signal ? { signal } : {}),
      });
      return 'written';
    },
  };
}

export interface ClaimPoolsStep {
  /** 'written', 'unchanged', or why nothing was published. */
  outcome: 'written' | 'unchanged' | 'not-leader' | 'missing' | 'conflict' | 'failed';
}

/** Publishes the claimable pools of the pass's view through `sink`; never throws. */
export async function claimPoolsStep(ctx: PassContext, sink: ClaimPoolsSink): Promise<ClaimPoolsStep> {
  if (!ctx.mayWrite()) return { outcome: 'not-leader' };
  const data = claimPoolsData(ctx.view.pools());
  try {
    const outcome = await sink.publish(data, ctx.allocator.signal);
    if (outcome === 'written')
      ctx.log.info('claimable pools published for the admission policy', {
        configMap: sink.target,
        pools: Object.keys(data).length,
      });
    return { outcome };
  } catch (error) {
    if (isConflict(error)) return { outcome: 'conflict' };
    ctx.onApiError?.('claim-pools', error);
    const missing = isNotFound(error);
    ctx.log.warn(
      missing
        ? 'the admission policy’s ConfigMap of claimable pools is missing (the chart creates it); nodes cannot claim blocks until it exists'
        : 'claimable pools not published; retried next pass',
      { configMap: sink.target, error: String(error) },
    );
    return { outcome: missing ? 'missing' : 'failed' };
  }
}
