// The failed notifications page (issue 38 §8): the outbox rows by state, each with its evidence
// (never its payload, which holds the recipient); an operator retries (a replay of the
// notification) or discards one with a reason, both audited by the API. Text only.
import { $, badge, clear, el, get, kv, post, qs, registerPage, showError, text, utc } from './console.js';

let current; // the open notification's ID

async function show(id) {
  current = id;
  $('#nt-detail').hidden = !id;
  await list();
  if (id) await open();
}

async function list() {
  showError('#nt-error');
  try {
    const r = await get(`/v1/admin/outbox?${qs($('#nt-filter'))}`);
    const body = clear($('#nt-list tbody'));
    for (const o of r.items) body.append(row(o));
    if (r.items.length === 0) body.append(el('tr', {}, el('td', { colspan: 10, class: 'muted' }, 'no notification in this state')));
  } catch (err) {
    showError('#nt-error', err);
  }
}

function row(o) {
  const href = `#notifications/${encodeURIComponent(o.id)}`;
  return el(
    'tr',
    { class: `selectable${o.id === current ? ' current' : ''}`, dataset: { id: o.id }, onclick: () => (location.hash = href) },
    el('td', {}, el('a', { class: 'row-link', href }, el('code', {}, o.id))),
    el('td', {}, el('code', {}, o.jobId)),
    el('td', {}, o.tenantId),
    el('td', {}, o.kind),
    el('td', {}, badge(o.state)),
    el('td', {}, String(o.attempts)),
    el('td', {}, o.errorClass ?? ''),
    el('td', {}, o.statusCode ? String(o.statusCode) : ''),
    el('td', { class: 'nowrap' }, utc(o.failedAt)),
    el('td', {}, resolution(o)),
  );
}

const resolution = (o) => (o.resolvedBy ? `${o.state} by ${o.resolvedBy} at ${utc(o.resolvedAt)}${o.reason ? `: ${o.reason}` : ''}` : '');

async function open() {
  let o;
  try {
    o = await get(`/v1/admin/outbox/${encodeURIComponent(current)}`);
  } catch (err) {
    return showError('#nt-action-error', err);
  }
  text('#nt-id', o.id);
  kv($('#nt-fields'), [
    ['job', el('a', { href: `#jobs/${encodeURIComponent(o.jobId)}` }, el('code', {}, o.jobId))],
    ['tenant', o.tenantId],
    ['kind', o.kind],
    ['state', badge(o.state)],
    ['attempts', String(o.attempts)],
    ['error class', o.errorClass],
    ['HTTP status', o.statusCode ? String(o.statusCode) : ''],
    ['last error', o.lastError],
    ['failed at', utc(o.failedAt)],
    ['replays', String(o.replays)],
    ['resolution', resolution(o)],
    ['created', utc(o.createdAt)],
    ['delivered', utc(o.deliveredAt)],
  ]);
  $('#nt-retry').disabled = o.state !== 'failed';
  $('#nt-discard').disabled = o.state !== 'failed';
}

/** Retry or discard the open notification, then show its new state. */
async function act(path, body, done) {
  showError('#nt-action-error');
  text('#nt-result', '');
  try {
    const r = await post(`/v1/admin/outbox/${encodeURIComponent(current)}/${path}`, body);
    text('#nt-result', done(r));
    await list();
    await open();
  } catch (err) {
    showError('#nt-action-error', err);
  }
}

const reason = () => $('#nt-action input[name=reason]').value.trim();
$('#nt-retry').addEventListener('click', () =>
  act('replay', reason() ? { reason: reason() } : {}, (r) => `retrying ${r.id}: redelivery ${r.workflowId} started`),
);
$('#nt-action').addEventListener('submit', (e) => {
  e.preventDefault();
  if (!reason()) return text('#nt-action-error', 'a reason is required to discard');
  act('discard', { reason: reason() }, (r) => `discarded ${r.id}`);
});
$('#nt-filter').addEventListener('submit', (e) => {
  e.preventDefault();
  list();
});

registerPage('notifications', show);
