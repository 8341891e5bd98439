// The operator console: a thin client of the admin APIs of the process that serves it.
// Safety: every datum is rendered with textContent / DOM APIs (never innerHTML). The pasted
// admin key is sent once, as a Bearer header, to open a session (POST /v1/admin/session) and
// then forgotten: it is kept in no variable, no storage, and never rendered. The session is an
// HttpOnly, SameSite=Strict cookie no script can read; every change also carries the
// x-durable-jobs-console header, which another site's form cannot send. The role the session
// has (whoami) hides the actions it may not take (CSS: [data-needs]); the API refuses them anyway.
// The Content-Security-Policy allows no inline script or style.

const CONSOLE_HEADER = 'x-durable-jobs-console';
export const $ = (sel) => document.querySelector(sel);
const STOPPED = new Set(['completed', 'stopped', 'halted']);
const FINISHED = new Set(['succeeded', 'dead_lettered', 'cancelled']);

let me = null; // { operator, keyId, role, tenants, temporalUi }
const timers = new Map(); // name → interval id, cleared on page change or sign-out

// ---------- DOM helpers (text only) ----------

/** el('td', { class: 'x' }, 'text', child): strings become text nodes, never markup. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}
export const clear = (node) => {
  node.replaceChildren();
  return node;
};
export const text = (sel, value) => {
  $(sel).textContent = value ?? '';
};
export const utc = (iso) =>
  iso
    ? String(iso)
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z')
    : '';
/** HH:MM:SS.mmmZ: one UTC time base, to the millisecond, for ordering the timeline. */
export const clock = (iso) => (iso ? String(iso).slice(11) : '');
export const json = (v) => (v === undefined ? '' : JSON.stringify(v, null, 2));
export const badge = (s) => el('span', { class: `badge s-${s}` }, s);
export const ms = (n) => (n === undefined || n === null ? '' : n < 1000 ? `${n} ms` : `${(n / 1000).toFixed(1)} s`);

/** A key/value table; values may be nodes or text. */
export function kv(table, rows) {
  clear(table);
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === '') continue;
    table.append(el('tr', {}, el('th', {}, k), el('td', {}, v)));
  }
}

/** A link only to http(s) URLs; anything else renders as text. */
export function externalLink(href, label) {
  if (!/^https?:\/\//.test(href)) return document.createTextNode(label);
  return el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, label);
}

export function problemText(err) {
  if (!(err instanceof ApiError)) return String(err?.message ?? err);
  const p = err.problem ?? {};
  const fields = Array.isArray(p.errors) ? ` (${p.errors.map((e) => `${e.path}: ${e.message}`).join('; ')})` : '';
  return `${err.status} ${p.title ?? 'error'}${p.detail ? `: ${p.detail}` : ''}${fields}`;
}
export function showError(sel, err) {
  text(sel, err ? problemText(err) : '');
}

// ---------- API ----------

