let stopHandler: ((signal: NodeJS.Signals) => void) | undefined;

/**
 * Started by `npm start` with an IPC channel: if that parent dies, even by SIGKILL, the
 * channel closes and this process stops instead of living on as an orphan. Call it first
 * thing in an entry point: the parent may die while the process is still starting up
 * (bundling workflows takes seconds), before `onShutdown` is registered.
 */
export function exitWithParent(): void {
  if (!process.send) return;
  process.on('disconnect', () => {
    if (stopHandler) stopHandler('SIGTERM');
    else process.exit(0);
  });
}

/**
 * Runs `stop` once on SIGINT/SIGTERM (or when the parent of `exitWithParent` dies). A second
 * signal exits at once: an operator who presses Ctrl-C twice means it.
 */
export function onShutdown(stop: (signal: string) => Promise<void>, log: (msg: string) => void): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    stopping = true;
    stop(signal).then(
      () => process.exit(0),
      (err: Error) => {
        log(`shutdown failed: ${err.message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  stopHandler = handler;
  if (process.send && !process.connected) handler('SIGTERM');
}
