// The bulk-actions page (#bulk, #bulk/<bulkId>): the recent bulk actions, a new one by filter
// (previewed first: Start is enabled only for the request just previewed), and one action's live
// progress with its commands and per-item audit rows, polled every second while it runs, with
// pause / resume / stop (operator). Dead-letter replays stay on the dead-letter page.
import { $, badge, clear, el, every, get, post, registerPage, showError, stopTimer, text, utc } from './console.js';

const FILTER_KEYS = ['state', 'type', 'tenantId', 'tag', 'createdAfter', 'createdBefore', 'errorClass', 'cluster'];
const NUMBER_KEYS = ['limit', 'batchSize', 'concurrency', 'ratePerMinute'];
const OVER = new Set(['stopping', 'stopped', 'completed']);
let previewed = null; // the JSON of the request the preview was for
let shownId = null;

async function show(bulkId) {
  shownId = bulkId ?? null;
  $('#bulk-detail').hidden = !bulkId;
  await listBulk();
  if (bulkId) {
    await renderBulk();
    every('bulk', 1000, renderBulk);
  }
}

async function listBulk() {
  try {
    const r = await get('/v1/admin/bulk-actions?limit=50');
    const body = clear($('#bulk-list tbody'));
    for (const b of r.bulkActions) {
      const href = `#bulk/${encodeURIComponent(b.bulkId)}`;
      body.append(
        el(
          'tr',
          { class: 'selectable', dataset: { bulk: b.bulkId }, onclick: () => (location.hash = href) },
          el('td', {}, el('a', { class: 'row-link', href }, el('code', {}, b.bulkId))),
          el('td', {}, b.action),
          el('td', {}, badge(b.state)),
          el('td', {}, `${b.counts.done} of ${b.counts.total} done`),
          el('td', {}, b.requestedBy),
          el('td', {}, utc(b.createdAt)),
        ),
      );
    }
    if (r.bulkActions.length === 0) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'no bulk action yet')));
  } catch (err) {
    showError('#bulk-error', err);
  }
}

/** The form as a request: the filter's non-empty fields, numbers as numbers (a bad one the API names). */
function request() {
  const f = new FormData($('#bulk-form'));
  const val = (k) => String(f.get(k) ?? '').trim();
  const filter = {};
  for (const k of FILTER_KEYS) if (val(k)) filter[k] = k === 'state' && val(k).includes(',') ? val(k).split(/\s*,\s*/) : val(k);
  const body = { action: val('action'), filter };
  for (const k of NUMBER_KEYS) if (val(k)) body[k] = Number.isFinite(Number(val(k))) ? Number(val(k)) : val(k);
  for (const k of ['reason', 'fromStep']) if (val(k)) body[k] = val(k);
  return body;
}

async function preview() {
  showError('#bulk-error');
  const body = request();
  previewed = null;
  $('#bulk-start').disabled = true;
  try {
    const p = await post('/v1/admin/bulk-actions', { ...body, dryRun: true });
    previewed = JSON.stringify(body);
    $('#bulk-start').disabled = false;
    const groups = p.groups.map((g) => `${g.count} of ${g.jobType} for ${g.tenantId}`).join(', ');
    text('#bulk-preview-text', `${p.action} would touch ${p.count} (limit ${p.limit}): ${groups}`);
    const rows = clear($('#bulk-preview-targets tbody'));
    for (const t of p.targets)
      rows.append(
        el('tr', {}, el('td', {}, el('code', {}, t.id)), el('td', {}, t.tenantId), el('td', {}, t.jobType), el('td', {}, t.state)),
      );
    $('#bulk-preview-targets').hidden = false;
  } catch (err) {
    showError('#bulk-error', err);
    text('#bulk-preview-text', '');
    $('#bulk-preview-targets').hidden = true;
  }
}

async function start(ev) {
  ev.preventDefault();
  showError('#bulk-error');
  const body = request();
  if (JSON.stringify(body) !== previewed) {
    text('#bulk-error', 'the form changed since the preview: preview again');
    $('#bulk-start').disabled = true;
    return;
  }
  try {
    const r = await post('/v1/admin/bulk-actions', body);
    previewed = null;
    $('#bulk-start').disabled = true;
    $('#bulk-preview-targets').hidden = true;
    text('#bulk-preview-text', '');
    location.hash = `#bulk/${encodeURIComponent(r.bulkId)}`;
  } catch (err) {
    showError('#bulk-error', err);
  }
}

