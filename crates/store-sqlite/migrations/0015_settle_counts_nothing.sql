-- Faster settles (issue 28): committing a reservation that was reserved, or the reverse,
-- with its id, channel, stamps and cost as they were, changes none of the hours it counts
-- in nor whether quota_counted counts it (it reads only those). The update trigger of
-- 0013 is made again, the same, run only for the other writes. The same rule as
-- crates/store-postgres/migrations/0015_settle_counts_nothing.sql.
DROP TRIGGER reservations_quota_hours_update;
CREATE TRIGGER reservations_quota_hours_update
    AFTER UPDATE OF id, channel, state, created_at, sent_at, cost_usd_micros ON reservations
    WHEN NOT COALESCE(OLD.id IS NEW.id AND OLD.channel IS NEW.channel
        AND OLD.state IN ('reserved', 'committed') AND NEW.state IN ('reserved', 'committed')
        AND OLD.created_at IS NEW.created_at AND OLD.sent_at IS NEW.sent_at
        AND OLD.cost_usd_micros IS NEW.cost_usd_micros
        AND typeof(OLD.cost_usd_micros) IS typeof(NEW.cost_usd_micros), 0)
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
