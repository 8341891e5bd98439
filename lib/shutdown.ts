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
 * Runs `stop` once on SIGINT/SIGTERM (or when the parent of `exitWithParent` dies). The same
 * signal a second time exits at once: an operator who presses Ctrl-C twice means it. A
 * different one does not: Ctrl-C in `npm start` reaches each child as SIGINT from the
 * terminal and then as SIGTERM from the supervisor, and the worker must go on draining.
 */
export function onShutdown(stop: (signal: string) => Promise<void>, log: (msg: string) => void): void {
  let first: NodeJS.Signals | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (first === signal) {
      log(`${signal} again: exiting now`);
      process.exit(130);
    }
    if (first) {
      log(`${signal} while stopping on ${first}: still draining (send ${first} again to exit now)`);
      return;
    }
    first = signal;
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
