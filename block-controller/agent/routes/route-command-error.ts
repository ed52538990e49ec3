/**
 * The route command (iproute2's `ip`) could not be run, timed out, or printed something that is
 * not the JSON it documents. Nothing was learned about the kernel's routes: the reconciler
 * changes nothing in that pass and tries again on the next one.
 */
export class RouteCommandError extends Error {
  override readonly name = 'RouteCommandError';
  /** The argv that failed, e.g. ["ip", "-j", "route", "show", ...]. */
  readonly argv: readonly string[];

  constructor(message: string, argv: readonly string[], options?: { cause?: unknown }) {
    super(message, options);
    this.argv = argv;
  }
}

/** True when `error` is a {@link RouteCommandError} (also across bundles: compares the stable `name`). */
export function isRouteCommandError(error: unknown): error is RouteCommandError {
  return error instanceof Error && error.name === 'RouteCommandError';
}
