-- Bounded quota decisions (issue 28), as crates/store-postgres/migrations/0013_quota_hours.sql
-- without its slots (SQLite has one writer at a time). A claim that finds room for one
-- more publish in these counts (airlock_store::room_from_hours) reads no reservation.
--
-- quota_hours: per channel and UTC hour (`YYYY-MM-DDTHH`, the first 13 characters of the
-- ledger's fixed-width times), how many live reservations have a stamp in that hour; a
-- row with stamps in two hours counts in both, and while unsent also in the hour
-- 'unsent'. `latest` is the latest stamp counted in the hour, never lowered ('' for
-- 'unsent'). Kept by the triggers below in the reservation's own transaction.
CREATE TABLE quota_hours (
    channel TEXT    NOT NULL,
    hour    TEXT    NOT NULL,
    live    INTEGER NOT NULL,
    latest  TEXT    NOT NULL,
    PRIMARY KEY (channel, hour)
) WITHOUT ROWID;

-- quota_suspects: live reservations no count may stand for: an unknown state, a time not
-- in the ledger's own form (or not a real instant), sent before it was made, a channel no
-- configuration can name (a NUL byte included), a cost that is not a whole number of
-- micro-dollars or is negative. While one is listed, the rows decide, and
-- their check refuses it (CorruptQuota) as before.
-- The triggers also read it to know which hours an updated row stood in: it is never
-- edited by hand (doctor checks it).
CREATE TABLE quota_suspects (id INTEGER PRIMARY KEY);
CREATE INDEX quota_hours_hour ON quota_hours (hour);

-- The live rows a count may stand for: reserved or committed, times in the ledger's own
-- form (and real instants), sent no earlier than the clock allowance before it was made,
-- a channel a configuration can name, a whole non-negative cost. Any other row that is
-- not released is suspect.
CREATE VIEW quota_counted AS
SELECT r.* FROM reservations r
WHERE r.state IN ('reserved', 'committed')
  AND strftime('%Y-%m-%dT%H:%M:%fZ', r.created_at) IS r.created_at
  AND (r.sent_at IS NULL OR (strftime('%Y-%m-%dT%H:%M:%fZ', r.sent_at) IS r.sent_at
       AND r.sent_at >= strftime('%Y-%m-%dT%H:%M:%fZ', r.created_at, '-5 minutes')))
  AND typeof(r.channel) = 'text' AND instr(CAST(r.channel AS BLOB), x'00') = 0
  AND r.channel GLOB '[a-z0-9]*' AND r.channel NOT GLOB '*[^a-z0-9._-]*'
  AND length(CAST(r.channel AS BLOB)) <= 64
  AND typeof(r.cost_usd_micros) = 'integer' AND r.cost_usd_micros >= 0;

-- The hours each counted row stands in, with its latest stamp there.
CREATE VIEW quota_counted_hours AS
SELECT id, channel, substr(created_at, 1, 13) AS hour,
       CASE WHEN substr(sent_at, 1, 13) = substr(created_at, 1, 13)
            THEN max(created_at, sent_at) ELSE created_at END AS latest
FROM quota_counted
UNION ALL
SELECT id, channel, COALESCE(substr(sent_at, 1, 13), 'unsent'), COALESCE(sent_at, '')
FROM quota_counted
WHERE sent_at IS NULL OR substr(sent_at, 1, 13) <> substr(created_at, 1, 13);

-- What quota_hours should hold, recounted from the rows: the counts of the rows already
-- here, and doctor's check of the kept ones (Store::check_invariants).
CREATE VIEW quota_hours_recount AS
SELECT channel, hour, count(*) AS live, max(latest) AS latest
FROM quota_counted_hours GROUP BY channel, hour;

-- A row is read back through the views by its id. An update takes the row's old hours out
-- (it was counted when live and not suspect) and puts its new ones in (one writer at a
-- time: no order of row locks to keep).
CREATE TRIGGER reservations_quota_hours_insert AFTER INSERT ON reservations
BEGIN
    INSERT INTO quota_hours (channel, hour, live, latest)
        SELECT channel, hour, 1, latest FROM quota_counted_hours WHERE id = NEW.id
        ON CONFLICT (channel, hour) DO UPDATE
        SET live = live + 1, latest = max(latest, excluded.latest);
    INSERT OR IGNORE INTO quota_suspects (id)
        SELECT NEW.id WHERE NEW.state IS NOT 'released'
            AND NOT EXISTS (SELECT 1 FROM quota_counted WHERE id = NEW.id);
END;

CREATE TRIGGER reservations_quota_hours_update
    AFTER UPDATE OF id, channel, state, created_at, sent_at, cost_usd_micros ON reservations
BEGIN
    UPDATE quota_hours SET live = live - 1
        WHERE channel = OLD.channel
          AND hour IN (substr(OLD.created_at, 1, 13),
                       COALESCE(substr(OLD.sent_at, 1, 13), 'unsent'))
          AND OLD.state IN ('reserved', 'committed')
          AND OLD.id NOT IN (SELECT id FROM quota_suspects);
    INSERT INTO quota_hours (channel, hour, live, latest)
        SELECT channel, hour, 1, latest FROM quota_counted_hours WHERE id = NEW.id
        ON CONFLICT (channel, hour) DO UPDATE
        SET live = live + 1, latest = max(latest, excluded.latest);
    DELETE FROM quota_suspects WHERE id IN (OLD.id, NEW.id);
    INSERT OR IGNORE INTO quota_suspects (id)
        SELECT NEW.id WHERE NEW.state IS NOT 'released'
            AND NOT EXISTS (SELECT 1 FROM quota_counted WHERE id = NEW.id);
END;

INSERT INTO quota_hours (channel, hour, live, latest)
    SELECT channel, hour, live, latest FROM quota_hours_recount;
INSERT INTO quota_suspects (id)
    SELECT id FROM reservations WHERE state IS NOT 'released'
        AND id NOT IN (SELECT id FROM quota_counted);