class ApiError extends Error {
  constructor(status, problem) {
    super(`HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

// The API's base: the console is served at <base>/console, so a team that mounts durable-jobs
// under a prefix of its own Fastify app gets a console that calls that prefix.
const BASE = location.pathname.replace(/\/console\/?$/, '');

/** `key`: only to open the session; every other call goes through the session cookie. */
export async function api(method, path, body, key) {
  const headers = { accept: 'application/json', [CONSOLE_HEADER]: '1' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(BASE + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const raw = await res.text();
  let data;
  try {
    data = raw ? JSON.parse(raw) : undefined;
  } catch {
    data = undefined;
  }
  if (res.status === 401 && !key && me) signedOut('Your session ended; sign in again.');
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}
export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body ?? {});
export const qs = (form) => {
  const p = new URLSearchParams();
  for (const [k, v] of new FormData(form)) if (String(v).trim() !== '') p.set(k, String(v).trim());
  return p.toString();
};

// ---------- session ----------

/** Trades the key for a session (the key goes out once and is not kept), then shows the app. */
async function signIn(key) {
  await api('POST', '/v1/admin/session', {}, key);
  await resume();
}

/** Shows the app for the session the cookie holds (a reload keeps it until it times out). */
async function resume() {
  me = await api('GET', '/v1/admin/whoami');
  document.body.dataset.role = me.role ?? 'admin';
  text('#whoami', me.operator);
  text('#whoami-role', `${me.role ?? 'admin'}${Array.isArray(me.tenants) ? ` of ${me.tenants.join(', ')}` : ''}`);
  $('#sign-in').hidden = true;
  $('#app').hidden = false;
  $('#nav').hidden = false;
  $('#session').hidden = false;
  route();
}

/** Sign-out: the session ends on the server (the cookie alone would be worthless anyway). */
async function signOut() {
  await api('DELETE', '/v1/admin/session').catch(() => undefined);
  signedOut('');
}

function signedOut(message) {
  me = null;
  delete document.body.dataset.role;
  stopTimers();
  $('#app').hidden = true;
  $('#nav').hidden = true;
  $('#session').hidden = true;
  $('#sign-in').hidden = false;
  text('#sign-in-error', message);
}

export function stopTimers(except) {
  for (const [name, id] of timers)
    if (name !== except) {
      clearInterval(id);
      timers.delete(name);
    }
}
export function stopTimer(name) {
  clearInterval(timers.get(name));
  timers.delete(name);
}
export function every(name, msEvery, fn) {
  clearInterval(timers.get(name));
  timers.set(name, setInterval(fn, msEvery));
}

// ---------- routing: #page or #page/<id> ----------

const PAGES = { jobs: showJobsPage, 'dead-letters': showDeadLettersPage, health: showHealthPage, degradation: showDegradationPage };

/**
 * A page of its own module (console/<page>.js, loaded after this one by index.html): its
 * `<section id="page-NAME" class="page">` and nav link live in index.html; `show(arg)` runs
 * when #NAME or #NAME/<arg> is opened. Timers it starts with every() stop on a page change.
 */
export function registerPage(name, show) {
  PAGES[name] = show;
  // Shown now only if it is the page asked for (until its module loaded, route() showed Jobs).
  if (me && location.hash.replace(/^#/, '').split('/')[0] === name) route();
}

/** The signed-in operator: { operator, keyId, role, tenants, temporalUi }, or null. */
export const session = () => me;

function route() {
  if (!me) return;
  const [page, ...rest] = location.hash.replace(/^#/, '').split('/');
  const name = PAGES[page] ? page : 'jobs';
  const arg = rest.length ? decodeURIComponent(rest.join('/')) : undefined;
  stopTimers();
  for (const p of document.querySelectorAll('.page')) p.hidden = p.id !== `page-${name}`;
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.page === name);
  PAGES[name](arg);
}

// ---------- jobs ----------

let jobsListed = false;
async function showJobsPage(jobId) {
  if (!jobsListed) {
    jobsListed = true;
    await searchJobs();
  }
  if (jobId) await openJob(jobId);
}

// Keyset pages (GET /v1/admin/jobs): "Next page" sends the cursor with the filter the list was
// searched with, not the form's current contents (a cursor belongs to one filter).
const jobPages = { query: '', cursor: undefined, page: 1 };

async function searchJobs(next = false) {
  showError('#job-search-error');
  if (!next) Object.assign(jobPages, { query: qs($('#job-search')), cursor: undefined, page: 1 });
  try {
    const cursor = next ? `${jobPages.query ? '&' : ''}cursor=${encodeURIComponent(jobPages.cursor)}` : '';
    const r = await get(`/v1/admin/jobs?${jobPages.query}${cursor}`);
    if (next) jobPages.page += 1;
    jobPages.cursor = r.nextCursor;
    $('#job-next').hidden = !r.nextCursor;
    text('#job-page', `page ${jobPages.page}${r.nextCursor ? '' : ', the last'}`);
    const body = clear($('#job-results tbody'));
    for (const j of r.jobs) {
      body.append(
        el(
          'tr',
          {
            class: 'selectable',
            dataset: { jobId: j.jobId },
            onclick: () => {
              location.hash = `#jobs/${encodeURIComponent(j.jobId)}`;
            },
          },
          // A real link: keyboard users reach it, and it says the row opens the job.
          el('td', {}, el('a', { class: 'row-link', href: `#jobs/${encodeURIComponent(j.jobId)}` }, el('code', {}, j.jobId))),
          el('td', {}, j.tenantId),
          el('td', {}, j.type),
          el('td', {}, badge(j.status), j.status === 'scheduled' ? ` for ${utc(j.scheduledFor)}` : ''),
          el('td', {}, j.priority),
          el('td', {}, String(j.attempts)),
          el('td', {}, utc(j.createdAt)),
        ),
      );
    }
    if (r.jobs.length === 0) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'no job matches')));
  } catch (err) {
    showError('#job-search-error', err);
  }
}

async function openJob(jobId) {
  $('#job-detail').hidden = false;
  text('#job-detail-id', jobId);
  await Promise.all([renderJob(jobId), renderTimeline(jobId)]);
}

