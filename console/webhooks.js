// The webhook deliveries page (issue 38 §8): what each inbound delivery did, filtered by source,
// event and outcome, newest first, by keyset pages. Never the event's data. Text only.
import { $, badge, clear, el, get, qs, registerPage, showError, text, utc } from './console.js';

// "Next page" sends the cursor with the filter the list was made with (a cursor belongs to one filter).
const pages = { query: '', cursor: undefined, page: 1 };
let listed = false;

async function show() {
  if (!listed) {
    listed = true;
    await list();
  }
}

async function list(next = false) {
  showError('#wh-error');
  if (!next) Object.assign(pages, { query: qs($('#wh-filter')), cursor: undefined, page: 1 });
  try {
    const cursor = next ? `${pages.query ? '&' : ''}cursor=${encodeURIComponent(pages.cursor)}` : '';
    const r = await get(`/v1/admin/webhook-deliveries?${pages.query}${cursor}`);
    if (next) pages.page += 1;
    pages.cursor = r.nextCursor;
    $('#wh-next').hidden = !r.nextCursor;
    text('#wh-page', `page ${pages.page}${r.nextCursor ? '' : ', the last'}`);
    const body = clear($('#wh-list tbody'));
    for (const d of r.items) body.append(row(d));
    if (r.items.length === 0) body.append(el('tr', {}, el('td', { colspan: 11, class: 'muted' }, 'no delivery matches')));
  } catch (err) {
    showError('#wh-error', err);
  }
}

function row(d) {
  const job = d.jobId ? el('a', { href: `#jobs/${encodeURIComponent(d.jobId)}` }, el('code', {}, d.jobId)) : '';
  return el(
    'tr',
    { dataset: { webhookId: d.webhookId } },
    el('td', { class: 'nowrap' }, utc(d.firstSeenAt)),
    el('td', {}, d.source),
    el('td', {}, el('code', {}, d.webhookId)),
    el('td', {}, d.event),
    el('td', {}, badge(d.outcome)),
    el('td', {}, d.timesReceived > 1 ? `${d.timesReceived} (redelivered, last ${utc(d.lastReceivedAt)})` : '1'),
    el('td', {}, d.conflictingDeliveries > 0 ? `${d.conflictingDeliveries} refused (other body), last ${utc(d.lastConflictAt)}` : ''),
    el('td', {}, d.jobType ?? ''),
    el('td', {}, job),
    el('td', {}, d.signal ?? ''),
    el('td', {}, d.refusal ?? ''),
  );
}

$('#wh-filter').addEventListener('submit', (e) => {
  e.preventDefault();
  list();
});
$('#wh-next').addEventListener('click', () => list(true));

registerPage('webhooks', show);
