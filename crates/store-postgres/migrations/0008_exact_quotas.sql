-- Exact quotas after recovery and one clock (docs/quotas.md). The same repair and
-- deferral column as crates/store-sqlite/migrations/0008_exact_quotas.sql.
--
-- A post settled `posted` by proof of an earlier attempt committed its new reservation
-- without a send time; a reservation without one counts "as now" in the rolling window
-- for ever. Such a row is given the time it was made as its send time: it then counts
-- once, no earlier than the publish it stands for (a later time only holds a window
-- longer), and reads as a well-formed row (sent no earlier than it was made). Only rows
-- whose sent_at is still NULL are touched.
UPDATE reservations SET sent_at = created_at
    WHERE state = 'committed' AND sent_at IS NULL;

ALTER TABLE posts ADD COLUMN deferred_until timestamptz;
CREATE INDEX posts_deferred ON posts (deferred_until) WHERE deferred_until IS NOT NULL;

-- Whose clock decides: the database's (every installation agrees by construction), or,
-- for tests that step a clock of their own, each caller's. One row; only the owner
-- writes it, and doctor reports a ledger that decides by its callers' clocks.
CREATE TABLE ledger_clock (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    source   text    NOT NULL CHECK (source IN ('database', 'caller'))
);
INSERT INTO ledger_clock (source) VALUES ('database');
