-- Nothing changes silently, and history stays (docs/stores.md). The same triggers as
-- crates/store-postgres/migrations/0010_hardened_ledger.sql.

-- A change of what a post will do or did that its status change does not explain
-- appends a `changed` event naming each field with its value before and after, whatever
-- SQL made it: the channel, whether it is a test, the schedule, a review's counters, and
-- an approval, a platform id or a permalink replaced rather than first set. Like the status event, a write that did not
-- come from airlock (version unchanged) is recorded as hand-written SQL. Times are
-- stored as airlock writes them; values are cut to 200 characters.
CREATE TRIGGER posts_field_event AFTER UPDATE ON posts
WHEN NEW.channel IS NOT OLD.channel
  OR NEW.test IS NOT OLD.test
  OR NEW.scheduled_at IS NOT OLD.scheduled_at
  OR (NEW.status = OLD.status AND (NEW.approved_by IS NOT OLD.approved_by
                                   OR NEW.approved_hash IS NOT OLD.approved_hash))
  OR NEW.quarantined_at IS NOT OLD.quarantined_at
  OR NEW.revisions IS NOT OLD.revisions
  OR (OLD.platform_post_id IS NOT NULL AND NEW.platform_post_id IS NOT OLD.platform_post_id)
  OR (OLD.permalink IS NOT NULL AND NEW.permalink IS NOT OLD.permalink)
BEGIN
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
    VALUES (NEW.id,
            CASE WHEN NEW.version <> OLD.version THEN NEW.updated_at
                 ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END,
            'changed', NEW.status, NEW.status,
            CASE WHEN NEW.version <> OLD.version THEN COALESCE(NEW.event_actor, 'sql') ELSE 'sql' END,
            CASE WHEN NEW.version <> OLD.version THEN '' ELSE 'by a hand-written SQL statement: ' END
            || substr(
                 CASE WHEN NEW.channel IS NOT OLD.channel
                      THEN '; channel: ' || COALESCE(substr(OLD.channel, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.channel, 1, 200), 'none')
                      ELSE '' END
              || CASE WHEN NEW.test IS NOT OLD.test
                      THEN '; test: ' || CASE OLD.test WHEN 1 THEN 'true' ELSE 'false' END
                           || ' -> ' || CASE NEW.test WHEN 1 THEN 'true' ELSE 'false' END
                      ELSE '' END
              || CASE WHEN NEW.scheduled_at IS NOT OLD.scheduled_at
                      THEN '; scheduled_at: ' || COALESCE(substr(OLD.scheduled_at, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.scheduled_at, 1, 200), 'none')
                      ELSE '' END
              || CASE WHEN NEW.status = OLD.status AND NEW.approved_by IS NOT OLD.approved_by
                      THEN '; approved_by: ' || COALESCE(substr(OLD.approved_by, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.approved_by, 1, 200), 'none')
                      ELSE '' END
              || CASE WHEN NEW.status = OLD.status AND NEW.approved_hash IS NOT OLD.approved_hash
                      THEN '; approved_hash: ' || COALESCE(substr(OLD.approved_hash, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.approved_hash, 1, 200), 'none')
                      ELSE '' END
              || CASE WHEN NEW.quarantined_at IS NOT OLD.quarantined_at
                      THEN '; quarantined_at: ' || COALESCE(substr(OLD.quarantined_at, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.quarantined_at, 1, 200), 'none')
                      ELSE '' END
              || CASE WHEN NEW.revisions IS NOT OLD.revisions
                      THEN '; revisions: ' || COALESCE(OLD.revisions, 'none')
                           || ' -> ' || COALESCE(NEW.revisions, 'none')
                      ELSE '' END
              || CASE WHEN OLD.platform_post_id IS NOT NULL
                           AND NEW.platform_post_id IS NOT OLD.platform_post_id
                      THEN '; platform_post_id: ' || COALESCE(substr(OLD.platform_post_id, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.platform_post_id, 1, 200), 'none')
                      ELSE '' END
              || CASE WHEN OLD.permalink IS NOT NULL AND NEW.permalink IS NOT OLD.permalink
                      THEN '; permalink: ' || COALESCE(substr(OLD.permalink, 1, 200), 'none')
                           || ' -> ' || COALESCE(substr(NEW.permalink, 1, 200), 'none')
                      ELSE '' END,
               3));
END;

-- What was sent and what was counted is history: an intent that ended (succeeded,
-- rejected, not_sent) and a reservation that was committed or released never change,
-- and neither is ever deleted. An intent `sending` or `unknown` and a reservation
-- `reserved` are still open.
CREATE TRIGGER intents_settled_permanent BEFORE UPDATE ON intents
WHEN OLD.phase IN ('succeeded', 'rejected', 'not_sent')
BEGIN
    SELECT RAISE(ABORT, 'airlock: an intent that ended is permanent');
END;
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents
BEGIN
    SELECT RAISE(ABORT, 'airlock: intents rows are never deleted');
END;
CREATE TRIGGER reservations_settled_permanent BEFORE UPDATE ON reservations
WHEN OLD.state IN ('committed', 'released')
BEGIN
    SELECT RAISE(ABORT, 'airlock: a reservation that ended is permanent');
END;
CREATE TRIGGER reservations_no_delete BEFORE DELETE ON reservations
BEGIN
    SELECT RAISE(ABORT, 'airlock: reservations rows are never deleted');
END;