async function renderBulk() {
  if (!shownId) return;
  let b;
  try {
    b = await get(`/v1/admin/bulk-actions/${encodeURIComponent(shownId)}?items=200`);
  } catch (err) {
    showError('#bulk-error', err);
    return;
  }
  text('#bulk-id', b.bulkId);
  const state = $('#bulk-state');
  state.textContent = b.state;
  state.className = `badge s-${b.state}`;
  text('#bulk-counts', countsText(b));
  renderCommands(b.commands);
  renderItems(b.action, b.items);
  // Over as soon as the workflow says so (its row's finishedAt may follow a moment later).
  const over = Boolean(b.finishedAt) || OVER.has(b.state);
  for (const id of ['#bulk-pause', '#bulk-resume', '#bulk-stop']) $(id).disabled = over;
  $('#bulk-pause').disabled ||= b.state === 'paused';
  $('#bulk-resume').disabled ||= b.state !== 'paused';
  if (b.finishedAt) {
    stopTimer('bulk');
    await listBulk();
  }
}

function countsText(b) {
  const c = b.progress ?? b.counts;
  const o = b.options ?? {};
  return [
    `${b.action} by ${b.requestedBy}: ${c.applied} applied, ${c.skipped} skipped, ${c.failed} failed of ${b.counts.total}`,
    o.ratePerMinute ? `${o.ratePerMinute}/min` : '',
    o.batchSize ? `batch ${o.batchSize}` : '',
    o.concurrency ? `concurrency ${o.concurrency}` : '',
    o.reason ? `reason: ${o.reason}` : '',
    b.stopReason ? `stopped: ${b.stopReason}` : '',
    b.finishedAt ? `finished ${utc(b.finishedAt)}` : `started ${utc(b.createdAt)}`,
  ]
    .filter(Boolean)
    .join(' · ');
}

function renderCommands(commands) {
  const body = clear($('#bulk-commands tbody'));
  for (const c of commands)
    body.append(
      el('tr', {}, el('td', {}, utc(c.at)), el('td', {}, c.command), el('td', {}, c.actor), el('td', {}, c.details?.reason ?? '')),
    );
  if (commands.length === 0) body.append(el('tr', {}, el('td', { colspan: 4, class: 'muted' }, 'none')));
}

function renderItems(action, items) {
  const body = clear($('#bulk-items tbody'));
  const page = action === 'discard' ? 'dead-letters' : 'jobs';
  const jobLink = (id) => el('a', { href: `#jobs/${encodeURIComponent(id)}` }, id);
  for (const i of items)
    body.append(
      el(
        'tr',
        { dataset: { target: i.targetId } },
        el('td', {}, el('a', { href: `#${page}/${encodeURIComponent(i.targetId)}` }, el('code', {}, i.targetId))),
        el('td', {}, badge(i.outcome)),
        el('td', {}, i.actor),
        // The detail the action recorded; a rerun's new job is linked.
        el('td', {}, i.detail?.detail ?? '', i.detail?.jobId && i.detail.jobId !== i.targetId ? [' → ', jobLink(i.detail.jobId)] : ''),
        el('td', {}, utc(i.at)),
      ),
    );
}

async function steer(command) {
  showError('#bulk-error');
  const reason = $('#bulk-stop-reason').value.trim();
  try {
    await post(`/v1/admin/bulk-actions/${encodeURIComponent(shownId)}/${command}`, command === 'stop' && reason ? { reason } : {});
    await renderBulk();
  } catch (err) {
    showError('#bulk-error', err);
  }
}

$('#bulk-preview').addEventListener('click', () => void preview());
$('#bulk-form').addEventListener('submit', (ev) => void start(ev));
// Any change to the form needs a new preview before Start.
$('#bulk-form').addEventListener('input', () => {
  $('#bulk-start').disabled = true;
});
for (const c of ['pause', 'resume', 'stop']) $(`#bulk-${c}`).addEventListener('click', () => void steer(c));
registerPage('bulk', show);
