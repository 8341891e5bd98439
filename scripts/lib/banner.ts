/**
 * The Postgres line of `npm start`'s banner. A newcomer's own service needs the stack's
 * database URL (the embedded one's port changes at every start), but a password does not
 * belong in a terminal or a CI log that records it: it is masked unless the operator sets
 * `SHOW_DATABASE_PASSWORD=1`. Where the data lives is named too, so a reset is `rm -rf` of a
 * known folder, not a search.
 */

/** Whether the operator asked for the password in clear (`SHOW_DATABASE_PASSWORD=1` or `true`). */
export function showDatabasePassword(env: NodeJS.ProcessEnv): boolean {
  return ['1', 'true'].includes((env.SHOW_DATABASE_PASSWORD ?? '').trim().toLowerCase());
}

/** The URL with its password replaced by `***` (an unparseable URL is not printed at all). */
export function maskDatabaseUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(DATABASE_URL is set but is not a URL)';
  }
  if (u.password) u.password = '***';
  return u.toString();
}

export function postgresBannerLine(o: {
  url: string;
  /** The embedded cluster's data folder (relative to the checkout when inside it); null for DATABASE_URL. */
  dataDir: string | null;
  showPassword: boolean;
}): string {
  const url = o.showPassword ? o.url : maskDatabaseUrl(o.url);
  const hasPassword = URL.canParse(o.url) && new URL(o.url).password !== '';
  const where = o.dataDir ? `embedded, data in ${o.dataDir}` : 'DATABASE_URL';
  const hint = hasPassword && !o.showPassword ? '; SHOW_DATABASE_PASSWORD=1 prints the password' : '';
  return `  Postgres         ${url}  (${where}${hint})`;
}
