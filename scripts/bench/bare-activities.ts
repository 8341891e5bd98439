// The baseline's activity: no I/O at all. With `holdMs` it stays in flight that long (the
// memory baseline holds 1,000 of them at once), and it counts how many are in flight.

export interface BareCounter {
  inFlight: number;
  peak: number;
  completed: number;
}

export function createBareActivities(counter: BareCounter = { inFlight: 0, peak: 0, completed: 0 }) {
  return {
    async bareActivity(holdMs: number): Promise<void> {
      counter.inFlight++;
      counter.peak = Math.max(counter.peak, counter.inFlight);
      try {
        if (holdMs > 0) await new Promise((r) => setTimeout(r, holdMs));
      } finally {
        counter.inFlight--;
        counter.completed++;
      }
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
