// The Schedules page (issue 38 §8): each scheduled job type's Temporal Schedule, its state and
// windows; an operator pauses, unpauses, triggers now and backfills (the API audits each, and
// refuses a viewer). Text only, never innerHTML (see console.js).
import { $, badge, clear, el, every, get, kv, post, qs, registerPage, showError, text, utc } from './console.js';

const PATH = '/v1/admin/schedules';
let current; // the open schedule's name
let windowsQuery = ''; // the window form's query, kept across refreshes

const timingText = (s) =>
  s.timing.cron
    ? `cron ${[].concat(s.timing.cron).join(' | ')} (${s.timing.timezone ?? 'UTC'}), windows of ${s.window.windowMs / 1000} s`
    : `every ${s.timing.every / 1000} s, windows of ${s.window.windowMs / 1000} s`;
const stateBadge = (s) => (!s.state.exists ? badge('absent') : s.state.paused ? badge('paused') : badge('active'));
const tenantsText = (s) => (s.perTenant ? `one job per tenant (${s.tenants.join(', ')})` : `tenant ${s.tenants[0]}`);

async function show(name) {
  current = name;
  $('#sch-detail').hidden = !name;
  await renderList();
  if (name) await renderDetail();
  every('schedules', 5000, async () => {
    await renderList();
    if (current) await renderDetail();
  });
}

async function renderList() {
  let r;
  try {
    r = await get(PATH);
    showError('#sch-error');
  } catch (err) {
    return showError('#sch-error', err);
  }
  const body = clear($('#sch-list tbody'));
  for (const s of r.items) {
    const href = `#schedules/${encodeURIComponent(s.name)}`;
    body.append(
      el(
        'tr',
        {
          class: `selectable${s.name === current ? ' current' : ''}`,
          dataset: { schedule: s.name },
          onclick: () => (location.hash = href),
        },
        el('td', {}, el('a', { class: 'row-link', href }, el('code', {}, s.name))),
        el('td', {}, stateBadge(s), s.state.note ? ` ${s.state.note}` : ''),
        el('td', {}, timingText(s)),
        el('td', {}, tenantsText(s)),
        el(
          'td',
          { class: 'nowrap' },
          (s.state.nextActionTimes ?? []).slice(0, 3).map((t) => el('div', {}, utc(t))),
        ),
        el(
          'td',
          { class: 'nowrap' },
          (s.state.recentActions ?? []).slice(0, 3).map((a) => el('div', {}, utc(a.scheduledAt))),
        ),
      ),
    );
  }
  if (r.items.length === 0) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'no job type declares a schedule')));
}

async function renderDetail() {
  let s;
  try {
    s = await get(`${PATH}/${encodeURIComponent(current)}`);
  } catch (err) {
    return showError('#sch-error', err);
  }
  text('#sch-name', s.name);
  clear($('#sch-state')).append(stateBadge(s));
  kv($('#sch-fields'), [
    ['Schedule ID', el('code', {}, s.scheduleId)],
    ['description', s.description],
    ['timing', timingText(s)],
    ['tenants', tenantsText(s)],
    ['note', s.state.note],
    ['created', utc(s.state.createdAt)],
    [
      'actions taken',
      s.state.exists
        ? `${s.state.actionsTaken} (missed the catch-up window: ${s.state.actionsMissedCatchupWindow}, skipped for overlap: ${s.state.actionsSkippedOverlap})`
        : 'the Schedule does not exist yet',
    ],
  ]);
  const actions = clear($('#sch-actions tbody'));
  for (const a of s.actions)
    actions.append(
      el(
        'tr',
        {},
        el('td', {}, utc(a.at)),
        el('td', {}, a.action),
        el('td', {}, a.actor),
        el('td', {}, a.reason ?? ''),
        el('td', {}, detailsText(a.details)),
      ),
    );
  await renderWindows();
}

const detailsText = (d) =>
  d?.from ? `${utc(d.from)} → ${utc(d.to)}, ${d.windows} window(s)` : d?.window ? `window ${utc(d.window.start)}` : '';

async function renderWindows() {
  let r;
  try {
    r = await get(`${PATH}/${encodeURIComponent(current)}/windows${windowsQuery ? `?${windowsQuery}` : ''}`);
    showError('#sch-windows-error');
  } catch (err) {
    return showError('#sch-windows-error', err);
  }
  const body = clear($('#sch-windows tbody'));
  for (const w of r.windows)
    body.append(
      el(
        'tr',
        { dataset: { start: w.start, state: w.state } },
        el('td', { class: 'nowrap' }, utc(w.start)),
        el('td', { class: 'nowrap' }, utc(w.end)),
        el('td', {}, badge(w.state)),
        el('td', {}, w.reason),
        el('td', {}, w.source ?? ''),
        el('td', {}, w.jobs === undefined ? '' : String(w.jobs)),
        el('td', { class: 'nowrap' }, utc(w.filledAt)),
      ),
    );
  if (r.windows.length === 0) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'no window in this range')));
}

/** Runs an action on the open schedule and reports it; the page then shows the new state. */
async function act(path, body, done) {
  showError('#sch-action-error');
  text('#sch-action-result', '');
  try {
    const r = await post(`${PATH}/${encodeURIComponent(current)}/${path}`, body);
    text('#sch-action-result', done(r));
    await renderList();
    await renderDetail();
  } catch (err) {
    showError('#sch-action-error', err);
  }
}

const reason = () => $('#sch-pause input[name=reason]').value.trim();
$('#sch-pause').addEventListener('submit', (e) => {
  e.preventDefault();
  act('pause', { reason: reason() }, () => `paused ${current}`);
});
$('#sch-unpause-btn').addEventListener('click', () => {
  if (!reason()) return text('#sch-action-error', 'a reason is required to unpause');
  act('unpause', { reason: reason() }, () => `unpaused ${current}`);
});
$('#sch-trigger-btn').addEventListener('click', () =>
  act('trigger', reason() ? { reason: reason() } : {}, (r) => `triggered: window ${utc(r.window.start)}, job(s) ${r.jobIds.join(', ')}`),
);
$('#sch-backfill').addEventListener('submit', (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const body = { from: String(f.get('from')).trim(), to: String(f.get('to')).trim(), ...(reason() ? { reason: reason() } : {}) };
  act(
    'backfill',
    body,
    (r) => `backfill started: ${r.windows.length} window(s) from ${utc(r.windows[0]?.start)} to ${utc(r.windows.at(-1)?.start)}`,
  );
});
$('#sch-windows-form').addEventListener('submit', (e) => {
  e.preventDefault();
  windowsQuery = qs(e.target);
  renderWindows();
});

registerPage('schedules', show);
