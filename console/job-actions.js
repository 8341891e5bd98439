// The job page's actions (operator): cancel an unfinished job, and rerun a finished one as a new
// linked job, from its start or from a step, after a preview of which effects execute again and
// which are reused. A cancel is a bulk action of one ID (POST /v1/admin/bulk-actions): the same
// audited path as a bulk cancel, one audit row under the operator's name, followed on #bulk/<id>.
// console.js announces each job it shows with a `console:job` event; this module follows it.
import { $, clear, el, post, session, showError, text } from './console.js';

const UNFINISHED = new Set(['scheduled', 'queued', 'running', 'retrying', 'deferred']);
const RERUNNABLE = new Set(['succeeded', 'cancelled', 'dead_lettered']);
let job = null; // the job shown
let plannedFor = null; // `${jobId} ${fromStep}` of the preview shown

function onJob(j) {
  const changed = job?.jobId !== j.jobId;
  // A job that just finished (e.g. cancelled from here) gets its rerun preview now.
  const finishedNow = !changed && !RERUNNABLE.has(job.status) && RERUNNABLE.has(j.status);
  job = j;
  const role = session()?.role ?? 'admin';
  const mayAct = role === 'operator' || role === 'admin';
  $('#job-actions').hidden = !mayAct || (!UNFINISHED.has(j.status) && !RERUNNABLE.has(j.status));
  $('#job-cancel-box').hidden = !UNFINISHED.has(j.status);
  $('#job-rerun-box').hidden = !RERUNNABLE.has(j.status);
  if (changed) {
    showError('#job-action-error');
    text('#job-action-result', '');
  }
  if (changed || finishedNow) {
    clear($('#job-rerun-step')).append(el('option', { value: '' }, 'the start'));
    plannedFor = null;
    $('#job-rerun').disabled = true;
    $('#job-rerun-effects').hidden = true;
    // The steps to choose from come with the first preview.
    if (mayAct && RERUNNABLE.has(j.status)) void previewRerun(false);
  }
}

async function cancelJob() {
  showError('#job-action-error');
  const reason = $('#job-cancel-reason').value.trim();
  try {
    const r = await post('/v1/admin/bulk-actions', { action: 'cancel', ids: [job.jobId], ...(reason ? { reason } : {}) });
    $('#job-cancel-reason').value = '';
    clear($('#job-action-result')).append(
      'cancellation requested (',
      el('a', { href: `#bulk/${encodeURIComponent(r.bulkId)}` }, r.bulkId),
      '); the job stops at its next step',
    );
  } catch (err) {
    showError('#job-action-error', err);
  }
}

/** `say`: show the plan's words (not on the automatic first preview, which would hide a cancel's link). */
async function previewRerun(say = true) {
  showError('#job-action-error');
  const fromStep = $('#job-rerun-step').value;
  try {
    const p = await post(`/v1/admin/jobs/${encodeURIComponent(job.jobId)}/rerun`, { dryRun: true, ...(fromStep ? { fromStep } : {}) });
    const select = $('#job-rerun-step');
    if (select.options.length === 1) for (const e of p.effects) select.append(el('option', { value: e.step }, e.step));
    select.value = fromStep;
    const body = clear($('#job-rerun-effects tbody'));
    for (const e of p.effects)
      body.append(
        el(
          'tr',
          {},
          el('td', {}, e.step),
          el('td', { class: `a-${e.action}` }, e.action),
          el('td', {}, e.original.state),
          el('td', {}, el('code', {}, e.effectKey)),
        ),
      );
    $('#job-rerun-effects').hidden = false;
    if (say) text('#job-action-result', `rerun as ${p.rerunJobId} from ${p.fromStep ?? 'the start'}: ${summary(p.effects)}`);
    plannedFor = `${job.jobId} ${fromStep}`;
    $('#job-rerun').disabled = false;
  } catch (err) {
    showError('#job-action-error', err);
  }
}

function summary(effects) {
  const n = (a) => effects.filter((e) => e.action === a).length;
  return `${n('execute')} effect(s) execute again, ${n('reuse')} reused`;
}

async function rerun() {
  showError('#job-action-error');
  const fromStep = $('#job-rerun-step').value;
  if (plannedFor !== `${job.jobId} ${fromStep}`) {
    text('#job-action-error', 'preview the rerun from this step first');
    return;
  }
  try {
    const r = await post(`/v1/admin/jobs/${encodeURIComponent(job.jobId)}/rerun`, fromStep ? { fromStep } : {});
    $('#job-rerun').disabled = true;
    plannedFor = null;
    clear($('#job-action-result')).append(
      'rerun started: ',
      el('a', { id: 'job-rerun-link', href: `#jobs/${encodeURIComponent(r.rerunJobId)}` }, r.rerunJobId),
      ` (${summary(r.effects)})`,
    );
  } catch (err) {
    showError('#job-action-error', err);
  }
}

document.addEventListener('console:job', (ev) => onJob(ev.detail));
$('#job-cancel').addEventListener('click', () => void cancelJob());
$('#job-rerun-preview').addEventListener('click', () => void previewRerun(true));
$('#job-rerun').addEventListener('click', () => void rerun());
$('#job-rerun-step').addEventListener('change', () => {
  $('#job-rerun').disabled = true;
});
