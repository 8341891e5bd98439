// Per-process CPU seconds from /proc/<pid>/stat (utime + stime, plus cutime + cstime: the
// children a process has reaped, so Postgres backends that exited still count), summed over a
// process and its live descendants. Linux only; elsewhere every figure is null.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

let ticks: number | undefined;
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

interface Stat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime, in ticks. */
  cpu: number;
  /** utime + stime only. */
  own: number;
}

function readStat(pid: number): Stat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may contain spaces: split after the last ')'.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state): field n is f[n - 3].
    const own = Number(f[11]) + Number(f[12]);
    return { pid, ppid: Number(f[1]), own, cpu: own + Number(f[13]) + Number(f[14]) };
  } catch {
    return null;
  }
}

function allStats(): Stat[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  return names.filter((n) => /^\d+$/.test(n)).flatMap((n) => readStat(Number(n)) ?? []);
}

/**
 * CPU seconds of each named process tree, at this moment. Names listed in `selfOnly` count
 * the process alone (the bench process is the parent of every other one).
 */
export function cpuSnapshot(roots: Record<string, number | undefined>, selfOnly: string[] = []): Record<string, number | null> {
  const stats = allStats();
  const kids = new Map<number, Stat[]>();
  for (const s of stats) kids.set(s.ppid, [...(kids.get(s.ppid) ?? []), s]);
  const byPid = new Map(stats.map((s) => [s.pid, s]));
  const out: Record<string, number | null> = {};
  for (const [name, pid] of Object.entries(roots)) {
    const root = pid === undefined ? undefined : byPid.get(pid);
    if (!root) {
      out[name] = null;
      continue;
    }
    if (selfOnly.includes(name)) {
      out[name] = root.own / clockTicks();
      continue;
    }
    let total = 0;
    const stack = [root];
    while (stack.length) {
      const s = stack.pop()!;
      total += s.cpu;
      stack.push(...(kids.get(s.pid) ?? []));
    }
    out[name] = total / clockTicks();
  }
  return out;
}

/** after - before per name; null where either side is unknown. */
export function cpuDelta(before: Record<string, number | null>, after: Record<string, number | null>): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  for (const k of Object.keys(after)) {
    const a = after[k];
    const b = before[k];
    out[k] = a === null || a === undefined || b === null || b === undefined ? null : a - b;
  }
  return out;
}

/**
 * The process listening on a local TCP port (found through /proc/net/tcp{,6} and the socket
 * inodes in /proc/<pid>/fd). Needs permission to read the other process's fd table (same user
 * or root); undefined when it cannot be found.
 */
export function pidListeningOn(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const localPort = parseInt(f[1]!.split(':')[1] ?? '', 16);
      if (localPort === port && f[3] === '0A') inodes.add(f[9]!); // 0A = LISTEN
    }
  }
  if (inodes.size === 0) return undefined;
  for (const n of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${n}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${n}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return Number(n);
      } catch {
        // fd closed meanwhile
      }
    }
  }
  return undefined;
}

/** The parent of a process (for a Postgres backend: the postmaster). */
export function parentPid(pid: number): number | undefined {
  return readStat(pid)?.ppid;
}
