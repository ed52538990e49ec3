/**
 * CNI-facing errors: every failure the plugin reports carries a CNI error code.
 *
 * Codes (SPEC.md §6, "Error"): 1 incompatible version, 2 unsupported field,
 * 3 unknown container, 4 invalid environment variables, 5 I/O failure, 6 undecodable content,
 * 7 invalid network config, 11 try again later, 50/51 STATUS unavailability; 100+ are
 * plugin-specific (105 credentials/TLS refused, 106 request rejected as invalid or answer not JSON); 999 is the Go library's "internal error", reused for unexpected failures.
 * Loads nothing of core: the agent path's start-up evaluates it (docs/design-plugin.md §Thin client).
 */

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
  /** The API server refused our credentials (HTTP 401/403) or its TLS certificate is not trusted. */
  authFailed: 105,
  /**
   * An API failure that is not transient: a request the API server rejected as invalid (HTTP
   * 422/400) that validation did not catch, or a 2xx answer that is not the API's JSON (a
   * proxy's login page: core's DecodeError, naming the path).
   */
  apiRejected: 106,
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
 * At most 2,000 characters of `details` reach the runtime (the full text is in the log line):
 * the kubelet copies the error into the pod's events on every retry, and a message can quote a
 * hostile annotation (a 200 KB pool name was echoed whole into each event).
 */
export const MAX_DETAILS = 2_000;

function cut(details: string): string {
  return details.length <= MAX_DETAILS
    ? details
    : `${details.slice(0, MAX_DETAILS)}… (${details.length - MAX_DETAILS} more characters in the plugin's log)`;
}
