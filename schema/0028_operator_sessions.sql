-- The console's sessions (issue 39 §4, F10). The console used to keep the operator's admin key
-- itself in sessionStorage, readable by any script on the origin, with no expiry. It now trades
-- the key once (POST /v1/admin/session) for a random token in an HttpOnly, SameSite=Strict
-- cookie. Only the token's SHA-256 is stored: a copy of this table opens nothing.
--
-- The session names the key that opened it (key_hash), not a role: every request reads the
-- operator's role and tenants from the configured key again, so removing a key from
-- ADMIN_API_KEYS (rotation, departure) or changing its role takes effect on its sessions at once.
CREATE TABLE operator_sessions (
  token_hash    text PRIMARY KEY,          -- hex SHA-256 of the cookie's token
  operator      text NOT NULL,
  key_hash      text NOT NULL,             -- the configured key's digest (server/auth.ts)
  key_id        text NOT NULL,             -- the key's short ID, for audit rows written through the session
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  -- Absolute timeout: fixed at creation; use never extends it.
  expires_at    timestamptz NOT NULL,
  -- Sign-out (DELETE /v1/admin/session): the row stays, ended, until it expires.
  ended_at      timestamptz,
  remote_addr   text
);
-- Expired rows are removed when sessions are created (store/sessions.ts): no retention job needed.
CREATE INDEX operator_sessions_expires ON operator_sessions (expires_at);
