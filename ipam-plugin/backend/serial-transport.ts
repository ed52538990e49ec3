/**
 * core's Kubernetes transport with its requests sent one at a time, so one plugin call uses one
 * keep-alive TLS connection instead of one per concurrent request. ADD's reads (affine-block
 * LIST, pod GET, namespace GET) used to go out together and open three connections: three TLS
 * handshakes in a process that lives for one call, each costing client CPU (socket, secure
 * context, certificate checks) and API-server CPU (docs/design-plugin.md "Start-up budget").
 * Request count and order of effects are unchanged; only the overlap of reads goes. A request
 * waits for the previous one to finish before it is sent; its own timeout starts when it is.
 *
 * Once a request has failed without an HTTP answer (connection refused or reset, timeout:
 * core's UnavailableError carrying the socket error as its cause), the requests queued behind it
 * fail with that error unsent, so a hung API server costs one request timeout, not one per
 * queued read. Failures with an HTTP status (404, 409, 429, 5xx) affect only their own request.
 */
import { isUnavailable } from 'blockipam/core';
import { KubeTransport, type Method, type RequestOptions } from 'blockipam/core/kube';

export class SerialTransport extends KubeTransport {
  #tail: Promise<unknown> = Promise.resolve();
  #broken: Error | undefined;

  override request<T>(method: Method, path: string, options?: RequestOptions): Promise<T> {
    const p = this.#tail.then(async () => {
      if (this.#broken) throw this.#broken;
      try {
        return await super.request<T>(method, path, options);
      } catch (e) {
        if (isUnavailable(e) && e.cause !== undefined) this.#broken = e;
        throw e;
      }
    });
    this.#tail = p.catch(() => undefined);
    return p;
  }
}
