-- A ledger its own runtime role cannot bend (docs/stores.md#hardened-postgresql). The
-- history triggers are the same as crates/store-sqlite/migrations/0010_history.sql.

-- Locks only airlock's functions can take. A row lock needs UPDATE on the table, which
-- no role but the owner holds, whereas any role that can log in may take any advisory
-- lock: the emergency stop (pauses) and the rolling window are locked here, so a
-- stranger's session cannot hold them.
CREATE TABLE ledger_locks (
    name text PRIMARY KEY
);
INSERT INTO ledger_locks (name) VALUES ('pauses'), ('window');

-- The limits a claim is decided against, written by the owner from the configuration
-- (`airlock migrate`, or any store opened with the owner's URL): the functions read
-- them here, so the runtime role cannot widen a limit by what it passes.
CREATE TABLE ledger_limits (
    only_row     boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    window_us    bigint      NOT NULL CHECK (window_us > 0),
    window_limit bigint      NOT NULL CHECK (window_limit >= 0),
    updated_at   timestamptz NOT NULL
);
CREATE TABLE channel_limits (
    channel        text        PRIMARY KEY,
    daily_limit    bigint      NOT NULL CHECK (daily_limit >= 0),
    zone           text        NOT NULL,
    -- The monthly budget and what a post without and with a link costs, in
    -- micro-dollars; NULL for a channel without a budget.
    budget_monthly bigint      CHECK (budget_monthly >= 0),
    post_cost      bigint      CHECK (post_cost >= 0),
    url_post_cost  bigint      CHECK (url_post_cost >= post_cost),
    -- Whether its kind publishes test posts (a sandbox): elsewhere a test post counts.
    tests          boolean     NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL,
    CHECK ((budget_monthly IS NULL) = (post_cost IS NULL)
           AND (post_cost IS NULL) = (url_post_cost IS NULL))
);

-- A change of what a post will do or did that its status change does not explain
-- appends a `changed` event naming each field with its value before and after, whatever
-- SQL made it: the channel, whether it is a test, the schedule, a review's counters, and
-- an approval, a platform id or a permalink replaced rather than first set. Like the status event, a write that did not
-- come from airlock (version unchanged) is recorded as hand-written SQL.
CREATE FUNCTION airlock_event_value(p_value text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(left(p_value, 200), 'none')
$$;
CREATE FUNCTION airlock_event_time(p_at timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT airlock_event_value(to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
$$;
CREATE FUNCTION airlock_posts_field_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    by_airlock boolean := NEW.version <> OLD.version;
    same_status boolean := NEW.status = OLD.status;
    changes text := '';
BEGIN
    IF NEW.channel IS DISTINCT FROM OLD.channel THEN
        changes := changes || '; channel: ' || airlock_event_value(OLD.channel)
            || ' -> ' || airlock_event_value(NEW.channel);
    END IF;
    IF NEW.test IS DISTINCT FROM OLD.test THEN
        changes := changes || '; test: ' || OLD.test || ' -> ' || NEW.test;
    END IF;
    IF NEW.scheduled_at IS DISTINCT FROM OLD.scheduled_at THEN
        changes := changes || '; scheduled_at: ' || airlock_event_time(OLD.scheduled_at)
            || ' -> ' || airlock_event_time(NEW.scheduled_at);
    END IF;
    IF same_status AND NEW.approved_by IS DISTINCT FROM OLD.approved_by THEN
        changes := changes || '; approved_by: ' || airlock_event_value(OLD.approved_by)
            || ' -> ' || airlock_event_value(NEW.approved_by);
    END IF;
    IF same_status AND NEW.approved_hash IS DISTINCT FROM OLD.approved_hash THEN
        changes := changes || '; approved_hash: ' || airlock_event_value(OLD.approved_hash)
            || ' -> ' || airlock_event_value(NEW.approved_hash);
    END IF;
    IF NEW.quarantined_at IS DISTINCT FROM OLD.quarantined_at THEN
        changes := changes || '; quarantined_at: ' || airlock_event_time(OLD.quarantined_at)
            || ' -> ' || airlock_event_time(NEW.quarantined_at);
    END IF;
    IF NEW.revisions IS DISTINCT FROM OLD.revisions THEN
        changes := changes || '; revisions: ' || airlock_event_value(OLD.revisions::text)
            || ' -> ' || airlock_event_value(NEW.revisions::text);
    END IF;
    IF OLD.platform_post_id IS NOT NULL
       AND NEW.platform_post_id IS DISTINCT FROM OLD.platform_post_id THEN
        changes := changes || '; platform_post_id: ' || airlock_event_value(OLD.platform_post_id)
            || ' -> ' || airlock_event_value(NEW.platform_post_id);
    END IF;
    IF OLD.permalink IS NOT NULL AND NEW.permalink IS DISTINCT FROM OLD.permalink THEN
        changes := changes || '; permalink: ' || airlock_event_value(OLD.permalink)
            || ' -> ' || airlock_event_value(NEW.permalink);
    END IF;
    IF changes <> '' THEN
        INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
        VALUES (NEW.id,
                CASE WHEN by_airlock THEN NEW.updated_at ELSE now() END,
                'changed', NEW.status, NEW.status,
                CASE WHEN by_airlock THEN COALESCE(NEW.event_actor, 'sql') ELSE 'sql' END,
                CASE WHEN by_airlock THEN '' ELSE 'by a hand-written SQL statement: ' END
                    || substr(changes, 3));
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER posts_field_event AFTER UPDATE ON posts
    FOR EACH ROW WHEN (NEW.channel IS DISTINCT FROM OLD.channel
        OR NEW.test IS DISTINCT FROM OLD.test
        OR NEW.scheduled_at IS DISTINCT FROM OLD.scheduled_at
        OR NEW.approved_by IS DISTINCT FROM OLD.approved_by
        OR NEW.approved_hash IS DISTINCT FROM OLD.approved_hash
        OR NEW.quarantined_at IS DISTINCT FROM OLD.quarantined_at
        OR NEW.revisions IS DISTINCT FROM OLD.revisions
        OR (OLD.platform_post_id IS NOT NULL
            AND NEW.platform_post_id IS DISTINCT FROM OLD.platform_post_id)
        OR (OLD.permalink IS NOT NULL AND NEW.permalink IS DISTINCT FROM OLD.permalink))
    EXECUTE FUNCTION airlock_posts_field_event();

-- What was sent and what was counted is history: an intent that ended (succeeded,
-- rejected, not_sent) and a reservation that was committed or released never change,
-- and neither is ever deleted. An intent `sending` or `unknown` and a reservation
-- `reserved` are still open.
CREATE FUNCTION airlock_history_is_permanent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        RAISE EXCEPTION 'airlock: % row % ended and is permanent', TG_TABLE_NAME, OLD.id
            USING ERRCODE = 'AL007';
    END IF;
    RAISE EXCEPTION 'airlock: % rows are never deleted', TG_TABLE_NAME USING ERRCODE = 'AL007';
END $$;
CREATE TRIGGER intents_settled_permanent BEFORE UPDATE ON intents
    FOR EACH ROW WHEN (OLD.phase IN ('succeeded', 'rejected', 'not_sent'))
    EXECUTE FUNCTION airlock_history_is_permanent();
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents
    FOR EACH ROW EXECUTE FUNCTION airlock_history_is_permanent();
CREATE TRIGGER intents_no_truncate BEFORE TRUNCATE ON intents
    FOR EACH STATEMENT EXECUTE FUNCTION airlock_history_is_permanent();
CREATE TRIGGER reservations_settled_permanent BEFORE UPDATE ON reservations
    FOR EACH ROW WHEN (OLD.state IN ('committed', 'released'))
    EXECUTE FUNCTION airlock_history_is_permanent();
CREATE TRIGGER reservations_no_delete BEFORE DELETE ON reservations
    FOR EACH ROW EXECUTE FUNCTION airlock_history_is_permanent();
CREATE TRIGGER reservations_no_truncate BEFORE TRUNCATE ON reservations
    FOR EACH STATEMENT EXECUTE FUNCTION airlock_history_is_permanent();
