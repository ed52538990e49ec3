/**
 * The route command (iproute2's `ip`) could not be run, timed out, or printed something that is
 * not the JSON it documents. Nothing was learned about the kernel's routes: the reconciler
 * changes nothing in that pass and tries again on the next one.
 */
import { CommandError } from '../command.ts';

export class RouteCommandError extends CommandError {
  override readonly name = 'RouteCommandError';
}

/** True when `error` is a {@link RouteCommandError} (also across bundles: compares the stable `name`). */
export function isRouteCommandError(error: unknown): error is RouteCommandError {
  return error instanceof Error && error.name === 'RouteCommandError';
}
