/**
 * The Kubernetes Datastore: blockipam's CRDs and the built-in objects it reads, over the lean
 * transport (core/kube/transport.ts). Cluster-scoped CRs under /apis/ipam.blockipam.io/v1alpha1.
 * Every update carries metadata.resourceVersion (compare-and-swap); deletes send
 * DeleteOptions.preconditions. Metadata-only LISTs use the PartialObjectMetadataList form.
 */
import type { KubeClientConfig } from '../kube/config.ts';
import { KubeTransport } from '../kube/transport.ts';
import { API_VERSION } from '../resources.ts';
import type {
  IPAMBlock,
  IPAMConfigObject,
  IPAMNode,
  IPPool,
  IPReservation,
  KubeObject,
  Namespace,
  Node,
  ObjectMeta,
  Pod,
} from '../resources.ts';
import { selectorToQuery } from '../selector.ts';
import type {
  CallOptions,
  Datastore,
  DeletePreconditions,
  ListOptions,
  Page,
  PageOptions,
  PodListOptions,
  PodPageOptions,
  StatusResourceStore,
} from './datastore.ts';
import { isNotFound } from '../errors/not-found.ts';

const GROUP_PATH = `/apis/${API_VERSION}`;
const METADATA_LIST = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

interface List<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: T[];
}

/** A LIST answer as a {@link Page}; `typed` sets what the API server leaves out of items. */
function pageOf<T>(list: List<T>, typed: (item: T) => T = (item) => item): Page<T> {
  const token = list.metadata?.continue;
  return {
    items: (list.items ?? []).map(typed),
    resourceVersion: list.metadata?.resourceVersion ?? '',
    ...(token ? { continue: token } : {}),
  };
}

/** The query of one page: label selector, `limit`, `continue`. */
function pageQuery(options: PageOptions): Record<string, string | undefined> {
  return {
    labelSelector: selectorToQuery(options.labelSelector),
    limit: String(options.limit),
    continue: options.continue,
  };
}

// 4 KiB: a list's head (kind, apiVersion, metadata with a continue token) is a few hundred bytes.
const LIST_HEAD_MAX = 4096;

/**
 * The `metadata` of a LIST answer read from its head, without decoding the items: a built-in
 * kind's list is encoded kind, apiVersion, metadata, items (Go struct order), so the text before
 * `"items":`, closed, is a whole object. undefined when the head has another shape (a custom
 * resource's list may put items before metadata) — the caller then waits for the decoded page.
 */
function listHead(text: string): List<unknown>['metadata'] | undefined {
  const at = text.indexOf('"items":');
  if (at < 0 || at > LIST_HEAD_MAX) return undefined;
  const head = text.slice(0, at).trimEnd();
  if (!head.endsWith(',')) return undefined;
  try {
    const parsed = JSON.parse(`${head.slice(0, -1)}}`) as { metadata?: unknown };
    const { metadata } = parsed;
    return typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata)
      ? metadata
      : undefined;
  } catch {
    return undefined;
  }
}

/** The request options of one page: query, signal, and the early continue token (PageOptions.onContinue). */
function pageRequest(
  options: PageOptions,
  query: Record<string, string | undefined>,
): { query: Record<string, string | undefined>; signal?: AbortSignal; onBody?: (text: string) => void } {
  const { onContinue, signal } = options;
  const onBody =
    onContinue &&
    ((text: string): void => {
      const head = listHead(text);
      if (head) onContinue(head.continue || undefined);
    });
  return { query, ...(signal ? { signal } : {}), ...(onBody ? { onBody } : {}) };
}

/** The pod field selector (`spec.nodeName=…,status.podIP=…`), or undefined. */
function podFieldSelector(options: PodListOptions): string | undefined {
  const terms = [
    ...(options.nodeName === undefined ? [] : [`spec.nodeName=${options.nodeName}`]),
    ...(options.podIP === undefined ? [] : [`status.podIP=${options.podIP}`]),
  ];
  return terms.length === 0 ? undefined : terms.join(',');
}

