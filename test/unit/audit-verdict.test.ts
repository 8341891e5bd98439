// The supply-chain step's decision (issue 39 §6) on canned `npm audit --omit=dev --json` outputs
// (report version 2, npm 7-10): fail on high or critical, pass on less, pass without a claim when
// the registry could not answer, fail when npm could not audit for a reason of the project's.
import { describe, expect, it } from 'vitest';
import { auditVerdict } from '../../scripts/lib/audit-verdict.js';

const metadata = (v: Partial<Record<'info' | 'low' | 'moderate' | 'high' | 'critical', number>>) => ({
  vulnerabilities: { info: 0, low: 0, moderate: 0, high: 0, critical: 0, ...v, total: Object.values(v).reduce((a, b) => a + b, 0) },
  dependencies: { prod: 187, dev: 402, optional: 12, peer: 0, peerOptional: 0, total: 589 },
});

const CLEAN = JSON.stringify({ auditReportVersion: 2, vulnerabilities: {}, metadata: metadata({}) });

const MODERATE = JSON.stringify({
  auditReportVersion: 2,
  vulnerabilities: {
    'fast-redact': {
      name: 'fast-redact',
      severity: 'moderate',
      isDirect: false,
      via: [
        { source: 1, name: 'fast-redact', title: 'prototype pollution', url: 'https://github.com/advisories/GHSA-x', severity: 'moderate' },
      ],
      effects: ['pino'],
      range: '<=3.5.0',
      nodes: ['node_modules/fast-redact'],
      fixAvailable: true,
    },
  },
  metadata: metadata({ moderate: 1, low: 2 }),
});

const CRITICAL = JSON.stringify({
  auditReportVersion: 2,
  vulnerabilities: {
    minimist: {
      name: 'minimist',
      severity: 'critical',
      isDirect: false,
      via: [
        {
          source: 1097678,
          name: 'minimist',
          dependency: 'minimist',
          title: 'Prototype Pollution in minimist',
          url: 'https://github.com/advisories/GHSA-xvch-5gv4-984h',
          severity: 'critical',
          range: '<1.2.6',
        },
      ],
      effects: ['mkdirp'],
      range: '<=1.2.5',
      nodes: ['node_modules/minimist'],
      fixAvailable: true,
    },
    mkdirp: {
      name: 'mkdirp',
      severity: 'high',
      isDirect: true,
      via: ['minimist'],
      effects: [],
      range: '0.4.1 - 0.5.1',
      fixAvailable: false,
    },
  },
  metadata: metadata({ critical: 1, high: 1, moderate: 3 }),
});

const error = (code: string, summary: string) => JSON.stringify({ error: { code, summary, detail: '' } });

/** What npm 11.19 printed on this machine (the registry answers the bulk advisory endpoint 405). */
const NPM11_405 = JSON.stringify({
  message: '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
  method: 'POST',
  uri: 'https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
  headers: { allow: ['GET,HEAD'], 'content-length': ['0'], 'x-fetch-attempts': ['1'] },
  statusCode: 405,
  body: '',
  error: { summary: '', detail: '' },
});

describe('the npm audit step', () => {
  it('passes with no advisory, or only moderate and low ones, and says what it found', () => {
    const clean = auditVerdict({ stdout: CLEAN });
    expect(clean).toMatchObject({ outcome: 'clean', exitCode: 0 });
    expect(clean.lines[0]).toBe(
      'npm audit (runtime dependencies, 187 packages): no high or critical advisory (0 critical, 0 high, 0 moderate, 0 low)',
    );
    expect(auditVerdict({ stdout: MODERATE })).toMatchObject({ outcome: 'clean', exitCode: 0 });
    expect(auditVerdict({ stdout: MODERATE }).lines[0]).toContain('1 moderate, 2 low');
  });

  it('fails on a high or critical advisory in a runtime dependency, naming each package and advisory', () => {
    const v = auditVerdict({ stdout: CRITICAL });
    expect(v).toMatchObject({ outcome: 'vulnerable', exitCode: 1 });
    expect(v.lines[0]).toBe(
      'npm audit (runtime dependencies): 1 critical, 1 high, 3 moderate, 0 low; high or critical advisories in 2 package(s):',
    );
    expect(v.lines[1]).toBe(
      '  minimist (critical, fix available): Prototype Pollution in minimist (https://github.com/advisories/GHSA-xvch-5gv4-984h)',
    );
    expect(v.lines[2]).toBe('  mkdirp (high, direct): through minimist');
  });

  it('passes without claiming a result when the registry could not answer', () => {
    for (const stdout of [
      NPM11_405,
      error('E405', '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk'),
      error('ENOTFOUND', 'request to https://registry.npmjs.org/-/npm/v1/security/advisories/bulk failed, reason: getaddrinfo ENOTFOUND'),
      error('ENOAUDIT', 'Your configured registry (https://mirror.example/) does not support audit requests.'),
      error('ETIMEDOUT', 'network timeout'),
    ]) {
      const v = auditVerdict({ stdout });
      expect(v, stdout).toMatchObject({ outcome: 'unavailable', exitCode: 0 });
      expect(v.lines[0]).toMatch(/^npm audit: the registry could not answer \(.+\); no result, so none is claimed/);
      expect(v.lines.join('\n')).not.toMatch(/no high or critical/);
    }
    expect(auditVerdict({ stdout: '', failure: 'no answer within 120 s' })).toMatchObject({ outcome: 'unavailable', exitCode: 0 });
    expect(auditVerdict({ stdout: '', stderr: 'npm ERR! code ECONNREFUSED\nnpm ERR! errno ECONNREFUSED' })).toMatchObject({
      outcome: 'unavailable',
      exitCode: 0,
    });
  });

  it("fails when npm could not audit for a reason of the project's, or printed no report", () => {
    const noLock = auditVerdict({ stdout: error('ENOLOCK', 'This command requires an existing lockfile.') });
    expect(noLock).toMatchObject({ outcome: 'error', exitCode: 1 });
    expect(noLock.lines[0]).toContain('ENOLOCK');
    expect(auditVerdict({ stdout: JSON.stringify({ error: { summary: '', detail: '' } }) })).toMatchObject({
      outcome: 'error',
      exitCode: 1,
    });
    expect(auditVerdict({ stdout: '', stderr: 'npm could not run: spawn npm ENOENT' })).toMatchObject({ outcome: 'error', exitCode: 1 });
    expect(auditVerdict({ stdout: 'found 0 vulnerabilities' })).toMatchObject({ outcome: 'error', exitCode: 1 });
    expect(auditVerdict({ stdout: JSON.stringify({ auditReportVersion: 2 }) })).toMatchObject({ outcome: 'error', exitCode: 1 });
  });
});