async function renderJob(jobId) {
  let j;
  try {
    j = await get(`/v1/admin/jobs/${encodeURIComponent(jobId)}`);
  } catch (err) {
    showError('#job-search-error', err);
    return;
  }
  const links = clear($('#job-links'));
  if (me.temporalUi) {
    const ui = `${me.temporalUi.url}/namespaces/${encodeURIComponent(me.temporalUi.namespace)}/workflows/${encodeURIComponent(j.jobId)}`;
    links.append(externalLink(ui, 'Open the workflow in the Temporal Web UI'));
  } else links.append('no Temporal Web UI configured (TEMPORAL_UI_URL)');
  const jobLink = (id) => el('a', { href: `#jobs/${encodeURIComponent(id)}` }, id);
  kv($('#job-fields'), [
    ['status', badge(j.status)],
    ['stage', j.stage],
    ['next step', j.nextStep],
    ['tenant', j.tenantId],
    ['type', j.type],
    ['priority', j.priority],
    ['attempts', String(j.attempts)],
    ['reason', j.statusReason],
    [
      'progress',
      j.progress
        ? `${j.progress.done}${j.progress.total !== undefined ? ` of ${j.progress.total}` : ''}${j.progress.note ? `: ${j.progress.note}` : ''} (step ${j.progress.step}, ${utc(j.progress.at)})`
        : undefined,
    ],
    [
      'error',
      j.error ? `${j.error.errorClass}${j.error.statusCode ? ` (HTTP ${j.error.statusCode})` : ''}: ${j.error.message}` : undefined,
    ],
    ['next attempt', utc(j.nextAttemptAt)],
    ['scheduled for', utc(j.scheduledFor)],
    [
      'tags',
      j.tags
        ? Object.entries(j.tags)
            .map(([k, v]) => `${k}: ${v}`)
            .join(', ')
        : undefined,
    ],
    ['created', utc(j.createdAt)],
    ['first started', utc(j.firstStartedAt)],
    ['finished', utc(j.finishedAt)],
    ['queued', ms(j.queuedMs)],
    ['executing', ms(j.executionMs)],
    ['deferred since', utc(j.deferredSince)],
    ['notification', j.notification],
    ['upstream', j.upstream ? `${j.upstream}${j.upstreamReason ? `: ${j.upstreamReason}` : ''}` : undefined],
    ['replay of', j.replayOf ? jobLink(j.replayOf) : undefined],
    ['rerun of', j.rerunOf ? el('span', {}, jobLink(j.rerunOf), j.rerunFromStep ? ` from ${j.rerunFromStep}` : '') : undefined],
    ['replayed as', j.replayJobId ? jobLink(j.replayJobId) : undefined],
    ['dead letter', j.deadLetterId ? el('a', { href: `#dead-letters/${encodeURIComponent(j.deadLetterId)}` }, j.deadLetterId) : undefined],
  ]);
  // The job page's actions (console/job-actions.js) follow the job as it is shown.
  document.dispatchEvent(new window.CustomEvent('console:job', { detail: j }));
  $('#job-result').textContent =
    me?.role === 'viewer' ? '(results are not shown to viewers)' : j.result === undefined ? '(no result yet)' : json(j.result);
  // Live while unfinished: watch it run, retry, succeed.
  if (!FINISHED.has(j.status))
    every('job', 2000, async () => {
      await renderJob(jobId);
      await renderTimeline(jobId);
    });
  else {
    clearInterval(timers.get('job'));
    timers.delete('job');
  }
}

