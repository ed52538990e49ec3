/**
 * The production backend: core's allocator over the Kubernetes datastore. (Wired in phase 2.)
 */
import type { Backend } from './backend.ts';
import type { NetConf } from './netconf.ts';

export function createKubeBackend(_conf: NetConf): Promise<Backend> {
  return Promise.reject(new Error('kube backend not wired yet'));
}
