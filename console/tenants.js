// The tenants page (#tenants, #tenants/<id>): tenants, their entitlements and their API keys,
// from /v1/admin/tenants*. Admin only (the nav link and every action carry data-needs="admin";
// the API refuses anyone else anyway). A new key is shown once, in the page, and never again:
// the API stores only its hash, and this module keeps it in no variable after rendering it.
import { $, api, badge, clear, el, get, kv, post, registerPage, showError, text, utc } from './console.js';

let current = null; // the tenant whose card is open

async function show(id) {
  await listTenants();
  if (id) await openTenant(id);
  else $('#tenant-detail').hidden = true;
}

async function listTenants() {
  showError('#tenants-error');
  let r;
  try {
    r = await get('/v1/admin/tenants');
  } catch (err) {
    showError('#tenants-error', err);
    return [];
  }
  const body = clear($('#tenants-list tbody'));
  for (const t of r.tenants) {
    const href = `#tenants/${encodeURIComponent(t.id)}`;
    body.append(
      el(
        'tr',
        { class: 'selectable', dataset: { tenant: t.id }, onclick: () => (location.hash = href) },
        el('td', {}, el('a', { class: 'row-link', href }, el('code', {}, t.id))),
        el('td', {}, utc(t.createdAt)),
        el('td', {}, t.mayUseHighPriority ? 'allowed' : 'not allowed'),
        el('td', {}, limitText(t)),
        el('td', {}, `${t.liveKeys} live of ${t.keys.length}`),
        el('td', {}, lastUsed(t.keys)),
      ),
    );
  }
  if (r.tenants.length === 0) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'no tenant yet')));
  return r.tenants;
}

const limitText = (t) =>
  t.intakeRatePerSecond === null ? 'none' : `${t.intakeRatePerSecond}/s, burst ${t.intakeBurst ?? t.intakeRatePerSecond}`;

function lastUsed(keys) {
  const times = keys
    .map((k) => k.lastUsedAt)
    .filter(Boolean)
    .sort();
  return times.length ? utc(times[times.length - 1]) : 'never';
}

async function openTenant(id) {
  let t;
  try {
    t = (await get('/v1/admin/tenants')).tenants.find((x) => x.id === id);
  } catch (err) {
    showError('#tenants-error', err);
    return;
  }
  if (!t) {
    text('#tenants-error', `no tenant ${id}`);
    return;
  }
  if (current !== id) clear($('#tenant-new-key')).hidden = true;
  current = id;
  $('#tenant-detail').hidden = false;
  text('#tenant-detail-id', t.id);
  kv($('#tenant-fields'), [
    ['created', utc(t.createdAt)],
    ['priority high', t.mayUseHighPriority ? 'allowed' : 'not allowed (clamped to normal)'],
    ['intake limit', limitText(t)],
  ]);
  const f = $('#tenant-settings');
  f.elements.mayUseHighPriority.checked = t.mayUseHighPriority;
  f.elements.intakeRatePerSecond.value = t.intakeRatePerSecond ?? '';
  f.elements.intakeBurst.value = t.intakeBurst ?? '';
  renderKeys(t);
}

function renderKeys(t) {
  const body = clear($('#tenant-keys tbody'));
  for (const k of t.keys) {
    const revoke = k.revokedAt
      ? ''
      : el(
          'button',
          {
            type: 'button',
            class: 'key-revoke',
            'data-needs': 'admin',
            dataset: { key: k.name },
            onclick: () => void revokeKey(t.id, k.name),
          },
          'Revoke',
        );
    body.append(
      el(
        'tr',
        { dataset: { key: k.name } },
        el('td', {}, el('code', {}, k.name)),
        el('td', {}, k.prefix ? el('code', {}, `${k.prefix}…`) : 'chosen by hand'),
        el('td', {}, k.revokedAt ? badge('revoked') : badge('live')),
        el('td', {}, `${utc(k.createdAt)} by ${k.createdBy}`),
        el('td', {}, k.lastUsedAt ? utc(k.lastUsedAt) : 'never'),
        el('td', {}, k.revokedAt ? `${utc(k.revokedAt)} by ${k.revokedBy}` : ''),
        el('td', {}, revoke),
      ),
    );
  }
  if (t.keys.length === 0) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'no key: this tenant cannot submit yet')));
}

/** Runs a change, then shows the tenant again (or the error, naming the field). */
async function change(fn) {
  showError('#tenants-error');
  try {
    await fn();
  } catch (err) {
    showError('#tenants-error', err);
    return false;
  }
  await listTenants();
  if (current) await openTenant(current);
  return true;
}

async function createTenant(ev) {
  ev.preventDefault();
  const id = ev.target.elements.id.value.trim();
  if (await change(() => post('/v1/admin/tenants', { id }))) {
    ev.target.reset();
    location.hash = `#tenants/${encodeURIComponent(id)}`;
  }
}

async function addKey(ev) {
  ev.preventDefault();
  const name = ev.target.elements.name.value.trim();
  let added;
  const ok = await change(async () => {
    added = await post(`/v1/admin/tenants/${encodeURIComponent(current)}/keys`, { name });
  });
  if (!ok) return;
  ev.target.reset();
  // Shown once: the API never returns it again.
  clear($('#tenant-new-key')).append(
    el('strong', {}, `New key "${added.name}" for ${added.tenantId}: `),
    el('code', { id: 'tenant-new-key-value' }, added.key),
    el('br'),
    'Copy it now: it is shown this once, and only its hash is stored.',
  );
  $('#tenant-new-key').hidden = false;
}

const revokeKey = (tenantId, name) =>
  change(() => api('DELETE', `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys/${encodeURIComponent(name)}`));

async function saveSettings(ev) {
  ev.preventDefault();
  const f = ev.target.elements;
  const body = { mayUseHighPriority: f.mayUseHighPriority.checked };
  const rate = f.intakeRatePerSecond.value.trim();
  const burst = f.intakeBurst.value.trim();
  // Both empty: no limit (null); a number is sent as a number, anything else as typed (the API names the field).
  body.intakeRatePerSecond = rate === '' ? null : Number.isFinite(Number(rate)) ? Number(rate) : rate;
  if (burst !== '') body.intakeBurst = Number.isFinite(Number(burst)) ? Number(burst) : burst;
  await change(() => api('PATCH', `/v1/admin/tenants/${encodeURIComponent(current)}`, body));
}

$('#tenant-create').addEventListener('submit', (ev) => void createTenant(ev));
$('#tenant-add-key').addEventListener('submit', (ev) => void addKey(ev));
$('#tenant-settings').addEventListener('submit', (ev) => void saveSettings(ev));
registerPage('tenants', show);
