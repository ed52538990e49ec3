/**
 * What the CNI layer logs through (core/cni's dispatcher and commands): an injected logger, so the
 * plugin's executable writes JSON lines to the netconf's `logFile` and stderr
 * (ipam-plugin/host/log.ts) and the node agent, serving the same call in-process, writes them
 * through its own logger and the call's captured stderr. Types only: nothing here does I/O.
 */

export type Level = 'error' | 'warn' | 'info' | 'debug';

/** Where text goes (stdout, stderr): whole strings, in order. */
export interface Sink {
  write(text: string): unknown;
}

export interface Logger {
  log(level: Level, msg: string, fields?: Readonly<Record<string, unknown>>): void;
  /** Adds fields to every later line (e.g. containerID once known). */
  bind(fields: Readonly<Record<string, unknown>>): void;
  close(): void;
}

/** What a call's logger is made from (the netconf's fields and the call's stderr). */
export interface LoggerOptions {
  /** The call's stderr: lines at `stderrLevel` and above go there. */
  readonly stderr: Sink;
  /** netconf `ipam.logFile`: absolute path, absent for none. */
  readonly file?: string;
  /** netconf `ipam.logLevel`: the file's threshold. Default `info`. */
  readonly level?: Level;
  /** Default `warn`. */
  readonly stderrLevel?: Level;
  readonly now?: () => Date;
}

/** Makes a call's logger (the plugin: ipam-plugin/host/log.ts createLogger). */
export type LoggerFactory = (o: LoggerOptions) => Logger;
