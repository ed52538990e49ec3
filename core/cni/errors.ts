/**
 * CNI-facing errors: every failure the plugin reports carries a CNI error code.
 *
 * Codes (SPEC.md §6, "Error"): 1 incompatible version, 2 unsupported field,
 * 3 unknown container, 4 invalid environment variables, 5 I/O failure, 6 undecodable content,
 * 7 invalid network config, 11 try again later, 50/51 STATUS unavailability; 100+ are
 * plugin-specific (105 credentials/TLS refused or RBAC denied, 106 request rejected as invalid or
 * answer not JSON, 107 an admission policy denied the write); 999 is the Go library's "internal
 * error", reused for unexpected failures.
 * Loads nothing of core but the dependency-free service types and bounded messages.
 */
import { boundMessage, MAX_MESSAGE_CHARS } from '../node-ipam/service-types.ts';
import type { NodeIpamErrorKind } from '../node-ipam/service-types.ts';

/** CNI error codes used by blockipam. Plugin-specific codes start at 100 (spec: 0–99 reserved). */
export const CniCode = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  unknownContainer: 3,
  invalidEnv: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  notAvailable: 50,
  /** An ADD for an attachment that already holds an allocation (docs/design-plugin.md §Invariants, 4). */
  duplicateAllocation: 100,
  /** No free address in any eligible pool / block. */
  exhausted: 101,
  /** A requested static address is outside every eligible pool, reserved or taken. */
  addressRefused: 102,
  /** A pool or address request (annotation, args) that cannot be honoured as given. */
  requestRejected: 104,
  /** CHECK found no allocation, or one that differs from prevResult. */
  checkFailed: 103,
  /**
   * The API server did not accept our credentials (HTTP 401), its authorizer (RBAC) denied the
   * request (403), or TLS failed (its certificate not trusted, or our own material unusable).
   */
  authFailed: 105,
  /**
   * An API failure that is not transient: a request the API server rejected as invalid (HTTP
   * 422/400) that validation did not catch, or a 2xx answer that is not the API's JSON (a
   * proxy's login page: core's DecodeError, naming the path).
   */
  apiRejected: 106,
  /**
   * An admission policy (ValidatingAdmissionPolicy, or a webhook) denied the write: the details
   * carry its message whole — which node, block, pool or field, and why.
   */
  admissionDenied: 107,
  internal: 999,
} as const;

/** A failure reported to the runtime as `{cniVersion, code, msg, details}` on stdout. */
export class CniError extends Error {
  override readonly name = 'CniError';
  /** CNI error code (see {@link CniCode}). */
  readonly code: number;
  /** Longer explanation; goes to the error object's `details`. */
  readonly details: string;

  constructor(code: number, msg: string, details = '', options?: ErrorOptions) {
    super(msg, options);
    this.code = code;
    this.details = details;
  }
}

/** Type guard for {@link CniError}. */
export function isCniError(e: unknown): e is CniError {
  return e instanceof Error && e.name === 'CniError' && typeof (e as CniError).code === 'number';
}

/** The error document printed on stdout (SPEC.md §6, "Error"). */
export interface CniErrorDocument {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

/** Shapes any thrown value into the error document; non-CNI errors become code 999. */
export function toErrorDocument(e: unknown, cniVersion: string): CniErrorDocument {
  if (isCniError(e)) {
    return { cniVersion, code: e.code, msg: e.message, ...(e.details ? { details: cut(e.details) } : {}) };
  }
  const msg = e instanceof Error ? e.message : String(e);
  return { cniVersion, code: CniCode.internal, msg: 'internal error', details: cut(msg) };
}

/**
 * At most MAX_MESSAGE_CHARS (4 KiB) of `details` reach the runtime (the full text is in the log
 * line): the kubelet copies the error into the pod's events on every retry, and a message can
 * quote a hostile annotation (a 200 KB pool name was echoed whole into each event). Shaped by
 * core's boundMessage, as the agent shapes its answers: echoed values and then the middle go,
 * never the part that names the field, node, pool or policy.
 */
export const MAX_DETAILS = MAX_MESSAGE_CHARS;

function cut(details: string): string {
  return boundMessage(details, MAX_DETAILS);
}

/** CNI code and message per node IPAM error kind (docs/design-plugin.md §Errors): both paths use it. */
const KIND_ERRORS: Readonly<Record<NodeIpamErrorKind, readonly [number, string]>> = {
  notReady: [CniCode.tryAgainLater, 'node agent not ready'],
  unavailable: [CniCode.tryAgainLater, 'datastore unreachable'],
  timeout: [CniCode.tryAgainLater, 'time budget exceeded'],
  auth: [CniCode.authFailed, 'API server did not accept our credentials or TLS'],
  forbidden: [CniCode.authFailed, 'API server denied permission (RBAC)'],
  admission: [CniCode.admissionDenied, 'admission policy denied the write'],
  apiRejected: [CniCode.apiRejected, 'API server rejected the request'],
  badRequest: [CniCode.internal, 'node agent refused the request'],
  misconfigured: [CniCode.invalidConfig, 'node name mismatch'],
  internal: [CniCode.internal, 'internal error'],
};

/**
 * The CniError of a failure of `kind` (its code and message from the table above), the refusal's
 * text as `details`.
 * @param code overrides the kind's code (STATUS answers 50 for an agent that cannot serve)
 */
export function errorOfKind(kind: NodeIpamErrorKind, details: string, code?: number): CniError {
  const [kindCode, msg] = KIND_ERRORS[kind];
  return new CniError(code ?? kindCode, msg, details);
}
