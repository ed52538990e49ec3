/**
 * Kubernetes Events (events.k8s.io/v1) on what the controller changed: leaked addresses
 * released, a deleted node's blocks released, unowned empty blocks deleted, a pool's
 * Allocatable condition changed. Best effort: an Event that cannot be written is counted and
 * logged by the caller, never retried, never blocks the pass; at most `maxPerPass` per pass
 * (a mass reclaim must not flood the API server with Events).
 */
import { API_VERSION } from 'blockipam/core';
import type { KubeTransport } from 'blockipam/core/kube';
import { microTime } from './leader/lease.ts';

const REPORTING_CONTROLLER = 'ipam.blockipam.io/controller';
// 50: one pass releasing leaks in 250 blocks would otherwise write 250 Events in a burst.
export const DEFAULT_MAX_EVENTS_PER_PASS = 50;

/** One Event about a cluster-scoped blockipam object (or a Node). */
export interface ControllerEvent {
  kind: 'IPAMBlock' | 'IPPool' | 'Node';
  name: string;
  uid?: string;
  type: 'Normal' | 'Warning';
  /** CamelCase, e.g. LeaksReleased. */
  reason: string;
  /** CamelCase verb, e.g. Release. */
  action: string;
  /** Human text, ≤ 1 KiB. */
  note: string;
}

export interface EventSink {
  emit(event: ControllerEvent): Promise<void>;
}

/**
 * Events written to `namespace` (cluster-scoped objects' Events live in a namespace; "default"
 * is where kubectl describe looks for them) as `instance`.
 */
export function kubeEventSink(
  transport: KubeTransport,
  options: { namespace: string; instance: string; clock?: () => number },
): EventSink {
  const path = `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(options.namespace)}/events`;
  return {
    async emit(event) {
      const apiVersion = event.kind === 'Node' ? 'v1' : API_VERSION;
      await transport.request('POST', path, {
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { generateName: `${event.name.slice(0, 200)}-`, namespace: options.namespace },
          eventTime: microTime((options.clock ?? Date.now)()),
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: options.instance.slice(0, 128),
          action: event.action,
          reason: event.reason,
          type: event.type,
          note: event.note.slice(0, 1024),
          regarding: {
            apiVersion,
            kind: event.kind,
            name: event.name,
            ...(event.uid ? { uid: event.uid } : {}),
          },
        },
      });
    },
  };
}
