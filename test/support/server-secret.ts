/**
 * Every test file's process derives job IDs and key hashes with one known test secret
 * (`lib/secret.ts`), as an API process and its workers share theirs; the processes a test
 * spawns (workers, `npm start`, the packed package's consumer) inherit it from the environment.
 * Not a real secret.
 */
import { SECRET_ENV, serverSecretFrom, useServerSecret } from '../../lib/secret.js';

export const TEST_SERVER_SECRET = 'durable-jobs-test-server-secret-not-a-real-one';

process.env[SECRET_ENV] ||= TEST_SERVER_SECRET;
useServerSecret(serverSecretFrom(process.env[SECRET_ENV], undefined)!);
