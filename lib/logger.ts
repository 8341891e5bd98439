import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs, UTC timestamps. Redaction is a safety net, not the policy: code
 * never logs raw idempotency keys, secrets or full input in the first place.
 */
export function createLogger(name: string, level = 'info', destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["idempotency-key"]',
        'req.headers["webhook-signature"]',
        'headers.authorization',
        'headers.cookie',
        'idempotencyKey',
        'apiKey',
        'secret',
        'secrets',
        'input',
        'body',
        'text',
        '*.idempotencyKey',
        '*.apiKey',
        '*.secret',
        '*.input',
        '*.text',
      ],
      censor: '[redacted]',
    },
  };
  // A destination only where a test reads the lines; processes log to stdout.
  return destination ? pino(options, destination) : pino(options);
}
