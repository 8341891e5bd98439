import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const FIXTURE = path.join(import.meta.dirname, '../fixtures/shutdown/drain.ts');

function start(): { child: ChildProcess; saw: (text: string) => Promise<void>; exit: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const waiters: Array<() => void> = [];
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  });
  const saw = (text: string) =>
    new Promise<void>((resolve) => {
      const check = () => (out.includes(text) ? resolve() : waiters.push(check));
      check();
    });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, saw, exit };
}

describe('onShutdown', () => {
  it("keeps draining when npm start's SIGTERM follows the terminal's SIGINT", async () => {
    const p = start();
    await p.saw('ready');
    p.child.kill('SIGINT');
    await p.saw('stopping on SIGINT');
    p.child.kill('SIGTERM');
    await p.saw('SIGTERM while stopping on SIGINT: still draining');
    p.child.stdin!.write('drained\n');
    expect(await p.exit).toBe(0);
  }, 30_000);

  it('exits at once on the same signal twice (Ctrl-C pressed twice)', async () => {
    const p = start();
    await p.saw('ready');
    p.child.kill('SIGINT');
    await p.saw('stopping on SIGINT'); // two pending SIGINTs would be delivered as one
    p.child.kill('SIGINT');
    expect(await p.exit).toBe(130);
  }, 30_000);
});