async function renderTimeline(jobId) {
  const verdict = $('#timeline-verdict');
  const events = clear($('#timeline-events tbody'));
  clear($('#timeline-timings'));
  let t;
  try {
    t = await get(`/v1/admin/jobs/${encodeURIComponent(jobId)}/timeline`);
  } catch (err) {
    const noRoute = err instanceof ApiError && err.status === 404 && /^no route/.test(err.problem?.detail ?? '');
    verdict.textContent = noRoute
      ? 'timeline unavailable (this API has no timeline endpoint yet)'
      : `timeline unavailable: ${problemText(err)}`;
    verdict.dataset.state = 'unavailable';
    return;
  }
  verdict.dataset.state = t.verdict?.condition ?? '';
  verdict.textContent = t.verdict ? `${t.verdict.words}${t.verdict.nextStep ? ` — next: ${t.verdict.nextStep}` : ''}` : '';
  const tm = t.timings ?? {};
  kv($('#timeline-timings'), [
    ['intake', ms(tm.intake?.executionMs)],
    ['claim (queue)', ms(tm.claim?.queueMs)],
    ['claim (deferred)', ms(tm.claim?.deferredMs)],
    [
      'side effects (queue / execution)',
      tm.sideEffects ? `${ms(tm.sideEffects.queueMs) || '–'} / ${ms(tm.sideEffects.executionMs) || '–'}` : undefined,
    ],
    [
      'completion (queue / execution)',
      tm.completion ? `${ms(tm.completion.queueMs) || '–'} / ${ms(tm.completion.executionMs) || '–'}` : undefined,
    ],
    ['duplicates', t.duplicates?.count ? String(t.duplicates.count) : undefined],
    ['replays', t.lineage?.replays?.length ? t.lineage.replays.map((r) => `${r.jobId} (${r.status})`).join(', ') : undefined],
    ['temporal', t.temporal ? [t.temporal.status, t.temporal.taskQueue, t.temporal.note].filter(Boolean).join(' · ') : undefined],
    // The job's trace (issue 40 §3), linked to the trace UI when TRACE_UI_URL is set.
    ['trace', t.trace ? (t.trace.url ? externalLink(t.trace.url, t.trace.traceId) : t.trace.traceId) : undefined],
  ]);
  text('#timeline-date', t.events?.length ? `UTC, from ${utc(t.events[0].at)}` : '');
  for (const e of t.events ?? []) {
    events.append(
      el(
        'tr',
        {},
        el('td', { class: 'nowrap', title: e.at }, clock(e.at)),
        el('td', {}, e.source),
        el('td', {}, e.kind ?? e.from ?? ''),
        el('td', {}, e.event),
        el('td', {}, e.detail ?? ''),
      ),
    );
  }
}

// ---------- dead letters ----------

const selected = new Set();
let replayId = null;
let dlListed = false;

async function showDeadLettersPage(id) {
  if (!dlListed) {
    dlListed = true;
    // The page opens on the clusters: what keeps failing, and where, before the single letters.
    await Promise.all([listClusters(), listDeadLetters()]);
  }
  if (id) await openDeadLetter(id);
  if (replayId) every('replay', 1000, renderProgress);
}

async function listDeadLetters() {
  showError('#dl-error');
  try {
    const r = await get(`/v1/dead-letters?${qs($('#dl-filter'))}`);
    const body = clear($('#dl-list tbody'));
    for (const d of r.deadLetters) {
      const box = el('input', {
        type: 'checkbox',
        'aria-label': `select ${d.id}`,
        'data-needs': 'operator',
        dataset: { id: d.id },
        onclick: (ev) => {
          ev.stopPropagation();
          if (ev.target.checked) selected.add(d.id);
          else selected.delete(d.id);
        },
      });
      box.checked = selected.has(d.id);
      body.append(
        el(
          'tr',
          {
            class: 'selectable',
            dataset: { id: d.id },
            onclick: () => {
              location.hash = `#dead-letters/${encodeURIComponent(d.id)}`;
            },
          },
          el('td', {}, box),
          el('td', {}, el('a', { class: 'row-link', href: `#dead-letters/${encodeURIComponent(d.id)}` }, el('code', {}, d.id))),
          el('td', {}, el('code', {}, d.jobId)),
          el('td', {}, d.tenantId),
          el('td', {}, d.jobType),
          el('td', {}, badge(d.state)),
          el('td', {}, d.errorClass),
          el('td', {}, d.statusCode ? String(d.statusCode) : ''),
          el('td', {}, d.failedStep ?? ''),
          el('td', {}, d.message ?? ''),
          el('td', {}, utc(d.lastFailureAt)),
        ),
      );
    }
    if (r.deadLetters.length === 0) body.append(el('tr', {}, el('td', { colspan: 11, class: 'muted' }, 'no dead letter matches')));
  } catch (err) {
    showError('#dl-error', err);
  }
}

async function openDeadLetter(id) {
  let d;
  try {
    d = await get(`/v1/dead-letters/${encodeURIComponent(id)}`);
  } catch (err) {
    showError('#dl-error', err);
    return;
  }
  $('#dl-detail').hidden = false;
  text('#dl-detail-id', d.id);
  $('#dl-discard').dataset.id = d.id;
  kv($('#dl-fields'), [
    ['state', badge(d.state)],
    ['job', el('a', { href: `#jobs/${encodeURIComponent(d.jobId)}` }, d.jobId)],
    ['tenant', d.tenantId],
    ['type', d.jobType],
    ['error', `${d.errorClass}${d.errorType ? ` / ${d.errorType}` : ''}${d.statusCode ? ` (HTTP ${d.statusCode})` : ''}`],
    ['failed step', d.failedStep],
    ['message', d.message],
    ['retry state', d.retryState],
    // Every step's attempts added; the job's own attempts is its highest attempt of one step.
    ['attempts, all steps', `${d.attempts} (the job shows its highest attempt)`],
    ['code version', d.codeVersion],
    ['build', d.buildId],
    ['input hash', d.inputHash],
    ['provider request IDs', (d.providerRequestIds ?? []).map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(', ')],
    ['first failure', utc(d.firstFailureAt)],
    ['last failure', utc(d.lastFailureAt)],
    ['discard reason', d.discardReason],
    [
      'replays',
      (d.replays ?? []).length
        ? el(
            'span',
            {},
            ...d.replays.map((r) =>
              el('span', {}, el('a', { href: `#jobs/${encodeURIComponent(r.jobId)}` }, r.jobId), ' ', badge(r.status), ' '),
            ),
          )
        : undefined,
    ],
  ]);
  const actions = clear($('#dl-actions tbody'));
  for (const a of d.actions ?? [])
    actions.append(
      el(
        'tr',
        {},
        el('td', {}, utc(a.at)),
        el('td', {}, a.action),
        el('td', {}, a.actor),
        el('td', {}, a.details ? JSON.stringify(a.details) : ''),
      ),
    );
  $('#dl-discard button').disabled = d.state !== 'open';
}

