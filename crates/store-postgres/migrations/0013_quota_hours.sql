-- Bounded quota decisions (issue 28). A claim decided its quota by reading and checking
-- every live reservation since the day before, under the window's lock, so the n-th
-- claim of a day read n rows. These tables let it prove in a few reads that no limit is
-- near, and read the rows only when one may be (airlock_quota_decision).
--
-- quota_hours: per channel and UTC hour, how many live reservations have a stamp (the
-- time made, the time sent) in that hour; a row with stamps in two hours counts in both,
-- so a sum over hours never undercounts a period. `latest` is the latest stamp counted
-- in the hour; it is never lowered, so it never understates a future stamp. Kept by a
-- trigger in the reservation's own transaction, on the shard of the window slot that
-- transaction holds (`airlock.slot`, 0 without one), so that claims in flight at once
-- never wait for each other's counter row: an hour's figures are the sums (live) and
-- the greatest (latest) over its shards.
CREATE TABLE quota_hours (
    channel text        NOT NULL,
    hour    timestamptz NOT NULL,
    shard   integer     NOT NULL,
    live    bigint      NOT NULL,
    latest  timestamptz NOT NULL,
    PRIMARY KEY (channel, hour, shard)
);
CREATE INDEX quota_hours_hour ON quota_hours (hour);

-- The window's slots: a claim far from every limit holds one of them instead of the
-- whole window, and counts every other slot as a claim in flight (airlock_claim_post).
INSERT INTO ledger_locks (name)
    SELECT 'window slot ' || lpad(g::text, 2, '0') FROM generate_series(1, 16) g;

-- quota_suspects: live reservations no decision may count without reading them (an
-- unknown state, a time that is not finite, sent before it was made, a channel no
-- configuration can name, a negative cost). While one is listed, claims take the exact
-- path, which refuses it (AL018) as before.
CREATE TABLE quota_suspects (id bigint PRIMARY KEY);

-- Whether a reservation is live and cannot be counted without reading it (the clock-free
-- half of airlock_store::QuotaRows::check; the clock half is `latest` above).
CREATE FUNCTION airlock_reservation_suspect(r reservations) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT r.state IS DISTINCT FROM 'released' AND (
        r.state NOT IN ('reserved', 'committed')
        OR NOT isfinite(r.created_at)
        OR (r.sent_at IS NOT NULL AND (NOT isfinite(r.sent_at)
                                       OR r.sent_at + interval '5 minutes' < r.created_at))
        OR r.channel !~ '^[a-z0-9][a-z0-9._-]*$' OR octet_length(r.channel) > 64
        OR r.cost_usd_micros < 0);
$$;

-- The UTC hours a reservation counts in, each with its latest stamp there: none when it
-- is released or suspect.
CREATE FUNCTION airlock_reservation_hours(r reservations)
RETURNS TABLE (hour timestamptz, latest timestamptz) LANGUAGE sql STABLE AS $$
    SELECT date_trunc('hour', s, 'UTC'), max(s)
    FROM unnest(ARRAY[r.created_at, r.sent_at]) s
    WHERE s IS NOT NULL AND r.state <> 'released' AND NOT airlock_reservation_suspect(r)
    GROUP BY 1;
$$;

CREATE FUNCTION airlock_reservations_hours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    h record;
    my_shard integer := COALESCE(NULLIF(current_setting('airlock.slot', true), '')::integer, 0);
BEGIN
    FOR h IN
        SELECT o.hour AS old_hour, n.hour AS new_hour, n.latest
        FROM (SELECT * FROM airlock_reservation_hours(OLD) WHERE TG_OP = 'UPDATE') o
        FULL JOIN airlock_reservation_hours(NEW) n
          ON o.hour = n.hour AND OLD.channel = NEW.channel
    LOOP
        -- Counted where it was, and still: only a later stamp is written.
        CONTINUE WHEN h.old_hour IS NOT NULL AND h.new_hour IS NOT NULL
            AND h.latest <= (SELECT max(q.latest) FROM quota_hours q
                             WHERE q.channel = NEW.channel AND q.hour = h.new_hour);
        INSERT INTO quota_hours AS q (channel, hour, shard, live, latest)
            VALUES (CASE WHEN h.new_hour IS NULL THEN OLD.channel ELSE NEW.channel END,
                    COALESCE(h.new_hour, h.old_hour), my_shard,
                    CASE WHEN h.old_hour IS NULL THEN 1
                         WHEN h.new_hour IS NULL THEN -1 ELSE 0 END,
                    COALESCE(h.latest, '-infinity'))
            ON CONFLICT (channel, hour, shard) DO UPDATE
            SET live = q.live + EXCLUDED.live, latest = greatest(q.latest, EXCLUDED.latest);
    END LOOP;
    IF airlock_reservation_suspect(NEW) THEN
        INSERT INTO quota_suspects (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    ELSIF TG_OP = 'UPDATE' THEN
        DELETE FROM quota_suspects WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER reservations_quota_hours
    AFTER INSERT OR UPDATE OF channel, state, created_at, sent_at, cost_usd_micros
    ON reservations FOR EACH ROW EXECUTE FUNCTION airlock_reservations_hours();

INSERT INTO quota_hours (channel, hour, shard, live, latest)
    SELECT r.channel, h.hour, 0, count(*), max(h.latest)
    FROM reservations r, airlock_reservation_hours(r) h
    GROUP BY r.channel, h.hour;
INSERT INTO quota_suspects (id)
    SELECT r.id FROM reservations r WHERE airlock_reservation_suspect(r);
