// Values that test/support/global-setup.ts provides to every test file (`inject('...')`).
export {};

declare module 'vitest' {
  export interface ProvidedContext {
    /** DATABASE_URL, or an embedded Postgres started for this run */
    databaseUrl: string;
    /** TEMPORAL_ADDRESS, or a headless in-memory dev server started for this run */
    temporalAddress: string;
    /** TEMPORAL_NAMESPACE or 'default' */
    temporalNamespace: string;
    /** the Temporal CLI binary used (or that could be used), null if none */
    temporalCliPath: string | null;
  }
}