function replayTargets() {
  const ids = [...selected];
  if (ids.length === 0) throw new Error('select at least one dead letter (the checkboxes in the list)');
  return ids;
}

async function dryRun() {
  showError('#dl-error');
  try {
    const r = await post('/v1/dead-letters/replay', { ids: replayTargets(), dryRun: true });
    const body = clear($('#dl-preview-table tbody'));
    for (const p of r.deadLetters) {
      const changed = [p.changed?.codeVersion ? 'code' : '', p.changed?.inputHash ? 'input' : ''].filter(Boolean).join(', ') || 'nothing';
      for (const e of p.effects) {
        body.append(
          el(
            'tr',
            {},
            el('td', {}, el('code', {}, p.deadLetterId)),
            el('td', {}, el('code', {}, p.jobId)),
            el('td', {}, e.step),
            el('td', {}, el('code', {}, e.effectKey)),
            el('td', { class: `a-${e.action}` }, e.action),
            el('td', {}, `${e.state}${e.inDoubt ? ' (in doubt)' : ''}`),
            el('td', {}, changed),
          ),
        );
      }
    }
    $('#dl-preview').hidden = false;
  } catch (err) {
    showError('#dl-error', err);
  }
}

async function startReplay(ev) {
  ev.preventDefault();
  showError('#dl-error');
  const f = new FormData(ev.target);
  const num = (k) => Number(f.get(k));
  try {
    const r = await post('/v1/dead-letters/replay', {
      ids: replayTargets(),
      batchSize: num('batchSize'),
      concurrency: num('concurrency'),
      ratePerMinute: num('ratePerMinute'),
    });
    replayId = r.replayId;
    selected.clear();
    $('#dl-progress').hidden = false;
    await renderProgress();
    every('replay', 1000, renderProgress);
  } catch (err) {
    showError('#dl-error', err);
  }
}

async function renderProgress() {
  if (!replayId) return;
  let p;
  try {
    p = await get(`/v1/dead-letters/replays/${encodeURIComponent(replayId)}`);
  } catch (err) {
    showError('#dl-error', err);
    return;
  }
  text('#dl-replay-id', p.replayId);
  const state = $('#dl-replay-state');
  state.textContent = p.state;
  state.className = `badge s-${p.state}`;
  const c = p.counts;
  text(
    '#dl-replay-counts',
    `${c.succeeded} succeeded, ${c.failed} failed, ${c.running} running, ${c.pending} pending, ${c.skipped} skipped of ${c.total} · batch ${p.options.batchSize}, concurrency ${p.options.concurrency} (peak ${p.peakRunning}), ${p.options.ratePerMinute}/min · by ${p.requestedBy}${p.stopReason ? ` · stopped: ${p.stopReason}` : ''}`,
  );
  const items = clear($('#dl-items tbody'));
  for (const i of p.items) {
    items.append(
      el(
        'tr',
        {},
        el('td', {}, el('code', {}, i.deadLetterId)),
        el('td', {}, badge(i.status)),
        el('td', {}, i.replayJobId ? el('a', { href: `#jobs/${encodeURIComponent(i.replayJobId)}` }, i.replayJobId) : ''),
        el('td', {}, i.detail ?? ''),
      ),
    );
  }
  const done = STOPPED.has(p.state);
  for (const b of ['#dl-pause', '#dl-resume', '#dl-stop']) $(b).disabled = done;
  if (done) {
    clearInterval(timers.get('replay'));
    timers.delete('replay');
    const open = $('#dl-discard').dataset.id;
    await Promise.all([listDeadLetters(), open && !$('#dl-detail').hidden ? openDeadLetter(open) : undefined]);
  }
}

