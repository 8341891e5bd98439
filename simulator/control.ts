import type { IncomingMessage } from 'node:http';
import { parseFaultRequest } from './faults.js';
import { errorReply, parseJsonObject, readBody, type Reply } from './http.js';
import type { SimState } from './state.js';

export interface ControlDeps {
  state: SimState;
  /** Cancels background work (transcription timers, webhook deliveries) of the old state. */
  onReset: () => void;
  /** Ends held delays (fault `delayMs`) of requests to `path`, or all, now, as if they had run out; returns how many. */
  releaseHolds: (path?: string) => number;
}

async function addFault(req: IncomingMessage, state: SimState): Promise<Reply> {
  const parsed = parseJsonObject(await readBody(req));
  if (!parsed.ok) return parsed.reply;
  const request = parseFaultRequest(parsed.value);
  if (!request.ok) return errorReply(400, 'invalid_fault', { message: request.message });
  state.faults.add(request.value);
  return { status: 200, body: { queued: request.value, pending: state.faults.pending() } };
}

/** Body `{"path": "/v1/charges"}` releases only that path's holds; an empty body releases all. */
async function releaseHolds(req: IncomingMessage, deps: ControlDeps): Promise<Reply> {
  const raw = await readBody(req);
  if (raw.trim() === '') return { status: 200, body: { released: deps.releaseHolds() } };
  const parsed = parseJsonObject(raw);
  if (!parsed.ok) return parsed.reply;
  const path = parsed.value.path;
  if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/v1/'))) {
    return errorReply(400, 'invalid_release', { message: 'path must be a string starting with /v1/, e.g. "/v1/charges"' });
  }
  return { status: 200, body: { released: deps.releaseHolds(path) } };
}

/** The /__sim control API used by tests and drills; never exposed by real providers. */
export async function handleControl(req: IncomingMessage, method: string, path: string, deps: ControlDeps): Promise<Reply> {
  const route = `${method} ${path}`;
  switch (route) {
    case 'POST /__sim/faults':
      return addFault(req, deps.state);
    case 'GET /__sim/faults':
      return { status: 200, body: deps.state.faults.pending() };
    case 'GET /__sim/effects':
      return { status: 200, body: deps.state.effectsSnapshot() };
    case 'POST /__sim/reset':
      req.resume();
      deps.onReset();
      deps.state.reset();
      return { status: 204 };
    case 'POST /__sim/holds/release':
      // Lets a test decide when a held request finishes, instead of guessing a delay.
      return releaseHolds(req, deps);
    case 'GET /__sim/health':
      return { status: 200, body: { ok: true } };
    default:
      return errorReply(404, 'not_found');
  }
}
