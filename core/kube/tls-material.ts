/**
 * Checks a kubeconfig's TLS material before it is used, so a CA, client certificate or key
 * that cannot work is reported as the kubeconfig item it is — not as whatever the TLS stack
 * says at connect time (Bun: `FailedToOpenSocket: Was there a typo in the url or port?`; Node:
 * `DECODER routines::unsupported`, or a request silently sent without a client certificate).
 * Rules, as client-go's: PEM only (kubeconfig data and files are PEM; DER is refused), every
 * certificate and key must parse, a client certificate needs its key and the key must be the
 * certificate's. Uses node:crypto (X509Certificate, createPrivateKey).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { KubeClientConfig } from './config.ts';

const pemBlock = /-----BEGIN ([A-Z0-9 ]+)-----/;

/**
 * @param source how to name the configuration in the message, e.g. "kubeconfig /etc/x.conf"
 * @returns a sentence naming the unusable item and why, or undefined when everything is usable
 */
export function tlsMaterialProblem(config: KubeClientConfig, source: string): string | undefined {
  const check = (
    item: string,
    data: Buffer | undefined,
    parse: (b: Buffer) => unknown,
  ): string | undefined => {
    if (data === undefined) return undefined;
    if (!pemBlock.test(data.toString('latin1')))
      return `${source}: ${item} is not PEM (DER and other encodings are not supported; convert with openssl … -outform PEM)`;
    try {
      parse(data);
      return undefined;
    } catch (e) {
      return `${source}: ${item} cannot be used: ${(e as Error).message}`;
    }
  };
  let cert: X509Certificate | undefined;
  const problem =
    check('certificate-authority data', config.ca, (b) => new X509Certificate(b)) ??
    check('client-certificate data', config.cert, (b) => (cert = new X509Certificate(b))) ??
    check('client-key data', config.key, (b) => createPrivateKey(b));
  if (problem) return problem;
  if (config.cert && !config.key) return `${source}: client-certificate data without client-key data`;
  if (config.key && !config.cert) return `${source}: client-key data without client-certificate data`;
  if (cert && config.key && !cert.checkPrivateKey(createPrivateKey(config.key)))
    return `${source}: client-key data does not belong to the client-certificate data`;
  return undefined;
}