async function steer(command) {
  showError('#dl-error');
  try {
    const reason = $('#dl-stop-reason').value.trim();
    await post(
      `/v1/dead-letters/replays/${encodeURIComponent(replayId)}/${command}`,
      command === 'stop' && reason ? { reason } : command === 'stop' ? {} : undefined,
    );
    await renderProgress();
  } catch (err) {
    showError('#dl-error', err);
  }
}

async function discard(ev) {
  ev.preventDefault();
  showError('#dl-error');
  const id = ev.target.dataset.id;
  try {
    await post(`/v1/dead-letters/${encodeURIComponent(id)}/discard`, { reason: String(new FormData(ev.target).get('reason') ?? '') });
    ev.target.reset();
    await Promise.all([openDeadLetter(id), listDeadLetters()]);
  } catch (err) {
    showError('#dl-error', err);
  }
}

// ---------- failure clusters (one bulk action per cluster) ----------

let clusterId = null;
let clusterBulkId = null;

async function listClusters() {
  showError('#dl-clusters-error');
  try {
    const r = await get('/v1/admin/dead-letters/clusters');
    const body = clear($('#dl-clusters tbody'));
    for (const c of r.clusters) {
      body.append(
        el(
          'tr',
          { dataset: { cluster: c.clusterId } },
          el('td', {}, String(c.count)),
          el('td', {}, c.tenantId),
          el('td', {}, c.jobType),
          el('td', {}, c.errorClass),
          el('td', {}, c.statusCode ?? ''),
          el('td', {}, c.providerCode ?? ''),
          el('td', { title: c.example }, c.message),
          el('td', {}, utc(c.firstSeen)),
          el('td', {}, utc(c.lastSeen)),
          el(
            'td',
            {},
            el(
              'button',
              { type: 'button', class: 'cluster-preview', 'data-needs': 'operator', onclick: () => void previewCluster(c) },
              'Preview',
            ),
          ),
        ),
      );
    }
    if (r.clusters.length === 0) body.append(el('tr', {}, el('td', { colspan: 10, class: 'muted' }, 'no open dead letters')));
  } catch (err) {
    showError('#dl-clusters-error', err);
  }
}

/** The dry run of a discard of the whole cluster: how many dead letters, of which jobs. */
async function previewCluster(c) {
  showError('#dl-clusters-error');
  try {
    const r = await post('/v1/admin/bulk-actions', { action: 'discard', filter: { cluster: c.clusterId }, dryRun: true });
    clusterId = c.clusterId;
    text('#dl-cluster-id', c.clusterId);
    text('#dl-cluster-preview', `${r.count} open dead letter(s) of ${c.jobType} for ${c.tenantId}`);
    $('#dl-cluster-action').hidden = false;
  } catch (err) {
    showError('#dl-clusters-error', err);
  }
}

async function clusterAction(action, reason) {
  showError('#dl-clusters-error');
  try {
    const r = await post('/v1/admin/bulk-actions', { action, filter: { cluster: clusterId }, ...(reason ? { reason } : {}) });
    clusterBulkId = r.bulkId ?? null;
    if (r.replayId) {
      // A replay is the dead-letter replay: follow it in the replay card below.
      replayId = r.replayId;
      $('#dl-progress').hidden = false;
      every('replay', 1000, renderProgress);
      text('#dl-cluster-bulk', `replay ${r.replayId} started for ${r.count} dead letter(s)`);
    } else every('cluster-bulk', 1000, renderClusterBulk);
    await renderClusterBulk();
  } catch (err) {
    showError('#dl-clusters-error', err);
  }
}

async function renderClusterBulk() {
  if (!clusterBulkId) return;
  const b = await get(`/v1/admin/bulk-actions/${encodeURIComponent(clusterBulkId)}?items=0`);
  const c = b.progress ?? b.counts;
  // The bulk-actions page (console/bulk.js) shows it whole: items, commands, pause / resume / stop.
  clear($('#dl-cluster-bulk')).append(
    `${b.action} `,
    el('a', { href: `#bulk/${encodeURIComponent(b.bulkId)}` }, b.bulkId),
    `: ${b.state}; ${c.applied} applied, ${c.skipped} skipped, ${c.failed} failed of ${b.counts.total}`,
  );
  if (b.finishedAt) {
    clearInterval(timers.get('cluster-bulk'));
    timers.delete('cluster-bulk');
    $('#dl-cluster-action').hidden = true;
    await Promise.all([listClusters(), listDeadLetters()]);
  }
}

// ---------- queue health ----------

