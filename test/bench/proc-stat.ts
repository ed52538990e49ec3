/**
 * A process's CPU from /proc/<pid>/stat and its memory from /proc/<pid>/status (man 5 proc), for
 * the benchmarks that measure the processes they start or a cluster's daemons.
 */
import { readFileSync } from 'node:fs';

/** /proc/<pid>/stat times are in clock ticks; Linux's USER_HZ is 100 on every platform it runs on here. */
export const TICKS_PER_S = 100;

/** The fields of /proc/<pid>/stat the benchmarks use; times in clock ticks. */
export interface ProcStat {
  readonly pid: number;
  /** The executable's name, at most 15 characters (`comm`). */
  readonly comm: string;
  readonly ppid: number;
  /** Ticks since boot at the start: with the PID, names the process. */
  readonly start: number;
  /** utime + stime: the process's own CPU. */
  readonly ticks: number;
  /** cutime + cstime: its children's that it has waited for. */
  readonly childTicks: number;
}

/** Parses /proc/<pid>/stat (man 5 proc); undefined for text that is not one. */
export function parseStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')'); // the name may hold spaces and parentheses
  if (open < 0 || close < open) return undefined;
  const f = text.slice(close + 2).split(' '); // f[0] is field 3 (state): field n is f[n - 3]
  const n = (field: number): number => Number(f[field - 3]);
  const stat = {
    pid: Number(text.slice(0, open)),
    comm: text.slice(open + 1, close),
    ppid: n(4),
    start: n(22),
    ticks: n(14) + n(15),
    childTicks: n(16) + n(17),
  };
  return Object.values(stat).some((v) => typeof v === 'number' && !Number.isFinite(v)) ? undefined : stat;
}

/** CPU seconds (user + system) process `pid` has used so far; NaN when it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    return (parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.ticks ?? NaN) / TICKS_PER_S;
  } catch {
    return NaN;
  }
}

/** Resident memory of process `pid` now (VmRSS) and at its peak (VmHWM), MiB. @throws Error when it is gone */
export function procStatus(pid: number): { rssMiB: number; peakMiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssMiB: kb('VmRSS') / 1024, peakMiB: kb('VmHWM') / 1024 };
}
