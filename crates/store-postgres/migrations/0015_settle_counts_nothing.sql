-- Faster settles (issue 28): committing a reservation that was reserved, or the reverse,
-- with its channel, stamps and cost as they were, changes none of the hours it counts in
-- nor whether it is suspect (airlock_reservation_suspect reads only those). The trigger
-- of 0013 then returns before it works anything out; every other write runs it as
-- before. The same rule as crates/store-sqlite/migrations/0015_settle_counts_nothing.sql.
CREATE OR REPLACE FUNCTION airlock_reservations_hours() RETURNS trigger LANGUAGE plpgsql AS $$
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
    IF TG_OP = 'UPDATE' AND NEW.id = OLD.id AND NEW.channel = OLD.channel
       AND OLD.state IN ('reserved', 'committed') AND NEW.state IN ('reserved', 'committed')
       AND NEW.created_at = OLD.created_at AND NEW.sent_at IS NOT DISTINCT FROM OLD.sent_at
       AND NEW.cost_usd_micros = OLD.cost_usd_micros THEN
        RETURN NULL;
    END IF;
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
