/**
 * Runs `stop` once on SIGINT/SIGTERM. A second signal exits at once: an operator who
 * presses Ctrl-C twice means it.
 */
export function onShutdown(stop: (signal: string) => Promise<void>, log: (msg: string) => void): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    stopping = true;
    stop(signal).then(() => process.exit(0), (err: Error) => {
      log(`shutdown failed: ${err.message}`);
      process.exit(1);
    });
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  // Started by `npm start` with an IPC channel: if that parent dies, even by SIGKILL, the
  // channel closes and this process stops instead of living on as an orphan.
  if (process.send) process.on('disconnect', () => handler('SIGTERM'));
}
