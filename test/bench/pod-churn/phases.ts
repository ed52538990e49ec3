/**
 * The phases of the pod-churn benchmark (Spiderpool's method at this machine's scale): create
 * Deployments totalling N pods at once → time until all are Running; delete every pod at once
 * (their ReplicaSets re-create them) → time until N new pods are Running; delete the
 * Deployments → time until no pod is left, and until the IPAM holds no address.
 *
 * Progress is sampled by one pod LIST per second (a pod counts as Running when its phase is
 * Running and it is not being deleted), so each phase yields the series of Running pods over
 * time that the chart draws. Times are seconds from the phase's first request.
 */
import { KubeTransport } from 'blockipam/core/kube';
import { isNotFound, isUnavailable } from 'blockipam/core';
import { loadKubeconfig } from 'blockipam/core/kubeconfig';
import type { Cluster } from '../../helpers/cluster.ts';

/** Sampling period of the pod LIST: the series' resolution, ≤ 1 % of a phase of ≥ 100 s. */
const SAMPLE_MS = 1000;
/**
 * A phase that has not finished after this long is reported as not finished (with `diagnose()`'s
 * account of what was stuck), so that a stalled phase still ends the run with its figures.
 */
const PHASE_TIMEOUT_MS = 10 * 60_000;
/** Deployments the pods are split over (Spiderpool's runs use several). */
const DEPLOYMENTS = 3;

interface PodItem {
  metadata: { name: string; deletionTimestamp?: string };
  spec: { nodeName?: string };
  status?: { phase?: string };
}

/** One phase's result. `done` false when it timed out. */
export interface PhaseResult {
  readonly phase: 'create' | 're-create' | 'delete';
  readonly seconds: number;
  readonly done: boolean;
  /** (seconds, pods Running) — or pods left, for the delete phase — one per sample. */
  readonly series: readonly (readonly [number, number])[];
  /** Pods per node at the end (create, re-create). */
  readonly perNode: Readonly<Record<string, number>>;
  /** Seconds until the IPAM held no address (delete), if it got there. */
  readonly releasedSeconds?: number;
  /** What the bench had to do differently in this phase (said in the report). */
  readonly note?: string;
}

export class Churn {
  readonly #api: KubeTransport;
  readonly #ns: string;
  readonly #pods: number;
  readonly #image: string;

  constructor(c: Cluster, options: { namespace: string; pods: number }) {
    this.#api = new KubeTransport(loadKubeconfig(c.kubeconfig), { timeoutMs: 120_000 });
    this.#ns = options.namespace;
    this.#pods = options.pods;
    this.#image = c.pauseImage;
  }

  close(): void {
    this.#api.close();
  }

