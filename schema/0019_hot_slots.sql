-- Per-job cost (issue 11): a concurrency slot taken and freed without index writes.
-- Every effect with a cap takes a slot row of each scope and frees it again (two updates of
-- `lease_id` and `expires_at` per row). The partial index on `lease_id` made each of those
-- updates a new index entry in both of the table's indexes; a job taking the same free slot
-- again and again (the lowest free `n`) left a run of dead entries under one key that every
-- acquisition walked until a vacuum. Without it, the updates change no indexed column and,
-- with room left on each page (fillfactor 50), are heap-only (HOT): no index write, and the
-- primary key keeps one entry per slot. The lease now names its slots (`slot_scopes`,
-- `slot_ns`): freeing and renewing a lease find them by primary key through it.
-- Measured on this machine (loopback Postgres 15, one connection, 1,000 acquire + release
-- cycles of two scopes per round): 1.2-2.4 ms per cycle before, 0.8-1.5 ms after. The gap is
-- the dead entries, so it grows with use: the bench's 200-job effect section, on a fresh
-- database, showed no difference in time (its claim writes 22 WAL records instead of 26).
-- Old workers still free their own leases during a rolling deploy, by a scan of this table.
ALTER TABLE concurrency_leases ADD COLUMN slot_scopes text[], ADD COLUMN slot_ns int[];

-- Leases held while this runs name their slots too, so the new statements free and renew them.
UPDATE concurrency_leases l
   SET slot_scopes = s.scopes, slot_ns = s.ns
  FROM (SELECT lease_id, array_agg(scope ORDER BY scope) AS scopes, array_agg(n ORDER BY scope) AS ns
          FROM concurrency_slots WHERE lease_id IS NOT NULL GROUP BY lease_id) s
 WHERE l.id = s.lease_id;

DROP INDEX concurrency_slots_lease;
ALTER TABLE concurrency_slots SET (fillfactor = 50);
-- Rewrites the (small) table so its existing pages have that room now.
CLUSTER concurrency_slots USING concurrency_slots_pkey;

-- Nothing reads leases by scope or by expiry (a slot row carries its own expiry, and an expired
-- lease is deleted when its slot is taken over): two index writes per lease that nobody used.
DROP INDEX concurrency_leases_scope;
DROP INDEX concurrency_leases_expiry;
