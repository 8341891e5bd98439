/**
 * What `npm audit --omit=dev --json` said, as a verdict for CI (issue 39 §6): fail on a high or
 * critical advisory in a runtime dependency; pass, saying so, when the registry could not answer
 * (no network, a mirror without the audit endpoint: the review got a 405), without claiming the
 * dependencies are clean; fail on anything else that kept npm from auditing (no lockfile), since
 * that is the project's to fix. Pure: `scripts/audit.ts` runs npm, the unit test feeds canned output.
 */

export type Severity = 'info' | 'low' | 'moderate' | 'high' | 'critical';

export interface AuditVerdict {
  outcome: 'clean' | 'vulnerable' | 'unavailable' | 'error';
  /** The step's exit code: 0 for clean and unavailable, 1 otherwise. */
  exitCode: 0 | 1;
  /** One line for the CI log (and more lines naming each offending package). */
  lines: string[];
}

/** Severities that fail the step. */
const FAILING: readonly Severity[] = ['high', 'critical'];

/**
 * npm's error codes when the registry did not answer the audit: an HTTP status (`E405`, `E503`),
 * a network failure, or a registry without the endpoint (`ENOAUDIT`).
 */
const REGISTRY_UNAVAILABLE =
  /^(E\d{3}|ENOAUDIT|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|ENETUNREACH|EHOSTUNREACH|ECONNABORTED|ERR_SOCKET_TIMEOUT|EPROTO|CERT_|UNABLE_TO_)/;
/** The same codes inside npm's text (stderr) when it printed no JSON. */
const REGISTRY_UNAVAILABLE_TEXT =
  /\b(E\d{3}|ENOAUDIT|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|ENETUNREACH|EHOSTUNREACH|ECONNABORTED)\b/;

interface AuditJson {
  error?: { code?: string; summary?: string; detail?: string };
  /** npm 10-11: the registry's HTTP answer to the audit request, beside an empty `error`. */
  statusCode?: number;
  message?: string;
  vulnerabilities?: Record<string, { name?: string; severity?: Severity; isDirect?: boolean; via?: unknown[]; fixAvailable?: unknown }>;
  metadata?: { vulnerabilities?: Partial<Record<Severity | 'total', number>>; dependencies?: { prod?: number; total?: number } };
}

const oneLine = (s: string, max = 200) => s.replace(/\s+/g, ' ').trim().slice(0, max);

/** The title of each advisory a vulnerable package carries directly (`via` also lists other packages by name). */
function advisories(via: unknown[] | undefined): string[] {
  return (via ?? []).flatMap((v) =>
    typeof v === 'object' && v !== null && typeof (v as { title?: unknown }).title === 'string'
      ? [`${(v as { title: string }).title}${typeof (v as { url?: unknown }).url === 'string' ? ` (${(v as { url: string }).url})` : ''}`]
      : typeof v === 'string'
        ? [`through ${v}`]
        : [],
  );
}

/**
 * `stdout` / `stderr`: what `npm audit --json` printed (whatever its exit code); `failure`: why
 * it gave no answer at all (npm not runnable, no answer in time): the registry's silence.
 */
export function auditVerdict(run: { stdout: string; stderr?: string; failure?: string }): AuditVerdict {
  const { stdout, stderr = '', failure } = run;
  const unavailable = (why: string): AuditVerdict => ({
    outcome: 'unavailable',
    exitCode: 0,
    lines: [`npm audit: the registry could not answer (${oneLine(why)}); no result, so none is claimed: the step passes without one`],
  });
  if (failure !== undefined) return unavailable(failure);
  let json: AuditJson;
  try {
    json = JSON.parse(stdout) as AuditJson;
  } catch {
    const said = stdout.trim() === '' ? stderr : stdout;
    const code = REGISTRY_UNAVAILABLE_TEXT.exec(said)?.[1];
    if (code) return unavailable(`${code}: ${oneLine(said, 120)}`);
    return { outcome: 'error', exitCode: 1, lines: [`npm audit gave no report: ${oneLine(said) || 'no output'}`] };
  }
  if (json.error) {
    const why = [json.error.code, json.error.summary, json.message].filter(Boolean).join(' ');
    // An HTTP status from the registry (npm 11 reports a 405 as statusCode + message, with an
    // empty error), or an error code of the network or the registry.
    if (typeof json.statusCode === 'number' || REGISTRY_UNAVAILABLE.test(json.error.code ?? '')) return unavailable(why);
    return {
      outcome: 'error',
      exitCode: 1,
      lines: [`npm audit could not audit the lockfile: ${oneLine(why || JSON.stringify(json.error))}`],
    };
  }
  const counts = json.metadata?.vulnerabilities;
  if (!counts)
    return {
      outcome: 'error',
      exitCode: 1,
      lines: ['npm audit: no metadata.vulnerabilities in its JSON (an npm without audit report v2?)'],
    };
  const n = (s: Severity) => counts[s] ?? 0;
  const summary = `${n('critical')} critical, ${n('high')} high, ${n('moderate')} moderate, ${n('low')} low`;
  const packages = json.metadata?.dependencies?.prod;
  const failing = Object.entries(json.vulnerabilities ?? {}).filter(([, v]) => v.severity && FAILING.includes(v.severity));
  if (failing.length === 0 && FAILING.every((s) => n(s) === 0)) {
    return {
      outcome: 'clean',
      exitCode: 0,
      lines: [
        `npm audit (runtime dependencies${packages !== undefined ? `, ${packages} packages` : ''}): no high or critical advisory (${summary})`,
      ],
    };
  }
  return {
    outcome: 'vulnerable',
    exitCode: 1,
    lines: [
      `npm audit (runtime dependencies): ${summary}; high or critical advisories in ${failing.length} package(s):`,
      ...failing.map(
        ([name, v]) =>
          `  ${name} (${v.severity}${v.isDirect ? ', direct' : ''}${v.fixAvailable ? ', fix available' : ''}): ${advisories(v.via).join('; ') || 'see npm audit'}`,
      ),
    ],
  };
}