const plots = {};
function plot(id, series, xs, ys) {
  const data = [xs, ...ys];
  if (plots[id]) {
    plots[id].setData(data);
    return;
  }
  const node = $(`#${id}`);
  const colors = ['#2f5bd3', '#067647', '#b54708', '#b42318'];
  plots[id] = new window.uPlot(
    {
      width: Math.max(320, node.clientWidth || 480),
      height: 180,
      scales: { x: { time: true } },
      // One time base everywhere: UTC, like every time in the API.
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      series: [{}, ...series.map((label, i) => ({ label, stroke: colors[i % colors.length], width: 1.5, spanGaps: false }))],
      axes: [{}, { size: 50 }],
    },
    data,
    node,
  );
}

async function showHealthPage() {
  await renderHealth();
  every('health', 10_000, renderHealth);
}

async function renderHealth() {
  let h;
  try {
    h = await get('/v1/admin/queue-health?history=60');
    showError('#health-error');
  } catch (err) {
    showError('#health-error', err);
    return;
  }
  text('#health-at', `as of ${utc(h.generatedAt)}, refreshed every 10 s`);
  const w = h.headlineWindow;
  kv($('#health-figures'), [
    ['backlog (admitted, unfinished)', String(h.backlog.active)],
    ['deferred', String(h.backlog.deferred)],
    ['oldest waiting', h.backlog.oldestWaitingAgeSeconds === null ? 'none' : `${Math.round(h.backlog.oldestWaitingAgeSeconds)} s`],
    [`arrivals / completions per min (${w})`, `${h.rates.arrivalsPerMinute[w]} / ${h.rates.completionsPerMinute[w]}`],
    ['recovery', h.recovery.words],
    ['open dead letters', String(h.deadLetters.open)],
    [`dead-letter growth per min (${w})`, String(h.deadLetters.growthPerMinute[w])],
    ['outbox pending', String(h.outbox.pending)],
    ['effects in doubt', String(h.reconciliations.effectsInDoubt)],
    [
      'degradation',
      h.degradation.pausedPriorities.length
        ? `paused: ${h.degradation.pausedPriorities.join(', ')}${h.degradation.resume ? ` · ${h.degradation.resume.words}` : ''}`
        : 'nothing paused',
    ],
    ...(h.degradation.rampHalted ? [['ramp halted', `${utc(h.degradation.rampHalted.at)}: ${h.degradation.rampHalted.reason}`]] : []),
  ]);
  const hist = h.history;
  if (!hist || typeof window.uPlot !== 'function') return;
  const xs = hist.minutes.map((m) => Date.parse(m) / 1000);
  const s = hist.samples ?? {};
  plot('plot-backlog', ['unfinished', 'admitted (sampled)', 'deferred (sampled)'], xs, [hist.unfinished, s.active ?? [], s.deferred ?? []]);
  plot('plot-flow', ['arrivals', 'completions'], xs, [hist.arrivals, hist.completions]);
  plot('plot-dead-letters', ['open dead letters (sampled)'], xs, [s.deadLettersOpen ?? []]);
  plot('plot-wait', ['oldest waiting (s)', 'recovery ETA (s)'], xs, [s.oldestWaitingAgeSeconds ?? [], s.recoveryEtaSeconds ?? []]);
}

// ---------- degradation ----------

let degFormFilled = false;
async function showDegradationPage() {
  await renderDegradation();
  every('degradation', 3000, renderDegradation);
}

async function renderDegradation() {
  let d;
  try {
    d = await get('/v1/admin/degradation');
    showError('#deg-error');
  } catch (err) {
    showError('#deg-error', err);
    return;
  }
  kv($('#deg-fields'), [
    ['paused', d.pausedPriorities.length ? d.pausedPriorities.map((p) => `${p} since ${utc(d.pausedSince?.[p])}`).join(', ') : 'nothing'],
    ['ramp rate', `${d.recoveryRatePerMinute} jobs/min on resume`],
    [
      'ramp stop',
      d.rampStop
        ? `pause again when ≥ ${Math.round(d.rampStop.failureRatio * 100)}% of ≥ ${d.rampStop.minAttempts} upstream attempts fail within ${d.rampStop.windowSeconds} s`
        : '',
    ],
    ...(d.rampHalted ? [['ramp halted', `${utc(d.rampHalted.at)}: ${d.rampHalted.reason}`]] : []),
    ['fallback', d.fallbackJobTypes.length ? d.fallbackJobTypes.join(', ') : 'none'],
    ['last change', `${d.updatedBy} at ${utc(d.updatedAt)}`],
  ]);
  const deferred = Object.entries(d.deferredJobs ?? {});
  kv($('#deg-deferred'), deferred.length ? deferred.map(([p, n]) => [p, String(n)]) : [['deferred', 'none']]);
  const audit = clear($('#deg-audit tbody'));
  for (const a of d.audit ?? []) {
    audit.append(
      el(
        'tr',
        {},
        el('td', {}, utc(a.at)),
        el('td', {}, a.actor),
        el('td', {}, el('code', {}, a.keyId)),
        el('td', {}, ...changeLines(a.before, a.after)),
        el('td', {}, a.reason ?? ''),
      ),
    );
  }
  if (!degFormFilled) {
    degFormFilled = true;
    const f = $('#deg-form');
    for (const box of f.querySelectorAll('input[name=paused]')) box.checked = d.pausedPriorities.includes(box.value);
    f.elements.recoveryRatePerMinute.value = String(d.recoveryRatePerMinute);
    f.elements.fallbackJobTypes.value = d.fallbackJobTypes.join(', ');
  }
}