/** get() that maps 404 to undefined. */
async function getOrUndefined<T>(
  api: KubeTransport,
  path: string,
  signal: AbortSignal | undefined,
): Promise<T | undefined> {
  try {
    return await api.request<T>('GET', path, { signal });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

class KubeResourceStore<T extends KubeObject> implements StatusResourceStore<T> {
  readonly #api: KubeTransport;
  readonly #plural: string;
  readonly #kind: string;

  constructor(api: KubeTransport, plural: string, kind: string) {
    this.#api = api;
    this.#plural = plural;
    this.#kind = kind;
  }

  get(name: string, options: CallOptions = {}): Promise<T | undefined> {
    return getOrUndefined<T>(this.#api, this.#path(name), options.signal);
  }

  async list(options: ListOptions = {}): Promise<T[]> {
    const list = await this.#api.request<List<T>>('GET', this.#path(), {
      query: listQuery(options),
      signal: options.signal,
    });
    return (list.items ?? []).map((item) => ({ ...item, apiVersion: API_VERSION, kind: this.#kind }));
  }

  async listMetadata(options: ListOptions = {}): Promise<ObjectMeta[]> {
    const list = await this.#api.request<List<{ metadata: ObjectMeta }>>('GET', this.#path(), {
      query: listQuery(options),
      accept: METADATA_LIST,
      signal: options.signal,
    });
    return (list.items ?? []).map((item) => item.metadata);
  }

  async listPage(options: PageOptions): Promise<Page<T>> {
    const list = await this.#api.request<List<T>>(
      'GET',
      this.#path(),
      pageRequest(options, pageQuery(options)),
    );
    return pageOf(list, (item) => this.#typed(item));
  }

  create(object: T, options: CallOptions = {}): Promise<T> {
    return this.#api.request<T>('POST', this.#path(), { body: this.#typed(object), signal: options.signal });
  }

  update(object: T, options: CallOptions = {}): Promise<T> {
    return this.#api.request<T>('PUT', this.#path(object.metadata.name), {
      body: this.#stripped(object),
      signal: options.signal,
    });
  }

  updateStatus(object: T, options: CallOptions = {}): Promise<T> {
    return this.#api.request<T>('PUT', `${this.#path(object.metadata.name)}/status`, {
      body: this.#stripped(object),
      signal: options.signal,
    });
  }

  /**
   * The object to write, its `metadata.managedFields` reset (`[{}]`: the API server drops the
   * list and records this write alone — on an update; a status-subresource write keeps the
   * record, test/core/managed-fields.int.test.ts). Nothing here reads managedFields, and every reader of
   * blocks pays for their size: written back as read, a list another writer grew (any node
   * credential can: docs/install.md §Security) would outlive every write of ours.
   */
  #stripped(object: T): T {
    const typed = this.#typed(object);
    return { ...typed, metadata: { ...typed.metadata, managedFields: [{}] } };
  }

  async delete(
    name: string,
    preconditions: DeletePreconditions = {},
    options: CallOptions = {},
  ): Promise<void> {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      ...(preconditions.resourceVersion || preconditions.uid ? { preconditions } : {}),
    };
    await this.#api.request('DELETE', this.#path(name), { body, signal: options.signal });
  }

  #path(name?: string): string {
    return `${GROUP_PATH}/${this.#plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
  }

  #typed(object: T): T {
    return { ...object, apiVersion: API_VERSION, kind: this.#kind };
  }
}

/**
 * A Datastore backed by a Kubernetes API server.
 * @param source a transport, or connection settings (a transport with default options is made)
 */
export class KubeDatastore implements Datastore {
  readonly transport: KubeTransport;
  readonly pools: KubeResourceStore<IPPool>;
  readonly blocks: KubeResourceStore<IPAMBlock>;
  readonly configs: KubeResourceStore<IPAMConfigObject>;
  readonly reservations: KubeResourceStore<IPReservation>;
  /** IPAMNodes (not in the Datastore port: only the controller writes them, agents watch them). */
  readonly ipamNodes: KubeResourceStore<IPAMNode>;

  constructor(source: KubeTransport | KubeClientConfig) {
    this.transport = source instanceof KubeTransport ? source : new KubeTransport(source);
    this.pools = new KubeResourceStore<IPPool>(this.transport, 'ippools', 'IPPool');
    this.blocks = new KubeResourceStore<IPAMBlock>(this.transport, 'ipamblocks', 'IPAMBlock');
    this.configs = new KubeResourceStore<IPAMConfigObject>(this.transport, 'ipamconfigs', 'IPAMConfig');
    this.reservations = new KubeResourceStore<IPReservation>(
      this.transport,
      'ipreservations',
      'IPReservation',
    );
    this.ipamNodes = new KubeResourceStore<IPAMNode>(this.transport, 'ipamnodes', 'IPAMNode');
  }

  getPod(namespace: string, name: string, options: CallOptions = {}): Promise<Pod | undefined> {
    return getOrUndefined<Pod>(
      this.transport,
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`,
      options.signal,
    );
  }

  getNamespace(name: string, options: CallOptions = {}): Promise<Namespace | undefined> {
    return getOrUndefined<Namespace>(
      this.transport,
      `/api/v1/namespaces/${encodeURIComponent(name)}`,
      options.signal,
    );
  }

  getNode(name: string, options: CallOptions = {}): Promise<Node | undefined> {
    return getOrUndefined<Node>(this.transport, `/api/v1/nodes/${encodeURIComponent(name)}`, options.signal);
  }

  async listPods(options: PodListOptions = {}): Promise<Pod[]> {
    const query = {
      labelSelector: selectorToQuery(options.labelSelector),
      fieldSelector: podFieldSelector(options),
    };
    return (
      (await this.transport.request<List<Pod>>('GET', '/api/v1/pods', { query, signal: options.signal }))
        .items ?? []
    );
  }

  async listPodPage(options: PodPageOptions): Promise<Page<Pod>> {
    const query = { ...pageQuery(options), fieldSelector: podFieldSelector(options) };
    return pageOf(
      await this.transport.request<List<Pod>>('GET', '/api/v1/pods', pageRequest(options, query)),
    );
  }

  async listNodePage(options: PageOptions): Promise<Page<Node>> {
    return pageOf(
      await this.transport.request<List<Node>>(
        'GET',
        '/api/v1/nodes',
        pageRequest(options, pageQuery(options)),
      ),
    );
  }

  async listNodes(options: ListOptions = {}): Promise<Node[]> {
    return (
      (
        await this.transport.request<List<Node>>('GET', '/api/v1/nodes', {
          query: { labelSelector: selectorToQuery(options.labelSelector) },
          signal: options.signal,
        })
      ).items ?? []
    );
  }

  /** Closes the transport's idle connections. */
  close(): void {
    this.transport.close();
  }
}

/** The query of a LIST: label selector, and `resourceVersion=0` when a cached answer will do. */
function listQuery(options: ListOptions): Record<string, string | undefined> {
  return {
    labelSelector: selectorToQuery(options.labelSelector),
    ...(options.cached ? { resourceVersion: '0' } : {}),
  };
}
