-- Bounded quota decisions (issue 28). A claim decided its quota by reading and checking
-- every live reservation since the day before, under the window's lock, so the n-th
-- claim of a day read n rows. These tables let it prove in a few reads that no limit is
-- near, and read the rows only when one may be (airlock_quota_decision).
--
-- quota_hours: per channel and UTC hour, how many live reservations have a stamp (the
-- time made, the time sent) in that hour; a row with stamps in two hours counts in both,
-- so a sum over hours never undercounts a period; an unsent one also counts in the hour
-- '-infinity', which the rolling window adds in. `latest` is the latest stamp counted
-- in the hour; it is never lowered, so it never understates a future stamp. Kept by a
-- trigger in the reservation's own transaction, on a shard of its writer's
-- (airlock_count_hour), so that claims in flight at once never wait for each other's
-- counter row: an hour's figures are the sums (live) and the greatest (latest) over its
-- shards.
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
-- half of airlock_store::QuotaRows::check; the clock half is `latest` above). STABLE, not
-- IMMUTABLE, so that callers inline it (timestamptz arithmetic is STABLE).
CREATE FUNCTION airlock_reservation_suspect(r reservations) RETURNS boolean
LANGUAGE sql STABLE AS $$
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

-- Adds `n` to `p_channel`'s hour `p_hour` on the caller's shard, raising its latest stamp
-- to `p_latest`. A transaction holding a window slot writes that slot's shard (1 to 16);
-- any other spreads by its backend (17 to 32), so that sends, commits and releases on
-- one channel seldom wait for each other's counter row.
CREATE FUNCTION airlock_count_hour(p_channel text, p_hour timestamptz, p_latest timestamptz,
    n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO quota_hours AS q (channel, hour, shard, live, latest)
        VALUES (p_channel, p_hour,
                COALESCE(NULLIF(NULLIF(current_setting('airlock.slot', true), ''), '0')::integer,
                         17 + pg_backend_pid() % 16),
                n, p_latest)
        ON CONFLICT (channel, hour, shard) DO UPDATE
        SET live = q.live + EXCLUDED.live, latest = greatest(q.latest, EXCLUDED.latest);
END $$;

-- Keeps quota_hours and quota_suspects. A counted row stands in the hour it was made, in
-- the hour it was sent when that is another, and while unsent in the pseudo-hour
-- '-infinity' (the rolling window counts an unsent row as now, whenever it was made). A
-- row counted before and after a write moves only by the hours it gained or lost; a later
-- stamp in an hour it keeps is written only when it is that hour's latest. Plain PL/pgSQL
-- (its plans are kept per session): this runs in every claim.
CREATE FUNCTION airlock_reservations_hours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    same boolean := TG_OP = 'UPDATE' AND OLD.channel = NEW.channel;
    o_hours timestamptz[] := '{}';
    o_latest timestamptz[] := '{}';
    n_hours timestamptz[] := '{}';
    n_latest timestamptz[] := '{}';
    k integer;
    d_channel text[] := '{}';
    d_hour timestamptz[] := '{}';
    d_latest timestamptz[] := '{}';
    d_n integer[] := '{}';
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.state <> 'released' AND NOT airlock_reservation_suspect(OLD) THEN
        o_hours := ARRAY[date_trunc('hour', OLD.created_at, 'UTC')];
        o_latest := ARRAY[OLD.created_at];
        IF OLD.sent_at IS NULL THEN
            o_hours := o_hours || '-infinity'::timestamptz;
            o_latest := o_latest || '-infinity'::timestamptz;
        ELSIF date_trunc('hour', OLD.sent_at, 'UTC') = o_hours[1] THEN
            o_latest[1] := greatest(OLD.created_at, OLD.sent_at);
        ELSE
            o_hours := o_hours || date_trunc('hour', OLD.sent_at, 'UTC');
            o_latest := o_latest || OLD.sent_at;
        END IF;
    END IF;
    IF NEW.state <> 'released' AND NOT airlock_reservation_suspect(NEW) THEN
        n_hours := ARRAY[date_trunc('hour', NEW.created_at, 'UTC')];
        n_latest := ARRAY[NEW.created_at];
        IF NEW.sent_at IS NULL THEN
            n_hours := n_hours || '-infinity'::timestamptz;
            n_latest := n_latest || '-infinity'::timestamptz;
        ELSIF date_trunc('hour', NEW.sent_at, 'UTC') = n_hours[1] THEN
            n_latest[1] := greatest(NEW.created_at, NEW.sent_at);
        ELSE
            n_hours := n_hours || date_trunc('hour', NEW.sent_at, 'UTC');
            n_latest := n_latest || NEW.sent_at;
        END IF;
    ELSIF NEW.state <> 'released' THEN
        INSERT INTO quota_suspects (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
    -- The rows to write, then written in one order (channel, hour), so that two writers
    -- never lock the same two counter rows the other way round.
    FOR i IN 1 .. cardinality(o_hours) LOOP
        IF NOT same OR NOT o_hours[i] = ANY (n_hours) THEN
            d_channel := d_channel || OLD.channel;
            d_hour := d_hour || o_hours[i];
            d_latest := d_latest || '-infinity'::timestamptz;
            d_n := d_n || -1;
        END IF;
    END LOOP;
    FOR i IN 1 .. cardinality(n_hours) LOOP
        k := CASE WHEN same THEN array_position(o_hours, n_hours[i]) END;
        IF k IS NULL THEN
            d_channel := d_channel || NEW.channel;
            d_hour := d_hour || n_hours[i];
            d_latest := d_latest || n_latest[i];
            d_n := d_n || 1;
        ELSIF n_latest[i] > o_latest[k]
              AND n_latest[i] > (SELECT max(q.latest) FROM quota_hours q
                                 WHERE q.channel = NEW.channel AND q.hour = n_hours[i]) THEN
            d_channel := d_channel || NEW.channel;
            d_hour := d_hour || n_hours[i];
            d_latest := d_latest || n_latest[i];
            d_n := d_n || 0;
        END IF;
    END LOOP;
    IF cardinality(d_n) = 1 THEN
        PERFORM airlock_count_hour(d_channel[1], d_hour[1], d_latest[1], d_n[1]);
    ELSIF cardinality(d_n) > 1 THEN
        PERFORM airlock_count_hour(d.c, d.h, d.l, d.n)
        FROM unnest(d_channel, d_hour, d_latest, d_n) AS d(c, h, l, n) ORDER BY d.c, d.h;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.state <> 'released' AND cardinality(o_hours) = 0
       AND (NEW.state = 'released' OR cardinality(n_hours) > 0) THEN
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
    GROUP BY r.channel, h.hour
    UNION ALL
    SELECT r.channel, '-infinity', 0, count(*), '-infinity'
    FROM reservations r
    WHERE r.state <> 'released' AND r.sent_at IS NULL AND NOT airlock_reservation_suspect(r)
    GROUP BY r.channel;
INSERT INTO quota_suspects (id)
    SELECT r.id FROM reservations r WHERE airlock_reservation_suspect(r);