  async createNamespace(): Promise<void> {
    await this.#api.request('POST', '/api/v1/namespaces', {
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: this.#ns } },
    });
  }

  async #list(): Promise<PodItem[]> {
    const list = await this.#api.request<{ items: PodItem[] }>('GET', `/api/v1/namespaces/${this.#ns}/pods`);
    return list.items;
  }

  /** Samples until `finished(pods)`; @returns the series and whether it finished in time. */
  async #follow(
    t0: number,
    measure: (pods: PodItem[]) => number,
    finished: (value: number) => boolean,
  ): Promise<{ series: [number, number][]; seconds: number; done: boolean; last: PodItem[] }> {
    const series: [number, number][] = [];
    for (;;) {
      const pods = await this.#list();
      const at = (performance.now() - t0) / 1000;
      const value = measure(pods);
      series.push([Math.round(at * 10) / 10, value]);
      if (finished(value)) return { series, seconds: at, done: true, last: pods };
      if (performance.now() - t0 > PHASE_TIMEOUT_MS) return { series, seconds: at, done: false, last: pods };
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  }

  #running = (pods: PodItem[]): number =>
    pods.filter((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp).length;

  #perNode(pods: PodItem[]): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of pods)
      if (!p.metadata.deletionTimestamp) out[p.spec.nodeName ?? '-'] = (out[p.spec.nodeName ?? '-'] ?? 0) + 1;
    return out;
  }

  /** Creates the Deployments (N pods in total) at once; follows until all N are Running. */
  async create(): Promise<PhaseResult> {
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: DEPLOYMENTS }, (_, d) => {
        const replicas = Math.floor(this.#pods / DEPLOYMENTS) + (d < this.#pods % DEPLOYMENTS ? 1 : 0);
        const labels = { app: `churn-${d}` };
        return this.#api.request('POST', `/apis/apps/v1/namespaces/${this.#ns}/deployments`, {
          body: {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: `churn-${d}` },
            spec: {
              replicas,
              selector: { matchLabels: labels },
              template: {
                metadata: { labels },
                spec: {
                  terminationGracePeriodSeconds: 5,
                  containers: [{ name: 'pause', image: this.#image, imagePullPolicy: 'Never' }],
                },
              },
            },
          },
        });
      }),
    );
    const f = await this.#follow(t0, this.#running, (n) => n >= this.#pods);
    return { phase: 'create', ...f, perNode: this.#perNode(f.last) };
  }

  /** Deletes every pod at once (default grace); follows until N replacements are Running. */
  async recreate(): Promise<PhaseResult> {
    // The pods to replace, named before the DELETE: a fallback below must not delete the
    // replacements the ReplicaSets have already made (that would lengthen the phase).
    const before = new Set((await this.#list()).map((p) => p.metadata.name));
    const t0 = performance.now();
    let fallback: string | undefined;
    try {
      await this.#api.request('DELETE', `/api/v1/namespaces/${this.#ns}/pods`);
    } catch (error) {
      // A DELETE collection of hundreds of pods can outlast the connection on a loaded machine
      // (seen: "socket hang up" at load ~180); it may have been applied in part, so the pods
      // not yet being deleted are deleted one by one (the phase's clock keeps running).
      if (!isUnavailable(error)) throw error;
      process.stderr.write(
        `pod-churn: the DELETE collection failed (${String(error)}); deleting the rest one by one\n`,
      );
      const rest = (await this.#list()).filter(
        (p) => !p.metadata.deletionTimestamp && before.has(p.metadata.name),
      );
      fallback = `the DELETE collection failed (${String(error).slice(0, 120)}); the bench deleted the ${rest.length} old pods not yet being deleted one by one, 16 at a time, inside the phase's time`;
      for (let i = 0; i < rest.length; i += 16)
        await Promise.all(
          rest.slice(i, i + 16).map((p) =>
            this.#api
              .request('DELETE', `/api/v1/namespaces/${this.#ns}/pods/${p.metadata.name}`)
              .catch((e: unknown) => {
                if (!isNotFound(e)) throw e;
              }),
          ),
        );
    }
    const f = await this.#follow(t0, this.#running, (n) => n >= this.#pods);
    return {
      phase: 're-create',
      ...f,
      perNode: this.#perNode(f.last),
      ...(fallback ? { note: fallback } : {}),
    };
  }

  /**
   * Deletes the Deployments (background propagation); follows until no pod is left, then until
   * `held()` (the IPAM's addresses in use) is 0.
   */
  async delete(held: () => Promise<number> | number): Promise<PhaseResult> {
    const t0 = performance.now();
    for (let d = 0; d < DEPLOYMENTS; d++)
      await this.#api.request('DELETE', `/apis/apps/v1/namespaces/${this.#ns}/deployments/churn-${d}`);
    const f = await this.#follow(
      t0,
      (pods) => pods.length,
      (n) => n === 0,
    );
    let releasedSeconds: number | undefined;
    while (performance.now() - t0 < PHASE_TIMEOUT_MS) {
      if ((await held()) === 0) {
        releasedSeconds = (performance.now() - t0) / 1000;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
    return {
      phase: 'delete',
      seconds: f.seconds,
      done: f.done,
      series: f.series,
      perNode: {},
      ...(releasedSeconds === undefined ? {} : { releasedSeconds }),
    };
  }

  /**
   * What a phase that did not finish was waiting for, in one line: pods per phase, the
   * ReplicaSets' desired / current / ready counts, and the namespace's most frequent warning
   * Events (reason and the message's first 160 characters, with counts).
   */
  async diagnose(): Promise<string> {
    const pods = await this.#list();
    const phases: Record<string, number> = {};
    for (const p of pods) {
      const key = p.metadata.deletionTimestamp ? 'Terminating' : (p.status?.phase ?? 'unknown');
      phases[key] = (phases[key] ?? 0) + 1;
    }
    const rs = await this.#api.request<{
      items: {
        metadata: { name: string };
        spec: { replicas?: number };
        status?: { replicas?: number; readyReplicas?: number };
      }[];
    }>('GET', `/apis/apps/v1/namespaces/${this.#ns}/replicasets`);
    const sets = rs.items.map(
      (r) =>
        `${r.metadata.name} ${r.spec.replicas ?? 0}/${r.status?.replicas ?? 0}/${r.status?.readyReplicas ?? 0}`,
    );
    const events = await this.#api.request<{
      items: { type?: string; reason?: string; message?: string; count?: number }[];
    }>('GET', `/api/v1/namespaces/${this.#ns}/events`);
    const warnings = new Map<string, number>();
    for (const e of events.items)
      if (e.type === 'Warning') {
        // grouped by the message with its names, quoted strings and numbers blanked out
        const shape = (e.message ?? '')
          .replace(/"[^"]*"/g, '"…"')
          .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<uid>')
          .replace(/\d+/g, 'N');
        const key = `${e.reason ?? '?'}: ${shape.slice(0, 160)}`;
        warnings.set(key, (warnings.get(key) ?? 0) + (e.count ?? 1));
      }
    const top = [...warnings.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
    return [
      `pods ${JSON.stringify(phases)}`,
      `ReplicaSets desired/current/ready: ${sets.join(', ')}`,
      `warning Events: ${top.map(([k, n]) => `${n}× ${k}`).join(' | ') || 'none'}`,
    ].join('; ');
  }

  /** Addresses blockipam's IPAMBlocks hold. */
  async blockipamHeld(): Promise<number> {
    const list = await this.#api.request<{ items: { spec: { allocations?: Record<string, unknown> } }[] }>(
      'GET',
      '/apis/ipam.blockipam.io/v1alpha1/ipamblocks',
    );
    return list.items.reduce((n, b) => n + Object.keys(b.spec.allocations ?? {}).length, 0);
  }

  /** blockipam's blocks: each one's node affinity and creationTimestamp. */
  async blockipamBlocks(): Promise<{ node: string; created: string }[]> {
    const list = await this.#api.request<{
      items: { metadata: { creationTimestamp: string }; spec: { affinity?: string | null } }[];
    }>('GET', '/apis/ipam.blockipam.io/v1alpha1/ipamblocks');
    return list.items.map((b) => ({ node: b.spec.affinity ?? '-', created: b.metadata.creationTimestamp }));
  }
}