// Who and when have columns of their own; the change column says what changed (review D10).
const BOOKKEEPING = new Set(['updatedAt', 'updatedBy', 'reason']);
const shown = (v) =>
  v === undefined || v === null
    ? '–'
    : Array.isArray(v)
      ? `[${v.map(shown).join(', ')}]`
      : typeof v === 'object'
        ? JSON.stringify(v)
        : String(v);
/** Nested objects (rampStop, pausedSince) become dotted fields; arrays stay whole. */
function flat(o, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(o ?? {})) {
    if (!prefix && BOOKKEEPING.has(k)) continue;
    if (v && typeof v === 'object' && !Array.isArray(v)) flat(v, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = v;
  }
  return out;
}
/** One "field: old → new" line per field that differs. */
export function changeLines(before, after) {
  const b = flat(before);
  const a = flat(after);
  const lines = [...new Set([...Object.keys(b), ...Object.keys(a)])]
    .filter((k) => JSON.stringify(b[k]) !== JSON.stringify(a[k]))
    .map((k) => el('span', { class: 'change' }, el('code', {}, k), `: ${shown(b[k])} → ${shown(a[k])}`));
  return lines.length ? lines : [el('span', { class: 'muted' }, 'no change')];
}

async function applyDegradation(ev) {
  ev.preventDefault();
  showError('#deg-error');
  const f = ev.target;
  const body = {
    pausedPriorities: [...f.querySelectorAll('input[name=paused]:checked')].map((b) => b.value),
    recoveryRatePerMinute: Number(f.elements.recoveryRatePerMinute.value),
    fallbackJobTypes: f.elements.fallbackJobTypes.value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
  const reason = f.elements.reason.value.trim();
  if (reason) body.reason = reason;
  try {
    await api('PUT', '/v1/admin/degradation', body);
    f.elements.reason.value = '';
    await renderDegradation();
  } catch (err) {
    showError('#deg-error', err);
  }
}

// ---------- wiring ----------

function start() {
  $('#sign-in-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = $('#admin-key');
    const key = input.value.trim();
    input.value = '';
    text('#sign-in-error', '');
    try {
      await signIn(key);
    } catch (err) {
      text(
        '#sign-in-error',
        err instanceof ApiError && err.status === 401 ? `Refused: ${err.problem?.detail ?? 'not an admin key'}` : problemText(err),
      );
    }
  });
  $('#sign-out').addEventListener('click', () => void signOut());
  $('#job-search').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void searchJobs();
  });
  $('#job-next').addEventListener('click', () => void searchJobs(true));
  $('#dl-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void listDeadLetters();
  });
  $('#dl-dry-run').addEventListener('click', () => void dryRun());
  $('#dl-replay').addEventListener('submit', (ev) => void startReplay(ev));
  $('#dl-pause').addEventListener('click', () => void steer('pause'));
  $('#dl-resume').addEventListener('click', () => void steer('resume'));
  $('#dl-stop').addEventListener('click', () => void steer('stop'));
  $('#dl-discard').addEventListener('submit', (ev) => void discard(ev));
  $('#dl-cluster-action').addEventListener('submit', (ev) => {
    ev.preventDefault();
    void clusterAction('discard', String(new FormData(ev.target).get('reason') ?? '').trim());
  });
  $('#dl-cluster-replay').addEventListener('click', () => void clusterAction('replay'));
  $('#deg-form').addEventListener('submit', (ev) => void applyDegradation(ev));
  window.addEventListener('hashchange', route);
  // Keys kept by an older console are removed: the key lives in no storage any more.
  sessionStorage.removeItem('durable-jobs.console.adminKey');
  resume().catch(() => signedOut(''));
}

start();
