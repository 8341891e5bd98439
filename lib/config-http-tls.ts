/** `TLS_CERT_FILE` and `TLS_KEY_FILE`, read for lib/config.ts (the only reader of the environment). */
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError } from './errors.js';

/** The API's own certificate chain and private key (PEM), read once at start. */
export interface HttpTls {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
}

const PEM = /-----BEGIN [A-Z0-9 ]+-----/;

function pem(name: string, file: string, what: string): Buffer {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (err) {
    throw new ConfigError(`${name}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (!PEM.test(buf.toString('latin1'))) throw new ConfigError(`${name}: ${file} is not PEM (expected ${what})`);
  return buf;
}

/**
 * Both or neither: a certificate without its key (or the reverse) is a half-made deployment that
 * would otherwise start speaking plain HTTP where the operator meant HTTPS. The pair is checked
 * here, so a key of another certificate stops the start naming both variables.
 */
export function httpTlsFrom(certFile: string | undefined, keyFile: string | undefined): HttpTls | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined) throw new ConfigError('TLS_KEY_FILE is set without TLS_CERT_FILE: set both (PEM files) or neither');
  if (keyFile === undefined) throw new ConfigError('TLS_CERT_FILE is set without TLS_KEY_FILE: set both (PEM files) or neither');
  const tls = {
    certFile,
    keyFile,
    cert: pem('TLS_CERT_FILE', certFile, 'a certificate chain'),
    key: pem('TLS_KEY_FILE', keyFile, 'a private key'),
  };
  try {
    createSecureContext({ cert: tls.cert, key: tls.key });
  } catch (err) {
    throw new ConfigError(`TLS_CERT_FILE and TLS_KEY_FILE are not a usable pair: ${(err as Error).message}`);
  }
  return tls;
}
