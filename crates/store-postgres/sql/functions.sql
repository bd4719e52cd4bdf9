-- airlock's write transactions on PostgreSQL, one function per `Store` write
-- (docs/stores.md#hardened-postgresql). `airlock migrate` (or any store opened with the
-- owner's URL) applies this file after the migrations, with CREATE OR REPLACE: the
-- functions are code, not schema history, so a new binary replaces them.
--
-- Every function is SECURITY DEFINER with a fixed search_path, so it writes as the
-- ledger's owner; the runtime role (`{{runtime_role}}`, NOLOGIN) holds EXECUTE on the
-- public ones and column-level SELECT on what reads need, and nothing else. The same
-- functions serve a store opened as the owner: one code path in both modes.
--
-- The decisions the SQLite backend makes in Rust (crates/store/src/decide.rs,
-- crates/store/src/quota_rows.rs, airlock_core::quota and ::budget) are made here in
-- PL/pgSQL; the conformance suite (crates/store-tests) and the properties of
-- crates/store-postgres/tests/it/equal_decisions.rs hold the two equal. Time-zone
-- bounds (local days and months) are computed by the caller and passed in; where the
-- owner wrote the channel's zone into the ledger, they must be that zone's
-- (airlock_check_periods).
--
-- Refusals carry SQLSTATEs of class AL that the backend maps to StoreError, with a
-- JSON DETAIL where the error needs values: AL001 illegal transition {id, from, to},
-- AL005 too large (the triggers'), AL006 quarantined, AL010 not found, AL011 conflict,
-- AL012 fenced {generation}, AL013 paused {scope, reason}, AL014 duplicate {what},
-- AL015 has history, AL016 idempotency mismatch {key}, AL017 duplicate text {earlier,
-- status}, AL018 corrupt quota (the message is the reason), AL019 draft limit {actor,
-- held, max}, AL020 a write breaking a rule every write keeps {rule}, AL021 a caller's
-- clock too far from the database's {caller, database}, AL022 a claim the ledger's
-- limits (written by the owner) refuse to decide as asked {what}.
--
-- Times are the database's clock (airlock_time): a function takes the caller's `p_now`
-- only on a ledger the owner set to decide by its callers' clocks (`ledger_clock`, for
-- tests), and otherwise uses it only to refuse a claim or an intent from a process whose
-- clock is too far off.
--
-- Functions on the guarded path are PL/pgSQL even where one SQL statement would do:
-- PostgreSQL 15 parses and plans a SQL-language function with a SET clause on every
-- call, while PL/pgSQL keeps its plans for the session.
--
-- CREATE OR REPLACE keeps a function's parameters and result: a release that changes
-- them must DROP FUNCTION the old signature here first (and keep processes of the
-- previous release from calling it: stop them before `airlock migrate`).
--
-- Placeholders replaced when the file is applied: {{schema}} (where the ledger lives)
-- and {{runtime_role}}, both quoted identifiers.

-- Signatures of earlier releases that changed (CREATE OR REPLACE cannot change them).
-- The change-anything update of the second release, replaced by the named changes.
DROP FUNCTION IF EXISTS airlock_update_post(bigint, text, bigint, text, text, text, text,
    timestamptz, jsonb, text, text, boolean, text, jsonb, text, text, text, jsonb, jsonb, bigint);

-- airlock_apply_change before it took the statuses a change starts from (never released).
DROP FUNCTION IF EXISTS airlock_apply_change(bigint, text, bigint, text, text, text,
    timestamptz, jsonb, text, text, boolean, boolean, text, jsonb, text, boolean, text,
    jsonb, jsonb, bigint);

-- Before posts of several parts (issue 25): a draft without its later parts and first
-- comment, a change without the part's ids for its intent or the next part's claim,
-- outcomes without the part they settle, intents without the part they send.
DROP FUNCTION IF EXISTS airlock_create_post(text, text, text, jsonb, text, jsonb, text,
    timestamptz, text, text, boolean, text, timestamptz, text, text, text, text, bigint,
    bigint, bigint);
DROP FUNCTION IF EXISTS airlock_apply_change(bigint, text, bigint, text, text, text,
    timestamptz, jsonb, text, text, boolean, boolean, text, jsonb, text, boolean, text,
    jsonb, jsonb, bigint, text[]);
DROP FUNCTION IF EXISTS airlock_change_published(bigint, text, timestamptz, jsonb, bigint,
    timestamptz, text, text, bigint, text, text, jsonb);
DROP FUNCTION IF EXISTS airlock_change_settled_published(bigint, text, timestamptz, jsonb,
    bigint, timestamptz, text, text, text);
DROP FUNCTION IF EXISTS airlock_insert_intent(bigint, bigint, text, text, timestamptz);
DROP FUNCTION IF EXISTS airlock_record_intent(bigint, bigint, text, text, timestamptz, bigint);
DROP FUNCTION IF EXISTS airlock_claim_post(bigint, bigint, boolean, text, text, timestamptz,
    timestamptz, text, bigint, bigint, bigint, timestamptz[], bigint, bigint, timestamptz[],
    text, bigint);

-- Before the last operator token was kept (issue 27): a revoke without that choice, and
-- the second function that had it.
DROP FUNCTION IF EXISTS airlock_revoke_token(text, timestamptz);
DROP FUNCTION IF EXISTS airlock_revoke_token_checked(text, timestamptz, boolean);

-- The runtime role, created once per cluster (several databases may share it).
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {{runtime_role_literal}}) THEN
        BEGIN
            CREATE ROLE {{runtime_role}} NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL; -- created meanwhile by a migration of another database
        END;
    END IF;
END $$;

------------------------------------------------------------------------------------------
-- Helpers (no EXECUTE for the runtime role: only the functions below call them).
------------------------------------------------------------------------------------------

-- Whether the ledger decides by its callers' clocks (`ledger_clock`, a setting for tests
-- only the owner writes) rather than the database's own.
-- (PL/pgSQL, whose plan is kept per session: it is called several times a publish.)
CREATE OR REPLACE FUNCTION airlock_caller_clock()
RETURNS boolean LANGUAGE plpgsql STABLE
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    RETURN COALESCE((SELECT source = 'caller' FROM ledger_clock), false);
END $$;

-- The time a write happens at (docs/quotas.md#one-clock): the database's clock, so
-- installations on several machines agree by construction; on a ledger set to decide by
-- its callers' clocks, the caller's `p_now`. With `p_strict` (a decision: a claim, an
-- intent) a caller whose clock is further than the allowance from the database's is
-- refused (AL021), naming both times: its own arithmetic (leases, schedules) would be off.
CREATE OR REPLACE FUNCTION airlock_time(p_now timestamptz, p_strict boolean)
RETURNS timestamptz LANGUAGE plpgsql VOLATILE
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    db timestamptz := clock_timestamp();
BEGIN
    IF airlock_caller_clock() THEN
        RETURN p_now;
    END IF;
    IF p_strict AND p_now IS NOT NULL
       AND abs(extract(epoch FROM p_now - db)) > extract(epoch FROM interval '5 minutes') THEN
        PERFORM airlock_raise('AL021', 'clock skew',
            jsonb_build_object('caller', p_now, 'database', db));
    END IF;
    RETURN db;
END $$;

-- After waiting for a lock since `started`: on the database's clock, the time now; on
-- the callers', `now` advanced by the wait when that is 100 ms or more
-- (airlock_store::now_after).
CREATE OR REPLACE FUNCTION airlock_now_after(p_now timestamptz, p_started timestamptz)
RETURNS timestamptz LANGUAGE plpgsql VOLATILE
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    waited interval := clock_timestamp() - p_started;
BEGIN
    IF NOT airlock_caller_clock() THEN
        RETURN clock_timestamp();
    END IF;
    IF waited < interval '100 milliseconds' THEN
        RETURN p_now;
    END IF;
    RETURN p_now + waited;
END $$;

CREATE OR REPLACE FUNCTION airlock_raise(p_code text, p_message text, p_detail jsonb)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = p_code, MESSAGE = p_message,
        DETAIL = COALESCE(p_detail, '{}'::jsonb)::text;
END $$;

-- Refuses (AL020) an argument outside [p_min, p_max]: no caller picks a negative count
-- or a lease into next year.
CREATE OR REPLACE FUNCTION airlock_bounded(p_name text, p_value numeric, p_min numeric,
    p_max numeric)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    IF p_value IS NULL OR p_value < p_min OR p_value > p_max THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule', format(
            '%s must be between %s and %s, not %s', p_name, p_min, p_max,
            COALESCE(p_value::text, 'null'))));
    END IF;
END $$;

-- Refuses (AL020) a time not within `p_before` and `p_after` of the write's time.
CREATE OR REPLACE FUNCTION airlock_bounded_time(p_name text, p_at timestamptz,
    p_now timestamptz, p_before interval, p_after interval)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    v_now timestamptz := airlock_time(p_now, false);
BEGIN
    IF p_at IS NULL OR NOT isfinite(p_at) OR p_at < v_now - p_before OR p_at > v_now + p_after THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule', format(
            '%s must lie between %s before and %s after now, not %s', p_name, p_before,
            p_after, COALESCE(p_at::text, 'null'))));
    END IF;
END $$;

-- Refuses (AL020) an event of a kind only the store writes (its triggers, its functions).
CREATE OR REPLACE FUNCTION airlock_refuse_store_kind(p_kind text)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    IF p_kind IS NULL OR p_kind IN ('status', 'changed', 'created') THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule', format(
            'a %s event is the store''s own record, never added by hand',
            COALESCE(p_kind, 'nameless'))));
    END IF;
END $$;

-- Refuses (AL020) a publish time before the post's first intent or after now: nothing
-- goes out before airlock recorded that it would send it.
CREATE OR REPLACE FUNCTION airlock_check_posted_at(p_id bigint, p_posted_at timestamptz,
    p_now timestamptz)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    first_sent timestamptz := (SELECT min(created_at) FROM intents WHERE post_id = p_id);
BEGIN
    PERFORM airlock_bounded_time('the publish time', p_posted_at, p_now,
        CASE WHEN first_sent IS NULL THEN interval '100 years'
             ELSE airlock_time(p_now, false) - first_sent + interval '5 minutes' END,
        interval '5 minutes');
END $$;

-- Takes one of airlock's own locks (`ledger_locks`): only the owner, and so only these
-- functions, may lock its rows, so no other session can hold them.
CREATE OR REPLACE FUNCTION airlock_lock(p_name text, p_exclusive boolean)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    IF p_exclusive THEN
        PERFORM 1 FROM ledger_locks WHERE name = p_name FOR UPDATE;
    ELSE
        PERFORM 1 FROM ledger_locks WHERE name = p_name FOR SHARE;
    END IF;
END $$;

-- Whether the session's login role is the ledger's owner (or a superuser), rather than a
-- role that holds only the runtime role.
CREATE OR REPLACE FUNCTION airlock_session_is_owner()
RETURNS boolean LANGUAGE plpgsql STABLE
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    RETURN pg_has_role(session_user, current_user, 'USAGE');
END $$;

-- Whether `p` is one list of instants from index 1 with none missing. Anything else would
-- read as no periods at all: a subscript out of range, or of a list of lists, is null.
-- Plain SQL without SET, so the planner inlines it (it names only built-ins).
CREATE OR REPLACE FUNCTION airlock_one_list(p timestamptz[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(array_ndims(p) = 1 AND array_lower(p, 1) = 1
                    AND array_position(p, NULL) IS NULL, false)
$$;

-- Refuses (AL022) period starts that are not consecutive local days (months) of
-- `p_zone` covering `p_now`: each the first instant of its local day (the first of its
-- month), one after another, from before `p_now` to well after it. The starts are the
-- caller's (airlock_core::quota::day_bounds, budget::month_bounds); the zone is the
-- ledger's, so a caller cannot move a day's edges.
CREATE OR REPLACE FUNCTION airlock_check_periods(p_what text, p_starts timestamptz[],
    p_zone text, p_months boolean, p_now timestamptz)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    n integer := COALESCE(array_length(p_starts, 1), 0);
    local_day date;
    prev_day date;
BEGIN
    IF NOT airlock_one_list(p_starts) THEN
        PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what', format(
            'the %s starts sent are not one list of instants from index 1', p_what)));
    END IF;
    IF n < 3 OR NOT COALESCE(p_starts[1] <= p_now - interval '5 minutes'
                             AND p_starts[n] > p_now + interval '1 day', false) THEN
        PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what', format(
            'the %s starts sent do not cover %s', p_what, airlock_show_time(p_now))));
    END IF;
    FOR i IN 1 .. n LOOP
        local_day := (p_starts[i] AT TIME ZONE p_zone)::date;
        IF ((p_starts[i] - interval '1 microsecond') AT TIME ZONE p_zone)::date >= local_day
           OR (p_months AND extract(day FROM local_day) <> 1)
           OR (i > 1 AND local_day <> (prev_day + CASE WHEN p_months THEN interval '1 month'
                                                     ELSE interval '1 day' END)::date) THEN
            PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what', format(
                '%s is not where a %s starts in %s, the channel''s zone in the ledger: '
                'the configuration''s zone differs from the ledger''s', airlock_show_time(p_starts[i]),
                CASE WHEN p_months THEN 'month' ELSE 'day' END, p_zone)));
        END IF;
        prev_day := local_day;
    END LOOP;
END $$;

-- Notifications [{sink, event, post_id, payload}] in order, written with their change.
CREATE OR REPLACE FUNCTION airlock_insert_outbox(p_notify jsonb, p_now timestamptz)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    IF p_notify IS NULL OR p_notify = '[]'::jsonb THEN
        RETURN;
    END IF;
    INSERT INTO outbox (sink, event, post_id, payload, created_at, next_attempt_at)
    SELECT n.value->>'sink', n.value->>'event', (n.value->>'post_id')::bigint,
           n.value->'payload', p_now, p_now
    FROM jsonb_array_elements(p_notify) WITH ORDINALITY AS n(value, i)
    ORDER BY n.i;
END $$;

-- The pause that holds a post's channel (or everything), if any. Takes the pauses lock
-- shared (exclusive while a pause is set), so a pause that has returned is seen here.
CREATE OR REPLACE FUNCTION airlock_active_pause(p_post bigint, OUT scope text, OUT reason text)
LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
#variable_conflict use_column
BEGIN
    PERFORM airlock_lock('pauses', false);
    SELECT p.scope, p.reason INTO scope, reason FROM pauses p WHERE p.resumed_at IS NULL
        AND (p.scope = '*' OR p.scope = (SELECT channel FROM posts WHERE id = p_post))
        ORDER BY p.scope = '*' DESC, p.id LIMIT 1;
END $$;

-- Inserts a pause unless the scope is already paused; queues `notify` only for a new one.
CREATE OR REPLACE FUNCTION airlock_insert_pause(p_scope text, p_reason text, p_actor text,
    p_now timestamptz, p_notify jsonb)
RETURNS boolean LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    inserted integer;
BEGIN
    p_now := airlock_time(p_now, false);
    -- Wait for intents being recorded now; every later one sees this pause.
    PERFORM airlock_lock('pauses', true);
    INSERT INTO pauses (scope, reason, actor, created_at) VALUES (p_scope, p_reason, p_actor, p_now)
        ON CONFLICT (scope) WHERE resumed_at IS NULL DO NOTHING;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    -- A pause a post's unknown outcome set yields to any later one, which takes it over
    -- (airlock_store::UNKNOWN_PAUSE_MARK): proving that post's outcome never lifts it.
    IF inserted = 0 THEN
        UPDATE pauses SET reason = p_reason, actor = p_actor
            WHERE scope = p_scope AND resumed_at IS NULL
              AND position(' has an unknown outcome (' in reason) > 0;
        GET DIAGNOSTICS inserted = ROW_COUNT;
    END IF;
    IF inserted > 0 THEN
        PERFORM airlock_insert_outbox(p_notify, p_now);
    END IF;
    RETURN inserted > 0;
END $$;

-- Records a `sending` intent for part `p_part`, committed durably, and marks the
-- generation's reservation as sent at `now`.
CREATE OR REPLACE FUNCTION airlock_insert_intent(p_post bigint, p_generation bigint, p_key text,
    p_part bigint, p_platform_ref text, p_now timestamptz)
RETURNS intents LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    written intents;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    IF EXISTS (SELECT 1 FROM intents WHERE post_id = p_post AND generation = p_generation) THEN
        PERFORM airlock_raise('AL014', 'duplicate intent', jsonb_build_object('what',
            format('an intent for post %s generation %s', p_post, p_generation)));
    END IF;
    -- Parts go out once each, in order: the next is the one after those out.
    IF p_part <> 1 + (SELECT count(DISTINCT i.part) FROM intents i
                      WHERE i.post_id = p_post AND i.phase = 'succeeded') THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule', format(
            'post %s sends its parts once each, in order: part %s is not the next', p_post,
            p_part)));
    END IF;
    INSERT INTO intents (post_id, generation, idempotency_key, part, phase, platform_ref,
                         created_at)
        VALUES (p_post, p_generation, p_key, p_part, 'sending', p_platform_ref, p_now)
        RETURNING * INTO written;
    UPDATE reservations SET sent_at = p_now
        WHERE post_id = p_post AND generation = p_generation AND state = 'reserved'
          AND sent_at IS DISTINCT FROM p_now;
    RETURN written;
END $$;

-- A time as chrono displays a DateTime<Utc> (`2026-12-01 09:00:00 UTC`; a fraction of a
-- second in 3 digits, or in 6 when milliseconds do not hold it), for messages.
CREATE OR REPLACE FUNCTION airlock_show_time(p_at timestamptz)
RETURNS text LANGUAGE sql IMMUTABLE
SET search_path = {{schema}}, pg_temp AS $$
    SELECT to_char(u, 'YYYY-MM-DD HH24:MI:SS') || CASE
        WHEN extract(microseconds FROM u)::bigint % 1000000 = 0 THEN ''
        WHEN extract(microseconds FROM u)::bigint % 1000 = 0 THEN to_char(u, '.MS')
        ELSE to_char(u, '.US') END || ' UTC'
    FROM (SELECT p_at AT TIME ZONE 'UTC' AS u) utc;
$$;

-- The live reservations a decision reads (airlock_store::QuotaRows): sent at or after
-- `p_since`, every unsent one, and one sent at '-infinity' (so the check sees and refuses
-- it rather than leaving it out of range). Each branch reads the partial index
-- `reservations_live`. Plain SQL without SET, so the planner inlines it into its callers
-- (which fix the search_path; the table is named by its schema all the same).
CREATE OR REPLACE FUNCTION airlock_live_reservations(p_since timestamptz)
RETURNS SETOF {{schema}}.reservations LANGUAGE sql STABLE AS $$
    SELECT * FROM {{schema}}.reservations WHERE state <> 'released' AND sent_at >= p_since
    UNION ALL
    SELECT * FROM {{schema}}.reservations WHERE state <> 'released' AND sent_at IS NULL
    UNION ALL
    SELECT * FROM {{schema}}.reservations WHERE state <> 'released' AND sent_at = '-infinity'
$$;

-- Whether a stamp, widened by the clock allowance either way, meets [p_start, p_end)
-- (airlock_core::quota::Stamps::could_fall_in).
CREATE OR REPLACE FUNCTION airlock_could_fall_in(p_made timestamptz, p_sent timestamptz,
    p_start timestamptz, p_end timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE
SET search_path = {{schema}}, pg_temp AS $$
    SELECT (p_made - interval '5 minutes' < p_end AND p_made + interval '5 minutes' >= p_start)
        OR (p_sent IS NOT NULL AND p_sent - interval '5 minutes' < p_end
            AND p_sent + interval '5 minutes' >= p_start);
$$;

-- airlock_core::quota::earliest_free over consecutive periods (days or months) whose
-- starts are `p_starts` and whose use is `p_used` (p_used[i] for [p_starts[i],
-- p_starts[i+1])): the first instant from `p_now` at which no period a stamp made then
-- could fall in is full, with the use of the first full one; both null when that is now.
CREATE OR REPLACE FUNCTION airlock_earliest_free(p_now timestamptz, p_starts timestamptz[],
    p_used numeric[], p_limit numeric, OUT used numeric, OUT next_free_at timestamptz)
LANGUAGE plpgsql IMMUTABLE
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    allowance constant interval := interval '5 minutes';
    at_time timestamptz := p_now;
    k integer;
    full_k integer;
BEGIN
    FOR iter IN 1 .. 4 LOOP
        full_k := NULL;
        -- The later period first: when it is full, waiting for the earlier one is moot.
        FOREACH k IN ARRAY ARRAY[
            (SELECT max(i) FROM generate_subscripts(p_starts, 1) i
              WHERE p_starts[i] <= at_time + allowance),
            (SELECT max(i) FROM generate_subscripts(p_starts, 1) i
              WHERE p_starts[i] <= at_time - allowance)] LOOP
            IF k IS NULL OR k >= array_length(p_starts, 1) THEN
                RAISE EXCEPTION 'airlock: quota period bounds do not cover %', at_time;
            END IF;
            IF p_used[k] >= p_limit THEN
                full_k := k;
                EXIT;
            END IF;
        END LOOP;
        EXIT WHEN full_k IS NULL;
        IF used IS NULL THEN
            used := p_used[full_k];
        END IF;
        at_time := p_starts[full_k + 1] + allowance;
    END LOOP;
    IF used IS NOT NULL THEN
        next_free_at := at_time;
    END IF;
END $$;

-- Whether no local day of `p_day` (two or more consecutive starts: airlock_quota_far
-- answers for fewer) has `p_daily_limit` or more counted in `p_channel`'s hours a stamp
-- counted in it could lie in.
-- Each day is summed by a subquery of its own over an index range of the channel's hours:
-- a third of the time a join of the days to the hours took, grouped by day. The range is
-- a row comparison on (channel, hour) so that only the primary key can serve it: with
-- `channel = ` and an hour range, the generic plan picked the index on hours and read
-- every channel's. Generic plans: a plan for the values knows how many days there are and
-- always looks cheaper than the generic one, so each claim would plan it again. No JIT:
-- on a long-lived ledger the generic estimate passes `jit_above_cost`, and compiling
-- would cost milliseconds on every claim.
CREATE OR REPLACE FUNCTION airlock_quota_days_far(p_channel text, p_daily_limit bigint,
    p_day timestamptz[])
RETURNS boolean LANGUAGE plpgsql STABLE
SET search_path = {{schema}}, pg_temp SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
DECLARE
    skew constant interval := interval '5 minutes';
BEGIN
    RETURN NOT EXISTS (
        SELECT 1 FROM unnest(p_day[1:array_length(p_day, 1) - 1], p_day[2:]) AS d(day, next)
        WHERE (SELECT COALESCE(sum(q.live), 0) FROM quota_hours q
               WHERE (q.channel, q.hour) >= (p_channel, date_trunc('hour', d.day - skew, 'UTC'))
                 AND (q.channel, q.hour) < (p_channel, d.next + skew)) >= p_daily_limit);
END $$;

-- Whether the per-hour counts (quota_hours, migration 0013) may stand for the rows at
-- `p_now`, and prove room for one more publish in the rolling window: nothing suspect, no
-- stamp after the clock allowance past `p_now`, `p_day` one list of two or more day
-- starts, and a sum that can only overcount (every hour a counted stamp could lie in,
-- and every unsent row, which it counts as now) below the window's limit (none: no
-- window to prove, as the exact decision reads a null limit). False means
-- only that the exact decision must read the rows. `airlock.exact_quota = on` turns it
-- off (the tests compare both paths). (Plans for the values here, even when a caller
-- forces generic ones: a generic plan of the recent hours' test, which names no channel,
-- walks the whole key of quota_hours.)
CREATE OR REPLACE FUNCTION airlock_quota_window_far(p_now timestamptz, p_win interval,
    p_window_limit bigint, p_day timestamptz[])
RETURNS boolean LANGUAGE plpgsql STABLE
SET search_path = {{schema}}, pg_temp SET plan_cache_mode = auto AS $$
DECLARE
    skew constant interval := interval '5 minutes';
BEGIN
    RETURN NOT (COALESCE(current_setting('airlock.exact_quota', true), '') = 'on'
       OR COALESCE(array_length(p_day, 1), 0) < 2 OR NOT airlock_one_list(p_day)
       OR NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'reservations'::regclass
                      AND tgname = 'reservations_quota_hours' AND tgenabled IN ('O', 'A'))
       OR EXISTS (SELECT 1 FROM quota_suspects)
       OR EXISTS (SELECT 1 FROM quota_hours q WHERE q.hour > p_now + skew - interval '1 hour'
                  GROUP BY q.channel, q.hour
                  HAVING sum(q.live) > 0 AND max(q.latest) > p_now + skew)
       OR (p_window_limit IS NOT NULL AND (SELECT COALESCE(sum(q.live), 0) FROM quota_hours q
           WHERE q.hour >= date_trunc('hour', p_now - p_win, 'UTC')
              OR q.hour = '-infinity') >= p_window_limit));
END $$;

-- Whether one more publish on `p_channel` at `p_now` is allowed without reading a single
-- reservation: the counts prove room in the window (airlock_quota_window_far) and below
-- the daily limit in every local day the exact decision looks at.
CREATE OR REPLACE FUNCTION airlock_quota_far(p_channel text, p_now timestamptz,
    p_win interval, p_window_limit bigint, p_daily_limit bigint, p_day timestamptz[])
RETURNS boolean LANGUAGE plpgsql STABLE
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    RETURN COALESCE(airlock_quota_window_far(p_now, p_win, p_window_limit, p_day)
                    AND airlock_quota_days_far(p_channel, p_daily_limit, p_day), false);
END $$;

-- The quota decision for one more publish on `p_channel` at `p_now`
-- (airlock_store::decide_reservation over QuotaRows::check): the live reservations are
-- read and checked fail-closed (AL018), then the rolling window across channels, the
-- channel's local days and, with a budget, its local months decide. `p_day` and `p_month`
-- are consecutive period starts from before `p_now` (the caller's zone arithmetic,
-- airlock_core::quota::day_bounds and budget::month_bounds). A reservation counts on
-- every period any of its stamps could fall in, and a new one needs room in every period
-- its own stamp could fall in (airlock_core::quota::daily_usage).
-- No row: allowed. One row: the denial that frees last.
CREATE OR REPLACE FUNCTION airlock_quota_decision(p_channel text, p_now timestamptz,
    p_window_us bigint, p_window_limit bigint, p_daily_limit bigint, p_day timestamptz[],
    p_budget_monthly bigint, p_budget_cost bigint, p_month timestamptz[],
    OUT denied boolean, OUT limit_kind text, OUT used numeric, OUT max_value numeric,
    OUT next_free_at timestamptz)
LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    skew constant interval := interval '5 minutes';
    win interval := p_window_us * interval '1 microsecond';
    since timestamptz;
    bad_id bigint;
    bad text;
    w_used bigint;
    w_next timestamptz;
    d_used numeric[];
    m_used numeric[];
    daily record;
    money record;
BEGIN
    denied := false;
    -- (A budget is always decided from the rows.)
    IF p_budget_monthly IS NULL THEN
        IF airlock_quota_far(p_channel, p_now, win, p_window_limit, p_daily_limit, p_day) THEN
            RETURN;
        END IF;
    END IF;
    since := least(p_day[1], p_now - win);
    IF p_budget_monthly IS NOT NULL THEN
        since := least(since, p_month[1]);
    END IF;
    since := since - 2 * skew;

    -- One scan of the live rows: fail-closed (QuotaRows::check), the first row by id that
    -- does not read as expected stops the decision; the rolling window across channels
    -- counts a reservation from its send time, or from now while unsent
    -- (airlock_core::quota::window_usage).
    SELECT min(l.id) FILTER (WHERE l.bad IS NOT NULL),
           (array_agg(l.bad ORDER BY l.id) FILTER (WHERE l.bad IS NOT NULL))[1],
           count(*) FILTER (WHERE COALESCE(l.sent_at, p_now) > p_now - win)
        INTO bad_id, bad, w_used
        FROM (SELECT r.id, r.channel, r.created_at, r.sent_at, r.cost_usd_micros, CASE
            WHEN r.state NOT IN ('reserved', 'committed') THEN
                format('has unknown state %s', to_jsonb(r.state)::text)
            WHEN NOT isfinite(r.created_at) THEN
                format('has unreadable created_at %s', to_jsonb(r.created_at::text)::text)
            WHEN r.sent_at IS NOT NULL AND NOT isfinite(r.sent_at) THEN
                format('has unreadable sent_at %s', to_jsonb(r.sent_at::text)::text)
            WHEN r.created_at > p_now + skew THEN
                format('was created in the future (%s)', airlock_show_time(r.created_at))
            WHEN r.sent_at IS NOT NULL AND r.sent_at > p_now + skew THEN
                format('was sent in the future (%s)', airlock_show_time(r.sent_at))
            WHEN r.sent_at IS NOT NULL AND r.sent_at + skew < r.created_at THEN
                format('was sent (%s) before it was created (%s)',
                    airlock_show_time(r.sent_at), airlock_show_time(r.created_at))
            -- (A bounded repetition costs PostgreSQL's regex engine ~4 µs a row.)
            WHEN r.channel !~ '^[a-z0-9][a-z0-9._-]*$' OR octet_length(r.channel) > 64 THEN
                format('names no valid channel (%s)', to_jsonb(r.channel)::text)
            WHEN r.cost_usd_micros < 0 THEN
                format('has a negative cost (%s)', r.cost_usd_micros)
            END AS bad
        FROM airlock_live_reservations(since) r) l;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'AL018', MESSAGE = format(
            'reservation %s %s; inspect the reservations table, fix or release the row, then resume',
            bad_id, bad);
    END IF;
    -- The channel's use of each period (daily_usage, budget::used), rows already checked.
    SELECT array_agg(u.n ORDER BY u.i) INTO d_used FROM (
        SELECT i, count(r.id)::numeric AS n
        FROM generate_series(1, array_length(p_day, 1) - 1) i
        LEFT JOIN airlock_live_reservations(since) r ON r.channel = p_channel
            AND airlock_could_fall_in(r.created_at, r.sent_at, p_day[i], p_day[i + 1])
        GROUP BY i) u;
    IF w_used >= p_window_limit THEN
        SELECT q.counted_at + win INTO w_next FROM (
            SELECT COALESCE(r.sent_at, p_now) AS counted_at
            FROM airlock_live_reservations(since) r) q
            WHERE q.counted_at > p_now - win ORDER BY q.counted_at
            OFFSET (w_used - p_window_limit) LIMIT 1;
        denied := true;
        limit_kind := 'window'; used := w_used; max_value := p_window_limit;
        next_free_at := COALESCE(w_next, p_now + win);
    END IF;
    -- quota::decide names the denial that frees last (the later one on a tie).
    SELECT * INTO daily FROM airlock_earliest_free(p_now, p_day, d_used, p_daily_limit);
    IF daily.next_free_at IS NOT NULL AND (NOT denied OR daily.next_free_at >= next_free_at) THEN
        denied := true;
        limit_kind := 'daily'; used := daily.used; max_value := p_daily_limit;
        next_free_at := daily.next_free_at;
    END IF;
    IF p_budget_monthly IS NOT NULL THEN
        SELECT array_agg(u.n ORDER BY u.i) INTO m_used FROM (
            SELECT i, LEAST(COALESCE(sum(r.cost_usd_micros), 0),
                            18446744073709551615::numeric) AS n
            FROM generate_series(1, array_length(p_month, 1) - 1) i
            LEFT JOIN airlock_live_reservations(since) r ON r.channel = p_channel
                AND r.cost_usd_micros > 0
                AND airlock_could_fall_in(r.created_at, r.sent_at, p_month[i], p_month[i + 1])
            GROUP BY i) u;
        SELECT * INTO money FROM airlock_earliest_free(p_now, p_month, m_used, p_budget_monthly);
        IF money.next_free_at IS NOT NULL AND (NOT denied OR money.next_free_at > next_free_at) THEN
            denied := true;
            limit_kind := 'budget'; used := money.used; max_value := p_budget_monthly;
            next_free_at := money.next_free_at;
        END IF;
    END IF;
END $$;

------------------------------------------------------------------------------------------
-- The guarded path.
------------------------------------------------------------------------------------------

-- Whether the owner rewrote the limits a claim read (`p_ledger`, and `p_limits` for
-- `p_channel`, as read then; a missing row reads as all nulls). Asked once the claim
-- holds what the owner's write waits for (a window slot, or the window), so what it
-- reads now is what every later claim reads.
CREATE OR REPLACE FUNCTION airlock_limits_moved(p_channel text, p_ledger ledger_limits,
    p_limits channel_limits)
RETURNS boolean LANGUAGE plpgsql STABLE
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    RETURN (SELECT to_jsonb(l) FROM ledger_limits l)
               IS DISTINCT FROM (CASE WHEN p_ledger.only_row THEN to_jsonb(p_ledger) END)
        OR (SELECT to_jsonb(c) FROM channel_limits c WHERE c.channel = p_channel)
               IS DISTINCT FROM (CASE WHEN p_limits.channel IS NOT NULL THEN to_jsonb(p_limits) END);
END $$;

-- Refuses a claim by limits the owner rewrote since it read them
-- (airlock_limits_moved). SQLSTATE 40001: nothing is written, and the claim may be made
-- again.
CREATE OR REPLACE FUNCTION airlock_limits_held(p_channel text, p_ledger ledger_limits,
    p_limits channel_limits)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    IF airlock_limits_moved(p_channel, p_ledger, p_limits) THEN
        RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = format(
            'airlock: the ledger''s limits for channel %s changed while a claim read them: claim again',
            p_channel);
    END IF;
END $$;

-- Locks the rolling window and every one of its slots, in one order: waits for every
-- claim in flight, and holds off every claim until the transaction ends.
CREATE OR REPLACE FUNCTION airlock_lock_window()
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    PERFORM 1 FROM ledger_locks WHERE name = 'window' OR name LIKE 'window slot %'
        ORDER BY name FOR UPDATE;
END $$;

-- One of the window's `p_slots` slots, held (skipping those held), when the counts prove
-- room in the window at `p_now` for this claim with every other slot a claim in flight;
-- else null, the slot (if any) still held until the caller's block rolls back.
CREATE OR REPLACE FUNCTION airlock_window_slot(p_slots integer, p_now timestamptz,
    p_win interval, p_window_limit bigint, p_day timestamptz[])
RETURNS integer LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    slot integer;
BEGIN
    SELECT substr(name, 13)::integer INTO slot FROM ledger_locks
        WHERE name LIKE 'window slot %' ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF slot IS NULL
       OR NOT airlock_quota_window_far(p_now, p_win, p_window_limit - (p_slots - 1), p_day) THEN
        RETURN NULL;
    END IF;
    RETURN slot;
END $$;

-- Store::claim_post: the post unchanged and not paused, the claim, the reservation with
-- the post quota and money budget, and (with p_intent_key) the intent of part
-- p_intent_part, in one transaction. outcome: claimed | gone | paused | over_quota.
--
-- The limits are the ledger's where the owner wrote them (`ledger_limits`,
-- `channel_limits`): the caller's count only where they are stricter, its period starts
-- must be the channel's days and months in the ledger's zone, and its cost is held
-- between what the ledger's prices make of the post's requests. A post that counts (not
-- a test, nothing of it out yet) is always decided, whatever the caller asks. Only the
-- owner may claim on a ledger without limits (tests, and the moment before the owner's
-- store first writes them); anyone else is refused (AL022).
CREATE OR REPLACE FUNCTION airlock_claim_post(
    p_id bigint, p_version bigint, p_allow_test boolean, p_worker text, p_actor text,
    p_now timestamptz, p_lease_until timestamptz, p_note text,
    p_window_us bigint, p_window_limit bigint, p_daily_limit bigint, p_day timestamptz[],
    p_budget_monthly bigint, p_budget_cost bigint, p_month timestamptz[],
    p_intent_key text, p_intent_part bigint, p_intent_margin_us bigint,
    OUT outcome text, OUT pause_scope text, OUT pause_reason text,
    OUT denial_limit text, OUT denial_used numeric, OUT denial_max numeric,
    OUT denial_next_free_at timestamptz,
    OUT intent_phase text, OUT intent_key text, OUT intent_platform_ref text,
    OUT intent_created_at timestamptz, OUT intent_settled_at timestamptz,
    OUT intent_part bigint, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    started timestamptz := clock_timestamp();
    v_now timestamptz;
    v_lease_until timestamptz;
    cur posts;
    decision record;
    v_generation bigint;
    written intents;
    ledger ledger_limits;
    channel channel_limits;
    requests bigint;
    first_cost bigint;
    continuing boolean;
    quick boolean;
    near_day boolean;
    decided boolean := false;
    slots integer;
    slot integer;
BEGIN
    -- A transaction that has written before (several claims in one) may already hold a
    -- window slot with reservations in flight that no other claim can see: it decides
    -- alone, from the rows. Read before this claim's own lock writes.
    quick := pg_current_xact_id_if_assigned() IS NULL;
    -- Refuses a caller whose clock is too far from the database's.
    PERFORM airlock_time(p_now, true);
    PERFORM airlock_bounded('the lease', extract(epoch FROM p_lease_until - p_now), 0,
                            extract(epoch FROM interval '1 day'));
    PERFORM airlock_bounded('the intent part', COALESCE(p_intent_part, 1), 1, 50);
    PERFORM airlock_bounded('the intent margin', COALESCE(p_intent_margin_us, 0), 0,
                            86400000000);
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'airlock: claims need READ COMMITTED transactions (the server or role default is %)',
            current_setting('transaction_isolation');
    END IF;
    -- Another worker claiming it now holds the row: this one moves on.
    SELECT * INTO cur FROM posts WHERE id = p_id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        outcome := 'gone';
        RETURN;
    END IF;
    IF NOT COALESCE(cur.status = 'approved' AND cur.posted_at IS NULL
            AND cur.version = p_version AND (NOT cur.test OR p_allow_test), false) THEN
        outcome := 'gone';
        post := cur;
        RETURN;
    END IF;
    -- The claim's status event waits for the event feed's lock: wait for it before the
    -- pauses row is held, so that a session holding the feed never holds up a pause.
    PERFORM pg_advisory_xact_lock_shared(1095912450, 0);
    SELECT * INTO pause_scope, pause_reason FROM airlock_active_pause(p_id);
    IF pause_scope IS NOT NULL THEN
        outcome := 'paused';
        RETURN;
    END IF;
    v_now := airlock_now_after(p_now, started);
    SELECT * INTO ledger FROM ledger_limits;
    SELECT * INTO channel FROM channel_limits c WHERE c.channel = cur.channel;
    -- A post some of whose parts are out counts from its first part: the later parts'
    -- claims reserve nothing, as long as the content approved then is still the one
    -- approved (no return to draft since) and parts remain.
    continuing := EXISTS (
            SELECT 1 FROM reservations r WHERE r.post_id = p_id AND r.state = 'committed'
              AND NOT EXISTS (SELECT 1 FROM post_events e WHERE e.post_id = p_id
                              AND e.kind = 'status' AND e.to_status = 'draft'
                              AND e.at >= r.created_at))
        AND (SELECT count(DISTINCT i.part) FROM intents i
             WHERE i.post_id = p_id AND i.phase = 'succeeded')
            BETWEEN 1 AND jsonb_array_length(cur.more_parts)
                          + CASE WHEN cur.first_comment IS NULL THEN 0 ELSE 1 END;
    -- A test post counts unless the ledger lists its channel as one for tests.
    IF (NOT cur.test OR NOT COALESCE(channel.tests, ledger.window_us IS NULL))
       AND NOT continuing THEN
        IF ledger.window_us IS NULL OR channel.channel IS NULL THEN
            IF NOT airlock_session_is_owner() THEN
                PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what', format(
                    'the ledger holds no limits for channel %s: run `airlock migrate` with '
                    'the owner''s URL to write the configuration''s limits', cur.channel)));
            END IF;
        ELSE
            IF p_day IS NULL THEN
                PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what',
                    format('post %s counts against its quota, and the claim sent no day', p_id)));
            END IF;
            PERFORM airlock_check_periods('day', p_day, channel.zone, false, v_now);
            p_window_us := greatest(COALESCE(p_window_us, 0), ledger.window_us);
            p_window_limit := least(COALESCE(p_window_limit, ledger.window_limit),
                                    ledger.window_limit);
            p_daily_limit := least(COALESCE(p_daily_limit, channel.daily_limit),
                                   channel.daily_limit);
            IF channel.budget_monthly IS NOT NULL THEN
                IF p_month IS NULL THEN
                    PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what', format(
                        'channel %s has a budget in the ledger, and the claim sent no month',
                        cur.channel)));
                END IF;
                PERFORM airlock_check_periods('month', p_month, channel.zone, true, v_now);
                p_budget_monthly := least(COALESCE(p_budget_monthly, channel.budget_monthly),
                                          channel.budget_monthly);
                -- Each part and the first comment is a request the platform charges;
                -- part 1 at the link price when it has a link or a URL in its text
                -- (airlock_core::budget::Costs::of, whose domain guess is the caller's).
                requests := 1 + jsonb_array_length(cur.more_parts)
                    + CASE WHEN cur.first_comment IS NULL THEN 0 ELSE 1 END;
                first_cost := CASE WHEN COALESCE(btrim(cur.link), '') <> ''
                                        OR cur.text ~* 'https?://'
                                   THEN channel.url_post_cost ELSE channel.post_cost END;
                p_budget_cost := least(greatest(COALESCE(p_budget_cost, channel.url_post_cost * requests),
                                                first_cost + channel.post_cost * (requests - 1)),
                                       channel.url_post_cost * requests);
            END IF;
        END IF;
    END IF;
    IF p_window_limit IS NOT NULL THEN
        -- A claim far from every limit holds one of the window's slots (skipping those
        -- held) and its channel's limits shared, and proves its room counting every
        -- other slot as a claim in flight: no more can be. One far from the window but
        -- near its channel's daily limit holds a slot and its channel's limits alone, so
        -- it waits for that channel's claims in flight, and decides its day from the
        -- rows. Any other claim locks the window and every slot, in one order, so it
        -- waits for every claim in flight and decides alone. Each way the counts are
        -- read by a statement whose snapshot is taken after the lock (READ COMMITTED).
        IF quick AND p_budget_monthly IS NULL THEN
            quick := false;
            near_day := false;
            SELECT count(*) INTO slots FROM ledger_locks WHERE name LIKE 'window slot %';
            BEGIN
                v_now := airlock_now_after(p_now, started);
                slot := airlock_window_slot(slots, v_now,
                    p_window_us * interval '1 microsecond', p_window_limit, p_day);
                IF slot IS NULL THEN
                    -- Rolled back to the block's start: the slot is let go.
                    RAISE EXCEPTION USING ERRCODE = 'AL900';
                END IF;
                PERFORM 1 FROM channel_limits c WHERE c.channel = cur.channel FOR SHARE;
                PERFORM airlock_limits_held(cur.channel, ledger, channel);
                -- Stamped after any wait for the row: the window proved at the earlier
                -- time counts every hour the later one does.
                v_now := airlock_now_after(p_now, started);
                IF NOT airlock_quota_days_far(cur.channel, p_daily_limit - (slots - 1),
                                              p_day) THEN
                    near_day := channel.channel IS NOT NULL;
                    RAISE EXCEPTION USING ERRCODE = 'AL900';
                END IF;
                PERFORM set_config('airlock.slot', slot::text, true);
                quick := true;
            EXCEPTION WHEN SQLSTATE 'AL900' THEN
                NULL;
            END;
            IF near_day THEN
                BEGIN
                    v_now := airlock_now_after(p_now, started);
                    slot := airlock_window_slot(slots, v_now,
                        p_window_us * interval '1 microsecond', p_window_limit, p_day);
                    IF slot IS NULL THEN
                        RAISE EXCEPTION USING ERRCODE = 'AL900';
                    END IF;
                    PERFORM 1 FROM channel_limits c WHERE c.channel = cur.channel FOR UPDATE;
                    PERFORM airlock_limits_held(cur.channel, ledger, channel);
                    PERFORM set_config('airlock.slot', slot::text, true);
                    v_now := airlock_now_after(p_now, started);
                    -- The window is proved: the rows decide the day alone.
                    SELECT * INTO decision FROM airlock_quota_decision(cur.channel, v_now,
                        p_window_us, NULL, p_daily_limit, p_day, NULL, NULL, NULL);
                    decided := true;
                    quick := true;
                EXCEPTION WHEN SQLSTATE 'AL900' THEN
                    NULL;
                END;
            END IF;
        ELSE
            quick := false;
        END IF;
        IF NOT quick THEN
            PERFORM set_config('airlock.slot', '0', true);
            PERFORM airlock_lock_window();
            PERFORM airlock_limits_held(cur.channel, ledger, channel);
            v_now := airlock_now_after(p_now, started);
            SELECT * INTO decision FROM airlock_quota_decision(cur.channel, v_now,
                p_window_us, p_window_limit, p_daily_limit, p_day,
                p_budget_monthly, p_budget_cost, p_month);
            decided := true;
        END IF;
        -- (Nested: PL/pgSQL may read both sides of an AND, and `decision` is unset
        -- until a decision is made.)
        IF decided THEN
            IF decision.denied THEN
                outcome := 'over_quota';
                denial_limit := decision.limit_kind;
                denial_used := decision.used;
                denial_max := decision.max_value;
                denial_next_free_at := decision.next_free_at;
                RETURN;
            END IF;
        END IF;
    END IF;
    -- The lease is as long as the caller asked, from the time the claim is made.
    v_lease_until := v_now + (p_lease_until - p_now);
    UPDATE posts SET status = 'posting', lease_owner = p_worker, lease_expires_at = v_lease_until,
        generation = generation + 1, version = version + 1, updated_at = v_now,
        deferred_until = NULL,
        event_actor = p_actor, event_note = p_note
        WHERE id = p_id RETURNING generation INTO v_generation;
    IF p_window_limit IS NOT NULL THEN
        -- Sent as it is made when the intent is written with it.
        INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at,
                                  cost_usd_micros)
            VALUES (p_id, v_generation, cur.channel, 'reserved', v_now,
                    CASE WHEN p_intent_key IS NOT NULL THEN v_now END,
                    COALESCE(p_budget_cost, 0));
    END IF;
    IF p_intent_key IS NOT NULL THEN
        IF NOT (v_lease_until > v_now + p_intent_margin_us * interval '1 microsecond') THEN
            PERFORM airlock_raise('AL012', 'fenced',
                jsonb_build_object('generation', v_generation));
        END IF;
        written := airlock_insert_intent(p_id, v_generation, p_intent_key, p_intent_part, NULL,
                                         v_now);
        intent_phase := written.phase;
        intent_key := written.idempotency_key;
        intent_platform_ref := written.platform_ref;
        intent_created_at := written.created_at;
        intent_settled_at := written.settled_at;
        intent_part := written.part;
    END IF;
    SELECT * INTO post FROM posts WHERE id = p_id;
    outcome := 'claimed';
END $$;

-- Store::claim_post for the claims a process makes at the same time (issue 28): one
-- transaction, one commit, and one statement per table written, however many posts.
-- Only the common claim comes here (src/claims.rs): counted against the window and its
-- day, without a budget, its intent (if any) that of part 1. Each post is checked as
-- airlock_claim_post checks it. A post this does not take as it comes (a test post, one
-- of several parts, a channel with a budget in the ledger) is answered `single`, and so
-- is every post still open when the batch cannot prove room for all: the caller then
-- claims it alone, with airlock_claim_post.
-- The proof is airlock_claim_post's quick one, unchanged: the batch holds a slot for each
-- post it claims (at most half the slots; a post beyond them is made alone) and its
-- channels' limits shared, so the other claims in flight are at most the slots left,
-- and room for one more with every other slot in flight is room for the whole batch.
-- `p_day` holds each claim's `p_day_len` day starts one after another. Any refusal fails
-- the whole batch (nothing is written): the caller then claims each post alone, which
-- refuses the one at fault with airlock_claim_post's own error.
-- Rows: the claim's index (from 1) with what airlock_claim_post returns for it.
-- Generic plans: a plan for the values knows how long the arrays are and always looks
-- cheaper than the generic one, so every call would plan each statement again.
CREATE OR REPLACE FUNCTION airlock_claim_batch(
    p_id bigint[], p_version bigint[], p_allow_test boolean[], p_worker text[],
    p_actor text[], p_now timestamptz[], p_lease_until timestamptz[], p_note text[],
    p_window_us bigint, p_window_limit bigint, p_daily_limit bigint[], p_day timestamptz[],
    p_day_len integer, p_intent_key text[], p_intent_margin_us bigint[])
RETURNS TABLE (request bigint, outcome text, pause_scope text, pause_reason text,
    intent_phase text, intent_key text, intent_platform_ref text,
    intent_created_at timestamptz, intent_settled_at timestamptz, intent_part bigint,
    post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    started timestamptz := clock_timestamp();
    n integer := COALESCE(cardinality(p_id), 0);
    -- Per claim: null while open, then gone | gone_post | paused | single | claimed.
    answer text[] := array_fill(NULL::text, ARRAY[n]);
    scopes text[] := array_fill(NULL::text, ARRAY[n]);
    reasons text[] := array_fill(NULL::text, ARRAY[n]);
    chan text[] := array_fill(NULL::text, ARRAY[n]);
    -- The claim's channel's limits as read (null: none).
    seen channel_limits[] := array_fill(NULL::channel_limits, ARRAY[n]);
    daily bigint[] := p_daily_limit;
    stamp timestamptz[] := array_fill(NULL::timestamptz, ARRAY[n]);
    days timestamptz[];
    locked bigint[];
    win bigint := p_window_us;
    win_limit bigint := p_window_limit;
    ledger ledger_limits;
    lim channel_limits;
    cur posts;
    pause record;
    slots integer;
    held integer[];
    open_n integer;
    taken integer := 0;
    proved boolean;
    earliest timestamptz;
    c_id bigint[];
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF pg_current_xact_id_if_assigned() IS NOT NULL
       OR p_window_us IS NULL OR p_window_limit IS NULL OR p_day_len IS NULL
       OR array_position(p_daily_limit, NULL) IS NOT NULL
       OR EXISTS (SELECT 1 FROM unnest(ARRAY[cardinality(p_version),
                          cardinality(p_allow_test), cardinality(p_worker),
                          cardinality(p_actor), cardinality(p_now),
                          cardinality(p_lease_until), cardinality(p_note),
                          cardinality(p_daily_limit), cardinality(p_intent_key),
                          cardinality(p_intent_margin_us)]) c WHERE c IS DISTINCT FROM n)
       OR cardinality(p_day) IS DISTINCT FROM n * p_day_len THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule',
            'a batch of claims is a transaction of its own, with every field of every claim'));
    END IF;
    -- Refuses a caller whose clock is too far from the database's.
    PERFORM airlock_time(t, true) FROM unnest(p_now) t;
    PERFORM airlock_bounded('the lease', extract(epoch FROM x.l - x.t), 0,
                            extract(epoch FROM interval '1 day'))
        FROM unnest(p_lease_until, p_now) x(l, t);
    PERFORM airlock_bounded('the intent margin', COALESCE(m, 0), 0, 86400000000)
        FROM unnest(p_intent_margin_us) m;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'airlock: claims need READ COMMITTED transactions (the server or role default is %)',
            current_setting('transaction_isolation');
    END IF;
    -- Another worker claiming a post now holds its row: that claim moves on, and so does
    -- a second claim of one post in the batch.
    locked := ARRAY(SELECT p.id FROM posts p WHERE p.id = ANY (p_id) ORDER BY p.id
                    FOR UPDATE SKIP LOCKED);
    FOR k IN 1 .. n LOOP
        IF NOT COALESCE(p_id[k] = ANY (locked), false) OR p_id[k] = ANY (p_id[1:k - 1]) THEN
            answer[k] := 'gone';
            CONTINUE;
        END IF;
        SELECT * INTO cur FROM posts WHERE id = p_id[k];
        chan[k] := cur.channel;
        IF NOT COALESCE(cur.status = 'approved' AND cur.posted_at IS NULL
                AND cur.version = p_version[k] AND (NOT cur.test OR p_allow_test[k]), false) THEN
            answer[k] := 'gone_post';
        ELSIF cur.test OR jsonb_array_length(cur.more_parts) > 0
              OR cur.first_comment IS NOT NULL THEN
            answer[k] := 'single';
        END IF;
    END LOOP;
    -- The claims' status events wait for the event feed's lock: wait for it before the
    -- pauses row is held, so that a session holding the feed never holds up a pause.
    PERFORM pg_advisory_xact_lock_shared(1095912450, 0);
    PERFORM airlock_lock('pauses', false);
    IF EXISTS (SELECT 1 FROM pauses p WHERE p.resumed_at IS NULL) THEN
        FOR k IN 1 .. n LOOP
            CONTINUE WHEN answer[k] IS NOT NULL;
            SELECT p.scope, p.reason INTO pause FROM pauses p WHERE p.resumed_at IS NULL
                AND (p.scope = '*' OR p.scope = chan[k])
                ORDER BY p.scope = '*' DESC, p.id LIMIT 1;
            IF FOUND THEN
                answer[k] := 'paused';
                scopes[k] := pause.scope;
                reasons[k] := pause.reason;
            END IF;
        END LOOP;
    END IF;
    -- The ledger's limits where the owner wrote them, as airlock_claim_post reads them:
    -- the window's, stricter for every claim of the batch, is stricter for none.
    SELECT * INTO ledger FROM ledger_limits;
    FOR k IN 1 .. n LOOP
        CONTINUE WHEN answer[k] IS NOT NULL;
        SELECT * INTO lim FROM channel_limits c WHERE c.channel = chan[k];
        seen[k] := lim;
        IF ledger.window_us IS NULL OR lim.channel IS NULL THEN
            IF NOT airlock_session_is_owner() THEN
                PERFORM airlock_raise('AL022', 'limits', jsonb_build_object('what', format(
                    'the ledger holds no limits for channel %s', chan[k])));
            END IF;
        ELSIF lim.budget_monthly IS NOT NULL THEN
            answer[k] := 'single';
        ELSE
            PERFORM airlock_check_periods('day',
                p_day[(k - 1) * p_day_len + 1 : k * p_day_len], lim.zone, false,
                airlock_now_after(p_now[k], started));
            win := greatest(win, ledger.window_us);
            win_limit := least(win_limit, ledger.window_limit);
            daily[k] := least(daily[k], lim.daily_limit);
        END IF;
    END LOOP;
    -- A window slot for each claim left (skipping those held), and the proof for each of
    -- their days, read after the slots are held.
    open_n := cardinality(array_positions(answer, NULL));
    IF open_n > 0 THEN
        SELECT count(*) INTO slots FROM ledger_locks WHERE name LIKE 'window slot %';
        -- At most half of them: another process's batch finds as many free.
        held := ARRAY(SELECT substr(name, 13)::integer FROM ledger_locks
                      WHERE name LIKE 'window slot %' ORDER BY random()
                      LIMIT least(open_n, greatest(slots / 2, 1)) FOR UPDATE SKIP LOCKED);
        -- A claim beyond the slots free now is made alone.
        FOR k IN 1 .. n LOOP
            CONTINUE WHEN answer[k] IS NOT NULL;
            IF taken = cardinality(held) THEN
                answer[k] := 'single';
            ELSE
                taken := taken + 1;
            END IF;
        END LOOP;
        -- Each claim's channel's limits, shared, as a claim alone holds them: a claim near
        -- its channel's daily limit waits for these. Limits the owner rewrote since they
        -- were read leave every claim to be made alone, reading them again.
        PERFORM 1 FROM channel_limits c
            WHERE c.channel = ANY (ARRAY(SELECT chan[k]
                                         FROM unnest(array_positions(answer, NULL)) k))
            ORDER BY c.channel COLLATE "C" FOR SHARE;
        -- (Once for each channel and limits as read.)
        IF EXISTS (SELECT 1 FROM (SELECT DISTINCT ON (chan[k], seen[k]::text) k
                                  FROM unnest(array_positions(answer, NULL)) k) o
                   WHERE airlock_limits_moved(chan[o.k], ledger, seen[o.k])) THEN
            taken := 0;
        END IF;
        -- Stamped after any wait for the rows.
        FOR k IN 1 .. n LOOP
            IF answer[k] IS NULL THEN
                stamp[k] := airlock_now_after(p_now[k], started);
            END IF;
        END LOOP;
        -- The proof at the earliest stamp holds for the later ones: their windows count
        -- no hour it does not.
        earliest := (SELECT min(t) FROM unnest(stamp) t);
        proved := taken > 0;
        FOR k IN 1 .. n LOOP
            EXIT WHEN NOT proved;
            CONTINUE WHEN answer[k] IS NOT NULL;
            days := p_day[(k - 1) * p_day_len + 1 : k * p_day_len];
            -- (Once for each channel, limit and days.)
            CONTINUE WHEN EXISTS (SELECT 1 FROM generate_series(1, k - 1) j
                WHERE answer[j] IS NULL AND chan[j] = chan[k] AND daily[j] = daily[k]
                  AND p_day[(j - 1) * p_day_len + 1 : j * p_day_len] = days);
            proved := airlock_quota_far(chan[k], earliest, win * interval '1 microsecond',
                win_limit - (slots - 1), daily[k] - (slots - 1), days);
        END LOOP;
        FOR k IN 1 .. n LOOP
            IF answer[k] IS NULL THEN
                answer[k] := CASE WHEN proved THEN 'claimed' ELSE 'single' END;
            END IF;
        END LOOP;
    END IF;
    c_id := ARRAY(SELECT p_id[k] FROM unnest(array_positions(answer, 'claimed')) k);
    IF cardinality(c_id) > 0 THEN
        PERFORM set_config('airlock.slot', held[1]::text, true);
        -- airlock_insert_intent's checks, for every claim with an intent: the lease
        -- outlasts the request, no intent of the new generation, and part 1 is next.
        IF EXISTS (SELECT 1 FROM unnest(array_positions(answer, 'claimed')) k
                   WHERE p_intent_key[k] IS NOT NULL
                     AND NOT (p_lease_until[k] - p_now[k]
                              > p_intent_margin_us[k] * interval '1 microsecond'))
           OR EXISTS (SELECT 1 FROM unnest(array_positions(answer, 'claimed')) k
                      JOIN posts p ON p.id = p_id[k]
                      JOIN intents i ON i.post_id = p.id
                      WHERE p_intent_key[k] IS NOT NULL
                        AND (i.generation = p.generation + 1 OR i.phase = 'succeeded')) THEN
            PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule',
                'an intent of this batch is not the next: claim its post alone'));
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(array_positions(answer, 'claimed')) k
                   WHERE p_intent_key[k] IS NOT NULL) THEN
            PERFORM set_config('synchronous_commit', 'on', true);
        END IF;
        -- The lease is as long as the caller asked, from the time the claim is made.
        UPDATE posts p SET status = 'posting', lease_owner = p_worker[x.k],
            lease_expires_at = stamp[x.k] + (p_lease_until[x.k] - p_now[x.k]),
            generation = p.generation + 1, version = p.version + 1, updated_at = stamp[x.k],
            deferred_until = NULL, event_actor = p_actor[x.k], event_note = p_note[x.k]
            FROM unnest(array_positions(answer, 'claimed')) x(k)
            WHERE p.id = p_id[x.k];
        -- Sent as it is made when the intent is written with it.
        INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at,
                                  cost_usd_micros)
            SELECT p.id, p.generation, p.channel, 'reserved', stamp[x.k],
                   CASE WHEN p_intent_key[x.k] IS NOT NULL THEN stamp[x.k] END, 0
            FROM unnest(array_positions(answer, 'claimed')) x(k)
            JOIN posts p ON p.id = p_id[x.k] ORDER BY p.id;
        INSERT INTO intents (post_id, generation, idempotency_key, part, phase, platform_ref,
                             created_at)
            SELECT p.id, p.generation, p_intent_key[x.k], 1, 'sending', NULL, stamp[x.k]
            FROM unnest(array_positions(answer, 'claimed')) x(k)
            JOIN posts p ON p.id = p_id[x.k]
            WHERE p_intent_key[x.k] IS NOT NULL ORDER BY p.id;
    END IF;
    RETURN QUERY
        SELECT x.k, CASE x.a WHEN 'gone_post' THEN 'gone' ELSE x.a END, scopes[x.k],
               reasons[x.k], i.phase, i.idempotency_key, i.platform_ref, i.created_at,
               i.settled_at, i.part, p
        FROM unnest(answer) WITH ORDINALITY x(a, k)
        LEFT JOIN posts p ON p.id = p_id[x.k] AND x.a IN ('gone_post', 'claimed')
        LEFT JOIN intents i ON x.a = 'claimed' AND i.post_id = p.id
                            AND i.generation = p.generation
        ORDER BY x.k;
END $$;

-- Store::record_intent: the intent of part `p_part`, fenced by the claim's generation and
-- a lease that outlasts the request, refused while paused, committed durably.
CREATE OR REPLACE FUNCTION airlock_record_intent(p_id bigint, p_generation bigint, p_key text,
    p_part bigint, p_platform_ref text, p_now timestamptz, p_margin_us bigint)
RETURNS intents LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    started timestamptz := clock_timestamp();
    cur posts;
    v_now timestamptz;
    pause record;
BEGIN
    -- Refuses a caller whose clock is too far from the database's.
    PERFORM airlock_time(p_now, true);
    PERFORM airlock_bounded('the part', p_part, 1, 50);
    PERFORM airlock_bounded('the intent margin', p_margin_us, 0, 86400000000);
    -- The fence locks the post row; the lease is judged when that lock is ours.
    SELECT * INTO cur FROM posts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM airlock_raise('AL010', 'not found', NULL);
    END IF;
    IF cur.status <> 'posting' OR cur.generation <> p_generation THEN
        PERFORM airlock_raise('AL012', 'fenced', jsonb_build_object('generation', p_generation));
    END IF;
    PERFORM airlock_bounded('the part', p_part, 1, 1 + jsonb_array_length(cur.more_parts)
                            + CASE WHEN cur.first_comment IS NULL THEN 0 ELSE 1 END);
    v_now := airlock_now_after(p_now, started);
    IF cur.lease_expires_at IS NULL
       OR NOT (cur.lease_expires_at > v_now + p_margin_us * interval '1 microsecond') THEN
        PERFORM airlock_raise('AL012', 'fenced', jsonb_build_object('generation', p_generation));
    END IF;
    SELECT * INTO pause FROM airlock_active_pause(p_id);
    IF pause.scope IS NOT NULL THEN
        PERFORM airlock_raise('AL013', 'paused',
            jsonb_build_object('scope', pause.scope, 'reason', pause.reason));
    END IF;
    RETURN airlock_insert_intent(p_id, p_generation, p_key, p_part, p_platform_ref, v_now);
END $$;

-- What a named change does to one post with its verdict, events, intent phase,
-- reservations, failure counter, pause and notifications (airlock_store::Effects, applied
-- as the SQLite backend applies it). Internal: the runtime role calls only the named
-- changes below (airlock_change_*), each of which passes one fixed combination, so a
-- change that makes no sense cannot be written. `p_set` holds the fields to set (a key
-- present with null clears the column). `p_landed_id` and `p_landed_permalink`: what the
-- settled intent sent is out there (Effects::intent_landed; null leaves the intent's as
-- it is). `p_next_part`: the claim goes on with the next part (Effects::next_part), under
-- the next generation with its lease until then. outcome: updated, or fenced when a stale
-- generation's write was refused (its evidence recorded with `p_record_stale`).
CREATE OR REPLACE FUNCTION airlock_apply_change(
    p_id bigint, p_guard_kind text, p_guard bigint, p_to text,
    p_actor text, p_note text, p_now timestamptz, p_set jsonb,
    p_event_kind text, p_event_note text, p_event_unless_moved boolean,
    p_intent_required boolean, p_intent_phase text,
    p_verdict jsonb, p_reservation text, p_record_stale boolean, p_failures text,
    p_pause jsonb, p_notify jsonb, p_duplicate_window_us bigint, p_from text[],
    p_landed_id text, p_landed_permalink text, p_next_part timestamptz,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    caller_now timestamptz := p_now;
    cur posts;
    after text;
    new_quarantined timestamptz;
    failures bigint := 0;
    sender bigint;
    s jsonb := COALESCE(p_set, '{}'::jsonb);
    c jsonb := p_set->'content';
BEGIN
    -- A change without its guard, writer or starting statuses would skip the checks that
    -- hold it (a NULL compares as neither equal nor different).
    IF p_guard IS NULL OR p_guard_kind IS NULL OR p_guard_kind NOT IN ('version', 'generation')
       OR p_actor IS NULL OR p_from IS NULL OR cardinality(p_from) = 0 THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a change names its guard, its writer and the statuses it starts from'));
    END IF;
    p_now := airlock_time(p_now, false);
    -- The next part's lease is as long as the caller asked, from the time of the write (as
    -- a claim's is).
    p_next_part := p_now + (p_next_part - caller_now);
    IF p_guard_kind = 'generation' THEN
        -- An outcome of the guarded path: it must survive a crash like the intent did.
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    SELECT * INTO cur FROM posts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM airlock_raise('AL010', 'not found', NULL);
    END IF;
    IF p_guard_kind = 'version' AND p_guard <> cur.version THEN
        PERFORM airlock_raise('AL011', 'conflict', NULL);
    END IF;
    IF p_guard_kind = 'generation'
       AND (cur.status <> 'posting' OR p_guard <> cur.generation) THEN
        -- Nothing of the stale write applies; only the evidence is recorded
        -- (airlock_store::decide::stale_evidence).
        IF p_record_stale THEN
            INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
                VALUES (p_id, p_now, 'stale_outcome', cur.status, cur.status, p_actor,
                        format('refused a write from generation %s (wanted %s%s); the post had moved on',
                               p_guard, COALESCE(p_to, 'no status change'),
                               COALESCE(': ' || p_note, '')));
            UPDATE posts SET version = version + 1 WHERE id = p_id;
        END IF;
        outcome := 'fenced';
        RETURN;
    END IF;
    -- (Each subquery stands in an IF of its own: a condition that a null argument
    -- decides alone would get a plan for the values on every call, never a kept one.)
    IF p_intent_required IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM intents WHERE post_id = p_id
                   AND generation = cur.generation) <> p_intent_required THEN
            PERFORM airlock_raise('AL011', 'conflict', NULL);
        END IF;
    END IF;
    -- The change's starting statuses and the status edge (airlock_store::decide::
    -- illegal_step); the trigger checks the edge too.
    IF NOT (cur.status = ANY (p_from)) THEN
        PERFORM airlock_raise('AL001', 'illegal transition', jsonb_build_object(
            'from', cur.status, 'to', COALESCE(p_to, cur.status)));
    END IF;
    IF p_to IS NOT NULL AND p_to <> cur.status AND p_note IS NULL THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a status change carries its note'));
    END IF;
    IF p_to IS NOT NULL AND p_to <> cur.status AND (cur.status || '>' || p_to) NOT IN (
            'draft>approved', 'approved>draft', 'approved>posting', 'posting>approved',
            'posting>posted', 'posting>failed', 'posting>needs_review', 'needs_review>posted',
            'needs_review>failed', 'needs_review>approved', 'failed>approved') THEN
        PERFORM airlock_raise('AL001', 'illegal transition', jsonb_build_object(
            'from', cur.status, 'to', p_to));
    END IF;
    after := COALESCE(p_to, cur.status);
    -- airlock_store::decide::write_refusal: content changes only into a draft, and an
    -- approval names the content the post holds, on approval.
    IF c IS NOT NULL AND after <> 'draft' THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'content changes only into a draft (the approval withdrawn)'));
    END IF;
    IF (s ? 'approved_hash' AND jsonb_typeof(s->'approved_hash') NOT IN ('string', 'null'))
       OR (c IS NOT NULL AND COALESCE(c->>'content_hash', '') !~ '^[0-9a-f]{64}$') THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a content hash is a SHA-256 in lowercase hex'));
    END IF;
    IF jsonb_typeof(s->'approved_hash') = 'string' AND (after <> 'approved'
            OR s->>'approved_hash' <> COALESCE(c->>'content_hash', cur.content_hash)) THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'an approval names the content the post holds, on approval'));
    END IF;
    new_quarantined := CASE WHEN s ? 'quarantined_at' THEN (s->>'quarantined_at')::timestamptz
                            ELSE cur.quarantined_at END;
    -- airlock_store::decide::leaves_quarantine: a quarantined post stays a draft until
    -- released.
    IF cur.quarantined_at IS NOT NULL
       AND NOT (s ? 'quarantined_at' AND s->'quarantined_at' = 'null'::jsonb)
       AND p_to IS NOT NULL AND p_to <> 'draft' THEN
        PERFORM airlock_raise('AL006', 'quarantined', NULL);
    END IF;
    IF new_quarantined IS NOT NULL AND after <> 'draft' THEN
        PERFORM airlock_raise('AL001', 'illegal transition', jsonb_build_object(
            'from', cur.status, 'to', after));
    END IF;
    -- Approving, a text change or a schedule move into a queued duplicate text
    -- (airlock_store::decide::edit_duplicate_check; the text key before is the one stored
    -- with the text).
    IF p_duplicate_window_us IS NOT NULL AND (
           (cur.status = 'draft' AND p_to = 'approved')
        OR (c IS NOT NULL AND (c->>'text_key') IS DISTINCT FROM cur.text_key)
        OR (s ? 'scheduled_at' AND (s->>'scheduled_at')::timestamptz <> cur.scheduled_at)) THEN
        PERFORM airlock_refuse_duplicate(cur.channel,
            CASE WHEN c IS NOT NULL THEN c->>'text_key' ELSE cur.text_key END,
            CASE WHEN s ? 'scheduled_at' THEN (s->>'scheduled_at')::timestamptz
                 ELSE cur.scheduled_at END,
            p_duplicate_window_us, p_id);
    END IF;
    IF p_verdict IS NOT NULL THEN
        -- In the round the verdict was given in, before this change may start a new one.
        INSERT INTO verdicts (post_id, verdict, reasons, actor, content_hash, rubric_hash,
                              review_round, content, at)
            VALUES (p_id, p_verdict->>'verdict', p_verdict->'reasons', p_actor,
                    p_verdict->>'content_hash', p_verdict->>'rubric_hash',
                    cur.review_round, p_verdict->'content', p_now);
    END IF;
    UPDATE posts SET version = version + 1, updated_at = p_now,
        event_actor = p_actor, event_note = p_note,
        status = COALESCE(p_to, status),
        lease_owner = CASE WHEN p_to IS NOT NULL AND p_to <> 'posting' THEN NULL
                           ELSE lease_owner END,
        lease_expires_at = CASE WHEN p_next_part IS NOT NULL THEN p_next_part
                                WHEN p_to IS NOT NULL AND p_to <> 'posting' THEN NULL
                                ELSE lease_expires_at END,
        generation = CASE WHEN p_next_part IS NOT NULL THEN generation + 1 ELSE generation END,
        title = CASE WHEN c IS NOT NULL THEN c->>'title' ELSE title END,
        text = CASE WHEN c IS NOT NULL THEN c->>'text' ELSE text END,
        media = CASE WHEN c IS NOT NULL THEN c->'media' ELSE media END,
        more_parts = CASE WHEN c IS NOT NULL THEN COALESCE(c->'more_parts', '[]'::jsonb)
                          ELSE more_parts END,
        first_comment = CASE WHEN c IS NOT NULL THEN c->>'first_comment' ELSE first_comment END,
        link = CASE WHEN c IS NOT NULL THEN c->>'link' ELSE link END,
        content_hash = CASE WHEN c IS NOT NULL THEN c->>'content_hash' ELSE content_hash END,
        text_key = CASE WHEN c IS NOT NULL THEN c->>'text_key' ELSE text_key END,
        scheduled_at = CASE WHEN s ? 'scheduled_at' THEN (s->>'scheduled_at')::timestamptz
                            ELSE scheduled_at END,
        approved_hash = CASE WHEN s ? 'approved_hash' THEN s->>'approved_hash'
                             ELSE approved_hash END,
        approved_by = CASE WHEN s ? 'approved_by' THEN s->>'approved_by' ELSE approved_by END,
        edited_by = CASE WHEN s ? 'edited_by' THEN s->>'edited_by' ELSE edited_by END,
        attempts = CASE WHEN (s->>'reset_attempts')::boolean THEN 0
                        WHEN (s->>'count_attempt')::boolean THEN attempts + 1
                        ELSE attempts END,
        waits = CASE WHEN (s->>'reset_attempts')::boolean THEN 0
                     WHEN (s->>'count_wait')::boolean THEN waits + 1
                     ELSE waits END,
        not_before = CASE WHEN s ? 'not_before' THEN (s->>'not_before')::timestamptz
                          ELSE not_before END,
        deferred_until = CASE WHEN s ? 'deferred_until'
                              THEN (s->>'deferred_until')::timestamptz ELSE deferred_until END,
        platform_post_id = CASE WHEN s ? 'platform_post_id' THEN s->>'platform_post_id'
                                ELSE platform_post_id END,
        permalink = CASE WHEN s ? 'permalink' THEN s->>'permalink' ELSE permalink END,
        posted_at = CASE WHEN s ? 'posted_at' THEN (s->>'posted_at')::timestamptz
                         ELSE posted_at END,
        error = CASE WHEN s ? 'error' THEN s->>'error' ELSE error END,
        revisions = CASE WHEN (s->>'reset_revisions')::boolean THEN 0
                         WHEN (s->>'count_revision')::boolean THEN revisions + 1
                         ELSE revisions END,
        quarantined_at = new_quarantined
        WHERE id = p_id RETURNING * INTO post;
    -- The status event says what happened when the status moved.
    IF p_event_kind IS NOT NULL AND NOT (p_event_unless_moved AND after <> cur.status) THEN
        INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
            VALUES (p_id, p_now, p_event_kind, after, after, p_actor, p_event_note);
    END IF;
    IF p_intent_phase IS NOT NULL THEN
        UPDATE intents SET phase = p_intent_phase, settled_at = p_now,
            platform_post_id = COALESCE(p_landed_id, platform_post_id),
            permalink = COALESCE(p_landed_permalink, permalink) WHERE id = (
            SELECT max(id) FROM intents WHERE post_id = p_id
            AND (p_guard_kind <> 'generation' OR generation = p_guard));
    END IF;
    -- A slot is given back only for a request that provably never left: an intent of
    -- this claim still `sending` ends as not sent or refused with it.
    IF p_reservation = 'released' AND p_guard_kind = 'generation'
       AND COALESCE(p_intent_phase, '') NOT IN ('not_sent', 'rejected') THEN
        IF EXISTS (SELECT 1 FROM intents i WHERE i.post_id = p_id AND i.generation = p_guard
                   AND i.phase = 'sending') THEN
            PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule',
                'a reservation whose request may have left is not given back: settle its intent'));
        END IF;
    END IF;
    -- airlock_store::Settle: `committed`, `released`, or `attempt:G` (the attempt of
    -- generation G sent what was published: its reservation counts, the others end).
    IF p_reservation LIKE 'attempt:%' THEN
        sender := substr(p_reservation, length('attempt:') + 1)::bigint;
        -- The attempt that sent it is an earlier one of this post's, with its slot, whose
        -- request may have left: its intent still open, or settled `not_sent` by a person
        -- (a post in review), whom a later proof may prove wrong. An attempt the worker
        -- ended as not sent or refused provably sent nothing, and cannot take the count
        -- of a later one back into its own day.
        IF NOT (sender < cur.generation
                AND EXISTS (SELECT 1 FROM reservations r
                            WHERE r.post_id = p_id AND r.generation = sender)
                AND EXISTS (SELECT 1 FROM intents i WHERE i.post_id = p_id
                            AND i.generation = sender
                            AND (i.phase IN ('sending', 'unknown')
                                 OR (i.phase = 'not_sent' AND EXISTS (
                                     SELECT 1 FROM post_events e WHERE e.post_id = p_id
                                       AND e.kind = 'status' AND e.from_status = 'needs_review'
                                       AND e.at >= i.created_at))))) THEN
            PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule', format(
                'generation %s of post %s is no earlier attempt whose request may have left',
                sender, p_id)));
        END IF;
        UPDATE reservations SET settled_at = p_now,
            state = CASE WHEN generation = sender THEN 'committed' ELSE 'released' END
            WHERE post_id = p_id AND state = 'reserved';
        -- A resolution released it: the attempt is counted again, with its own stamps.
        INSERT INTO reservations (post_id, generation, channel, state, created_at, sent_at,
                                  settled_at, cost_usd_micros)
            SELECT r.post_id, r.generation, r.channel, 'committed', r.created_at,
                   COALESCE(r.sent_at, (SELECT min(i.created_at) FROM intents i
                                        WHERE i.post_id = p_id AND i.generation = sender)),
                   p_now, r.cost_usd_micros
            FROM reservations r WHERE r.post_id = p_id AND r.generation = sender
              AND NOT EXISTS (SELECT 1 FROM reservations c WHERE c.post_id = p_id
                              AND c.generation = sender AND c.state = 'committed')
            ORDER BY r.id DESC LIMIT 1;
    ELSIF p_reservation IN ('committed', 'released') THEN
        UPDATE reservations SET state = p_reservation, settled_at = p_now
            WHERE post_id = p_id AND state = 'reserved';
    END IF;
    IF p_failures = 'reset' THEN
        DELETE FROM channel_failures WHERE channel = cur.channel;
    ELSIF p_failures = 'increment' THEN
        INSERT INTO channel_failures (channel, consecutive) VALUES (cur.channel, 1)
            ON CONFLICT (channel) DO UPDATE SET consecutive = channel_failures.consecutive + 1
            RETURNING consecutive INTO failures;
    END IF;
    -- airlock_store::decide::pause_applies
    IF p_pause IS NOT NULL AND (p_pause->'after_failures' IS NULL
            OR jsonb_typeof(p_pause->'after_failures') = 'null'
            OR failures >= (p_pause->>'after_failures')::bigint) THEN
        PERFORM airlock_insert_pause(p_pause->>'scope', p_pause->>'reason', p_actor, p_now,
                                     p_pause->'notify');
    END IF;
    PERFORM airlock_insert_outbox(p_notify, p_now);
    outcome := 'updated';
END $$;

-- A note cut as airlock_core::limits::fit_chars cuts it.
CREATE OR REPLACE FUNCTION airlock_fit(p_text text, p_max integer)
RETURNS text LANGUAGE sql IMMUTABLE
SET search_path = {{schema}}, pg_temp AS $$
    SELECT CASE WHEN char_length(p_text) <= p_max THEN p_text
                WHEN p_max <= 0 THEN ''
                ELSE left(p_text, p_max - 1) || '…' END;
$$;

------------------------------------------------------------------------------------------
-- Store::change_post: one function per named change (airlock_store::Change and
-- Change::effects, whose rows these touch the same way). Each takes the post, who, when,
-- the notifications, and exactly what its change needs.
------------------------------------------------------------------------------------------

-- The worker holding the claim, fenced by its generation.

-- The post's id and permalink are part 1's; the intent gets those of the part it sent.
CREATE OR REPLACE FUNCTION airlock_change_published(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_part bigint,
    p_posted_at timestamptz, p_platform_post_id text, p_permalink text, p_sent_by bigint,
    p_note text, p_flag text, p_pause jsonb, OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    PERFORM airlock_check_posted_at(p_id, p_posted_at, p_now);
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, 'posted', p_actor,
        p_note, p_now,
        jsonb_strip_nulls(jsonb_build_object('posted_at', p_posted_at,
            'platform_post_id', CASE WHEN p_part = 1 THEN p_platform_post_id END,
            'permalink', CASE WHEN p_part = 1 THEN p_permalink END))
            || jsonb_build_object('not_before', NULL, 'error', p_flag),
        NULL, NULL, false, NULL, 'succeeded', NULL,
        CASE WHEN p_sent_by IS NULL THEN 'committed' ELSE 'attempt:' || p_sent_by END,
        true, 'reset', p_pause, p_notify, NULL, '{posting}', p_platform_post_id, p_permalink,
        NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

-- airlock_change_published for the outcomes a process writes at the same time (issue 28):
-- one transaction, one commit, and one statement per table written. Each outcome is the
-- one airlock_apply_change writes for it; one it would not write as it comes (a stale
-- or missing generation, whose evidence only it records; a quarantined post; a publish time it
-- would refuse; a second outcome of one post) is answered `single`, with nothing of it
-- written, and the caller writes it alone. Only outcomes without a pause and counted by
-- their own claim come here (src/outcomes.rs). `p_notify` holds each outcome's
-- notifications, in order.
-- Rows: the outcome's index (from 1), updated or single, and the post as written.
-- Generic plans, as airlock_claim_batch's.
CREATE OR REPLACE FUNCTION airlock_change_published_batch(p_id bigint[], p_actor text[],
    p_now timestamptz[], p_notify jsonb, p_generation bigint[], p_part bigint[],
    p_posted_at timestamptz[], p_platform_post_id text[], p_permalink text[],
    p_note text[], p_flag text[])
RETURNS TABLE (request bigint, outcome text, post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    n integer := COALESCE(cardinality(p_id), 0);
    stamp timestamptz[];
    answer text[];
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(ARRAY[cardinality(p_actor), cardinality(p_now),
                       cardinality(p_generation), cardinality(p_part),
                       cardinality(p_posted_at), cardinality(p_platform_post_id),
                       cardinality(p_permalink), cardinality(p_note),
                       cardinality(p_flag)]) c WHERE c IS DISTINCT FROM n)
       OR jsonb_typeof(p_notify) IS DISTINCT FROM 'array'
       OR jsonb_array_length(p_notify) <> n THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule',
            'a batch of outcomes gives every field of every outcome'));
    END IF;
    stamp := ARRAY(SELECT airlock_time(t, false) FROM unnest(p_now) WITH ORDINALITY u(t, k)
                   ORDER BY k);
    -- An outcome of the guarded path: it must survive a crash like the intent did.
    PERFORM set_config('synchronous_commit', 'on', true);
    PERFORM 1 FROM posts WHERE id = ANY (p_id) ORDER BY id FOR UPDATE;
    -- airlock_apply_change's checks and airlock_check_posted_at's, on the rows now held.
    answer := ARRAY(
        SELECT CASE WHEN p.id IS NULL OR p_id[x.k] = ANY (p_id[1:x.k - 1])
                         OR p.status <> 'posting'
                         OR p.generation IS DISTINCT FROM p_generation[x.k]
                         OR p_note[x.k] IS NULL OR p_actor[x.k] IS NULL
                         OR p.quarantined_at IS NOT NULL
                         OR p_posted_at[x.k] IS NULL OR NOT isfinite(p_posted_at[x.k])
                         OR p_posted_at[x.k] > stamp[x.k] + interval '5 minutes'
                         OR p_posted_at[x.k] < COALESCE(
                                (SELECT min(i.created_at) FROM intents i WHERE i.post_id = p.id),
                                stamp[x.k] - interval '100 years' + interval '5 minutes')
                                - interval '5 minutes'
                    THEN 'single' ELSE 'updated' END
        FROM generate_series(1, n) x(k) LEFT JOIN posts p ON p.id = p_id[x.k]
        ORDER BY x.k);
    IF 'updated' = ANY (answer) THEN
        UPDATE posts p SET version = p.version + 1, updated_at = stamp[x.k],
            event_actor = p_actor[x.k], event_note = p_note[x.k], status = 'posted',
            lease_owner = NULL, lease_expires_at = NULL, posted_at = p_posted_at[x.k],
            platform_post_id = CASE WHEN p_part[x.k] = 1 AND p_platform_post_id[x.k] IS NOT NULL
                                    THEN p_platform_post_id[x.k] ELSE p.platform_post_id END,
            permalink = CASE WHEN p_part[x.k] = 1 AND p_permalink[x.k] IS NOT NULL
                             THEN p_permalink[x.k] ELSE p.permalink END,
            not_before = NULL, error = p_flag[x.k]
            FROM unnest(array_positions(answer, 'updated')) x(k)
            WHERE p.id = p_id[x.k];
        -- (One intent a generation: the latest of the claim's, as airlock_apply_change
        -- settles.)
        UPDATE intents i SET phase = 'succeeded', settled_at = stamp[x.k],
            platform_post_id = COALESCE(p_platform_post_id[x.k], i.platform_post_id),
            permalink = COALESCE(p_permalink[x.k], i.permalink)
            FROM unnest(array_positions(answer, 'updated')) x(k)
            WHERE i.post_id = p_id[x.k] AND i.generation = p_generation[x.k];
        UPDATE reservations r SET state = 'committed', settled_at = stamp[x.k]
            FROM unnest(array_positions(answer, 'updated')) x(k)
            WHERE r.post_id = p_id[x.k] AND r.state = 'reserved';
        -- In one order, so that two batches never wait for each other's rows.
        PERFORM 1 FROM channel_failures f WHERE f.channel IN (
            SELECT p.channel FROM unnest(array_positions(answer, 'updated')) x(k)
            JOIN posts p ON p.id = p_id[x.k]) ORDER BY f.channel FOR UPDATE;
        DELETE FROM channel_failures f USING unnest(array_positions(answer, 'updated')) x(k)
            JOIN posts p ON p.id = p_id[x.k]
            WHERE f.channel = p.channel;
        INSERT INTO outbox (sink, event, post_id, payload, created_at, next_attempt_at)
            SELECT m.value->>'sink', m.value->>'event', (m.value->>'post_id')::bigint,
                   m.value->'payload', stamp[x.k], stamp[x.k]
            FROM unnest(array_positions(answer, 'updated')) x(k)
            CROSS JOIN LATERAL jsonb_array_elements(COALESCE(p_notify->(x.k - 1), '[]'))
                WITH ORDINALITY AS m(value, i)
            ORDER BY x.k, m.i;
    END IF;
    RETURN QUERY
        SELECT x.k, x.a, p
        FROM unnest(answer) WITH ORDINALITY x(a, k)
        LEFT JOIN posts p ON p.id = p_id[x.k] AND x.a = 'updated'
        ORDER BY x.k;
END $$;

-- One part of several is out and the claim goes on with the next: the post stays
-- `posting` under the next generation with its lease until `p_lease_until`, the part's
-- intent succeeded with its ids, the reservation committed (it counts from the first
-- part), the channel's failures reset; the post's id and permalink are part 1's.
CREATE OR REPLACE FUNCTION airlock_change_part_published(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_part bigint,
    p_platform_post_id text, p_permalink text, p_sent_by bigint, p_lease_until timestamptz,
    p_note text, OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
    cur posts;
BEGIN
    -- Without its lease the claim would stay on the generation whose intent is spent;
    -- without its id the next part would have nothing to reply to.
    IF p_part IS NULL OR p_part < 1 OR p_platform_post_id IS NULL OR p_lease_until IS NULL THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a part that is out names the part, its id and the next part''s lease'));
    END IF;
    PERFORM airlock_time(p_now, true);
    PERFORM airlock_bounded('the next part''s lease', extract(epoch FROM p_lease_until - p_now),
                            0, extract(epoch FROM interval '1 day'));
    SELECT * INTO cur FROM posts WHERE id = p_id;
    IF FOUND THEN
        -- Only a part that is not the post's last request, sent under this claim.
        PERFORM airlock_bounded('the part', p_part, 1, jsonb_array_length(cur.more_parts)
                                + CASE WHEN cur.first_comment IS NULL THEN 0 ELSE 1 END);
        IF cur.status = 'posting' AND cur.generation = p_generation AND NOT EXISTS (
                SELECT 1 FROM intents i WHERE i.post_id = p_id AND i.generation = p_generation
                  AND i.part = p_part AND i.phase = 'sending') THEN
            PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule',
                'a part is out only by the request its claim recorded an intent for'));
        END IF;
    END IF;
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, NULL,
        p_actor, NULL, p_now,
        CASE WHEN p_part = 1 THEN jsonb_strip_nulls(jsonb_build_object(
            'platform_post_id', p_platform_post_id, 'permalink', p_permalink))
            ELSE '{}'::jsonb END,
        'part_published', p_note, false, NULL, 'succeeded', NULL,
        CASE WHEN p_sent_by IS NULL THEN 'committed' ELSE 'attempt:' || p_sent_by END,
        true, 'reset', NULL, p_notify, NULL, '{posting}', p_platform_post_id, p_permalink,
        p_lease_until);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_not_sent(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_reason text, p_note text,
    p_not_before timestamptz, p_counts_attempt boolean, p_counts_wait boolean,
    p_settles_intent boolean, OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    PERFORM airlock_bounded_time('the next try', p_not_before, p_now, interval '1 day',
                                interval '400 days')
        WHERE p_not_before IS NOT NULL;
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, 'approved', p_actor,
        p_note, p_now,
        jsonb_build_object('count_attempt', COALESCE(p_counts_attempt, false),
            'count_wait', COALESCE(p_counts_wait, false), 'not_before', p_not_before,
            'error', p_reason),
        NULL, NULL, false, NULL, CASE WHEN p_settles_intent THEN 'not_sent' END, NULL,
        'released', true, NULL, NULL, p_notify, NULL, '{posting}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_failed(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_reason text,
    p_counts_attempt boolean, p_settles_intent boolean, p_pause jsonb,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, 'failed', p_actor,
        p_reason, p_now,
        jsonb_build_object('count_attempt', COALESCE(p_counts_attempt, false),
            'error', p_reason),
        NULL, NULL, false, NULL, CASE WHEN p_settles_intent THEN 'rejected' END, NULL,
        'released', true, 'increment', p_pause, p_notify, NULL, '{posting}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_unknown(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_reason text, p_pause jsonb,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, 'needs_review',
        p_actor, 'outcome unknown: ' || p_reason, p_now, jsonb_build_object('error', p_reason),
        NULL, NULL, false, NULL, 'unknown', NULL, NULL, true, NULL, p_pause, p_notify, NULL, '{posting}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_held(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_note text, p_pause jsonb,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, 'approved', p_actor,
        p_note, p_now, '{}'::jsonb, NULL, NULL, false, NULL, NULL, NULL, 'released', true,
        NULL, p_pause, p_notify, NULL, '{posting}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_reaped_sent(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_reason text, p_pause jsonb,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation, 'needs_review',
        p_actor, 'outcome unknown: ' || p_reason, p_now, jsonb_build_object('error', p_reason),
        NULL, NULL, false, true, 'unknown', NULL, NULL, false, NULL, p_pause, p_notify, NULL, '{posting}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_reaped_unsent(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_generation bigint, p_reason text, p_note text,
    p_gives_up boolean, p_not_before timestamptz, OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'generation', p_generation,
        CASE WHEN p_gives_up THEN 'failed' ELSE 'approved' END, p_actor, p_note, p_now,
        jsonb_build_object('error', p_reason, 'count_attempt', true)
            || CASE WHEN p_gives_up THEN '{}'::jsonb
                    ELSE jsonb_build_object('not_before', p_not_before) END,
        NULL, NULL, false, false, NULL, NULL, 'released', false, NULL, NULL, p_notify, NULL, '{posting}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

-- People and agents, at the version they read.

CREATE OR REPLACE FUNCTION airlock_change_edited(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_content jsonb,
    p_scheduled_at timestamptz, p_fields text, p_duplicate_window_us bigint,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    PERFORM airlock_bounded_time('the schedule', p_scheduled_at, p_now, interval '100 years',
                                interval '100 years')
        WHERE p_scheduled_at IS NOT NULL;
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'draft', p_actor,
        'edited (' || p_fields || '): approval withdrawn', p_now,
        jsonb_build_object('error', NULL, 'approved_hash', NULL, 'approved_by', NULL)
            || jsonb_strip_nulls(jsonb_build_object('content', p_content,
                'scheduled_at', p_scheduled_at,
                'edited_by', CASE WHEN p_content IS NOT NULL THEN p_actor END)),
        'edited', 'edited ' || p_fields, true, NULL, NULL, NULL, NULL, false, NULL, NULL,
        p_notify, p_duplicate_window_us, '{draft,approved}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

-- p_effect: approve (p_approved_by, p_note, p_duplicate_window_us), await (p_note) or
-- revise (p_counts, p_quarantine, p_error, p_note).
CREATE OR REPLACE FUNCTION airlock_change_verdict(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_verdict jsonb, p_effect text,
    p_approved_by text, p_note text, p_duplicate_window_us bigint, p_counts boolean,
    p_quarantine boolean, p_error text, OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    kind text := CASE WHEN p_quarantine THEN 'quarantined' ELSE 'rejected' END;
    applied record;
BEGIN
    -- A verdict names the content its critic read, and an approval who gave it.
    IF p_verdict IS NULL OR COALESCE(p_verdict->>'content_hash', '') !~ '^[0-9a-f]{64}$'
       OR (p_effect = 'approve' AND p_approved_by IS NULL) OR p_note IS NULL THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a verdict names the content its critic read, and an approval who gave it'));
    END IF;
    -- An approval names only critics whose passes of this content stand: the one given
    -- now, and earlier ones in this review round (or the round a withdrawal ended).
    IF p_effect = 'approve' AND (p_verdict->>'verdict' IS DISTINCT FROM 'pass' OR EXISTS (
            SELECT 1 FROM unnest(string_to_array(p_approved_by, ', ')) AS a(name)
            WHERE a.name <> p_actor AND NOT EXISTS (
                SELECT 1 FROM verdicts v JOIN posts p ON p.id = v.post_id
                WHERE v.post_id = p_id AND v.actor = a.name AND v.verdict = 'pass'
                  AND v.content_hash = p_verdict->>'content_hash'
                  AND v.review_round >= p.review_round - 1))
            OR NOT p_actor = ANY (string_to_array(p_approved_by, ', '))) THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object('rule',
            'an approval names the critic who passes it and only critics whose passes of this content stand'));
    END IF;
    IF p_effect = 'approve' THEN
        SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'approved',
            p_actor, p_note, p_now,
            jsonb_build_object('approved_hash', p_verdict->>'content_hash',
                'approved_by', p_approved_by, 'error', NULL),
            NULL, NULL, false, NULL, NULL, p_verdict, NULL, false, NULL, NULL, p_notify,
            p_duplicate_window_us, '{draft}', NULL, NULL, NULL);
    ELSIF p_effect = 'await' THEN
        SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, NULL,
            p_actor, NULL, p_now, '{}'::jsonb, 'verdict', p_note, false, NULL, NULL,
            p_verdict, NULL, false, NULL, NULL, p_notify, NULL, '{draft}', NULL, NULL, NULL);
    ELSIF p_effect = 'revise' THEN
        SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'draft',
            p_actor, airlock_fit(kind || ': ' || p_note, 4000), p_now,
            jsonb_build_object('approved_hash', NULL, 'approved_by', NULL,
                'error', p_error, 'count_revision', COALESCE(p_counts, false))
                || CASE WHEN p_quarantine THEN jsonb_build_object('quarantined_at',
                        airlock_time(p_now, false)) ELSE '{}'::jsonb END,
            kind, airlock_fit(p_note, 4000), true, NULL, NULL, p_verdict, NULL, false, NULL,
            NULL, p_notify, NULL, '{draft,approved}', NULL, NULL, NULL);
    ELSE
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a verdict approves, awaits more passes, or asks for a revision'));
    END IF;
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_withdrawn(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_note text, p_error text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'draft', p_actor, p_note,
        p_now, jsonb_build_object('approved_hash', NULL, 'approved_by', NULL)
            || jsonb_strip_nulls(jsonb_build_object('error', p_error)),
        NULL, NULL, false, NULL, NULL, NULL, NULL, false, NULL, NULL, p_notify, NULL, '{approved}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_released(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, NULL, p_actor, NULL, p_now,
        jsonb_build_object('quarantined_at', NULL, 'reset_revisions', true, 'error', NULL),
        'released', p_note, false, NULL, NULL, NULL, NULL, false, NULL, NULL, p_notify, NULL, '{draft}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_requeued(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'approved', p_actor,
        'requeued', p_now,
        jsonb_build_object('reset_attempts', true, 'not_before', NULL, 'error', NULL),
        NULL, NULL, false, NULL, NULL, NULL, NULL, false, NULL, NULL, p_notify, NULL, '{failed}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

-- The post's id and permalink are part 1's; the intent gets those of the part it sent.
CREATE OR REPLACE FUNCTION airlock_change_settled_published(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_part bigint,
    p_posted_at timestamptz, p_platform_post_id text, p_permalink text, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    PERFORM airlock_check_posted_at(p_id, p_posted_at, p_now);
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'posted', p_actor, p_note,
        p_now,
        jsonb_strip_nulls(jsonb_build_object('posted_at', p_posted_at,
            'platform_post_id', CASE WHEN p_part = 1 THEN p_platform_post_id END,
            'permalink', CASE WHEN p_part = 1 THEN p_permalink END))
            || jsonb_build_object('error', NULL),
        NULL, NULL, false, NULL, 'succeeded', NULL, 'committed', false, NULL, NULL, p_notify,
        NULL, '{needs_review}', p_platform_post_id, p_permalink, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

-- A part that is not the last is known to be out: `needs_review -> approved`, so the next
-- pass resumes at the part after it; the part's intent succeeded with its ids, the
-- reservation committed; the post's id and permalink are part 1's.
CREATE OR REPLACE FUNCTION airlock_change_part_settled(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_part bigint,
    p_platform_post_id text, p_permalink text, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    -- The next part replies to this one: without its id it cannot be resumed.
    IF p_part IS NULL OR p_part < 1 OR p_platform_post_id IS NULL THEN
        PERFORM airlock_raise('AL020', 'refused', jsonb_build_object(
            'rule', 'a part found out names the part and its id'));
    END IF;
    -- Not the last request: that one settles the post as published.
    PERFORM airlock_bounded('the part', p_part, 1, COALESCE((SELECT jsonb_array_length(
        p.more_parts) + CASE WHEN p.first_comment IS NULL THEN 0 ELSE 1 END
        FROM posts p WHERE p.id = p_id), p_part));
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'approved',
        p_actor, p_note, p_now,
        CASE WHEN p_part = 1 THEN jsonb_strip_nulls(jsonb_build_object(
            'platform_post_id', p_platform_post_id, 'permalink', p_permalink))
            ELSE '{}'::jsonb END
            || jsonb_build_object('error', NULL, 'not_before', NULL),
        NULL, NULL, false, NULL, 'succeeded', NULL, 'committed', false, NULL, NULL, p_notify,
        NULL, '{needs_review}', p_platform_post_id, p_permalink, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_settled_not_published(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_error text, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'failed', p_actor, p_note,
        p_now, jsonb_build_object('error', p_error), NULL, NULL, false, NULL, 'not_sent',
        NULL, 'released', false, NULL, NULL, p_notify, NULL, '{needs_review}',
        NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_cannot_land(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, 'approved', p_actor, p_note,
        p_now, jsonb_build_object('error', NULL), NULL, NULL, false, NULL, 'not_sent', NULL,
        'released', false, NULL, NULL, p_notify, NULL, '{needs_review}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_resend_claimed(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, NULL, p_actor, NULL, p_now,
        '{}'::jsonb, 'resend', p_note, false, NULL, NULL, NULL, NULL, false, NULL, NULL,
        p_notify, NULL, '{needs_review}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_deferred(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_until timestamptz, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    PERFORM airlock_bounded_time('a deferral', p_until, p_now, interval '1 day',
                                interval '400 days');
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, NULL, p_actor, NULL, p_now,
        jsonb_build_object('not_before', p_until, 'deferred_until', p_until),
        'quota_deferred', p_note, false, NULL, NULL, NULL, NULL, false, NULL, NULL, p_notify,
        NULL, '{approved}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

CREATE OR REPLACE FUNCTION airlock_change_deferral_lifted(p_id bigint, p_actor text,
    p_now timestamptz, p_notify jsonb, p_version bigint, p_until timestamptz, p_note text,
    OUT outcome text, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    applied record;
BEGIN
    PERFORM airlock_bounded_time('a deferral', p_until, p_now, interval '1 day',
                                interval '400 days')
        WHERE p_until IS NOT NULL;
    SELECT * INTO applied FROM airlock_apply_change(p_id, 'version', p_version, NULL, p_actor, NULL, p_now,
        jsonb_build_object('not_before', p_until, 'deferred_until', p_until),
        'deferral_lifted', p_note, false, NULL, NULL, NULL, NULL, false, NULL, NULL, p_notify,
        NULL, '{approved}', NULL, NULL, NULL);
    outcome := applied.outcome;
    post := applied.post;
END $$;

-- Store::record_verifications: a batch of read-backs [{id, actor, at, ok, permalink,
-- kind, note, notify}], each recorded (its event `kind` and `note`) only while its post
-- is still `posted`. Written for the whole batch at once (a post's first read-back in the
-- batch marks it verified); failed read-backs, which are rare, notify one by one.
CREATE OR REPLACE FUNCTION airlock_record_verifications(p_records jsonb)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    caller boolean := airlock_caller_clock();
    db_now timestamptz := clock_timestamp();
    posted bigint[];
    kind text;
    failed record;
BEGIN
    -- FOR SHARE: each post stays `posted` until this commits.
    posted := ARRAY(SELECT p.id FROM posts p
        WHERE p.id IN (SELECT (r->>'id')::bigint FROM jsonb_array_elements(p_records) r)
          AND p.status = 'posted' ORDER BY p.id FOR SHARE);
    SELECT x.r->>'kind' INTO kind FROM jsonb_array_elements(p_records) WITH ORDINALITY x(r, i)
        WHERE (x.r->>'id')::bigint = ANY (posted)
          AND (x.r->>'kind' IS NULL OR x.r->>'kind' IN ('status', 'changed', 'created'))
        ORDER BY x.i LIMIT 1;
    IF FOUND THEN
        PERFORM airlock_refuse_store_kind(kind);
    END IF;
    FOR failed IN SELECT x.r->'notify' AS notify,
               CASE WHEN caller THEN (x.r->>'at')::timestamptz ELSE db_now END AS at
            FROM jsonb_array_elements(p_records) WITH ORDINALITY x(r, i)
            WHERE (x.r->>'ok')::boolean IS NOT TRUE AND (x.r->>'id')::bigint = ANY (posted)
            ORDER BY x.i LOOP
        PERFORM airlock_insert_outbox(failed.notify, failed.at);
    END LOOP;
    -- The records of posts still posted, each at its time (airlock_time: the caller's `at`
    -- on a ledger set to its callers' clocks, else the database's), read once for both
    -- writes.
    WITH recs AS (
        SELECT (x.r->>'id')::bigint AS id, x.i, x.r,
               CASE WHEN caller THEN (x.r->>'at')::timestamptz ELSE db_now END AS at
        FROM jsonb_array_elements(p_records) WITH ORDINALITY x(r, i)
        WHERE (x.r->>'id')::bigint = ANY (posted)),
    verified AS (
        UPDATE posts p SET verified_at = v.at, permalink = coalesce(p.permalink, v.permalink),
            version = p.version + 1
        FROM (SELECT DISTINCT ON (id) id, at, r->>'permalink' AS permalink FROM recs
              WHERE (r->>'ok')::boolean ORDER BY id, i) v
        WHERE p.id = v.id)
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
        SELECT id, at, r->>'kind', 'posted', 'posted', r->>'actor', r->>'note'
        FROM recs ORDER BY i;
END $$;

------------------------------------------------------------------------------------------
-- Pauses, the outbox, tokens, dashboard sessions, server secrets.
------------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION airlock_pause(p_scope text, p_reason text, p_actor text,
    p_now timestamptz, p_notify jsonb)
RETURNS boolean LANGUAGE sql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
    SELECT airlock_insert_pause(p_scope, p_reason, p_actor, p_now, p_notify);
$$;

-- Lifts a pause only while its reason begins with p_reason_prefix: the pause a post's own
-- unknown outcome set, not taken over since.
CREATE OR REPLACE FUNCTION airlock_resume_own(p_scope text, p_is_channel boolean,
    p_reason_prefix text, p_actor text, p_now timestamptz, p_notify jsonb)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    lifted integer;
BEGIN
    p_now := airlock_time(p_now, false);
    UPDATE pauses SET resumed_at = p_now, resumed_by = p_actor
        WHERE scope = p_scope AND resumed_at IS NULL
          AND left(reason, length(p_reason_prefix)) = p_reason_prefix;
    GET DIAGNOSTICS lifted = ROW_COUNT;
    IF lifted > 0 THEN
        IF p_is_channel THEN
            DELETE FROM channel_failures WHERE channel = p_scope;
        END IF;
        PERFORM airlock_insert_outbox(p_notify, p_now);
    END IF;
    RETURN lifted > 0;
END $$;

-- Lifting a channel's pause also resets its consecutive failures. The trigger on
-- `pauses` sends NOTIFY airlock_due with this transaction.
CREATE OR REPLACE FUNCTION airlock_resume(p_scope text, p_is_channel boolean, p_actor text,
    p_now timestamptz, p_notify jsonb)
RETURNS boolean LANGUAGE sql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
    SELECT airlock_resume_own(p_scope, p_is_channel, '', p_actor, p_now, p_notify);
$$;

CREATE OR REPLACE FUNCTION airlock_claim_notifications(p_now timestamptz, p_worker text,
    p_lease_until timestamptz, p_limit bigint)
RETURNS TABLE (id bigint, sink text, event text, post_id bigint, payload jsonb,
               attempts bigint, created_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
#variable_conflict use_column
BEGIN
    -- The time once, as a value: the outbox's partial index serves the scan.
    p_now := airlock_time(p_now, false);
    PERFORM airlock_bounded('the notifications claimed', p_limit, 1, 10000);
    PERFORM airlock_bounded('a notification''s lease', extract(epoch FROM p_lease_until - p_now),
                            0, extract(epoch FROM interval '1 day'));
    RETURN QUERY
    WITH due AS (
        SELECT o.id FROM outbox o
        WHERE o.delivered_at IS NULL AND o.abandoned_at IS NULL AND o.next_attempt_at <= p_now
          AND (o.locked_until IS NULL OR o.locked_until < p_now)
        ORDER BY o.id LIMIT p_limit
        FOR UPDATE SKIP LOCKED)
    , claimed AS (
        UPDATE outbox o SET locked_by = p_worker, locked_until = p_lease_until
        FROM due WHERE o.id = due.id
        RETURNING o.id, o.sink, o.event, o.post_id, o.payload, o.attempts, o.created_at)
    SELECT c.id, c.sink, c.event, c.post_id, c.payload, c.attempts, c.created_at
    FROM claimed c ORDER BY c.id;
END $$;

CREATE OR REPLACE FUNCTION airlock_notification_delivered(p_id bigint, p_worker text,
    p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    done integer;
BEGIN
    p_now := airlock_time(p_now, false);
    UPDATE outbox SET delivered_at = p_now, locked_by = NULL, locked_until = NULL,
        last_error = NULL
        WHERE id = p_id AND locked_by = p_worker AND delivered_at IS NULL
          AND abandoned_at IS NULL;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done > 0;
END $$;

-- A failed delivery: retried at p_retry_at, or abandoned when it is null.
CREATE OR REPLACE FUNCTION airlock_notification_failed(p_id bigint, p_worker text,
    p_error text, p_retry_at timestamptz, p_now timestamptz)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    done integer;
BEGIN
    p_now := airlock_time(p_now, false);
    PERFORM airlock_bounded('the retry''s wait',
        extract(epoch FROM COALESCE(p_retry_at, p_now) - p_now), 0,
        extract(epoch FROM interval '31 days'));
    UPDATE outbox SET attempts = attempts + 1, last_error = p_error,
        next_attempt_at = COALESCE(p_retry_at, next_attempt_at),
        abandoned_at = CASE WHEN p_retry_at IS NULL THEN p_now ELSE abandoned_at END,
        locked_by = NULL, locked_until = NULL
        WHERE id = p_id AND locked_by = p_worker AND delivered_at IS NULL
          AND abandoned_at IS NULL;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done > 0;
END $$;

CREATE OR REPLACE FUNCTION airlock_create_token(p_name text, p_roles text, p_secret_sha256 text,
    p_now timestamptz)
RETURNS void LANGUAGE sql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
    INSERT INTO tokens (name, roles, secret_sha256, created_at)
        VALUES (p_name, p_roles, p_secret_sha256, airlock_time(p_now, false));
$$;

-- Revokes a token, keeping the last active operator token when asked: 'revoked',
-- 'not_found' or 'last_operator'. Revokes that keep one serialize on the table, so two
-- at once cannot leave none.
CREATE OR REPLACE FUNCTION airlock_revoke_token(
    p_name text, p_now timestamptz, p_keep_operator boolean)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    done integer;
BEGIN
    p_now := airlock_time(p_now, false);
    IF p_keep_operator THEN
        LOCK TABLE tokens IN SHARE ROW EXCLUSIVE MODE;
        IF EXISTS (SELECT 1 FROM tokens WHERE name = p_name AND revoked_at IS NULL
                   AND 'operator' = ANY (string_to_array(roles, ',')))
           AND NOT EXISTS (SELECT 1 FROM tokens WHERE name <> p_name AND revoked_at IS NULL
                   AND 'operator' = ANY (string_to_array(roles, ','))) THEN
            RETURN 'last_operator';
        END IF;
    END IF;
    UPDATE tokens SET revoked_at = p_now WHERE name = p_name AND revoked_at IS NULL;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN CASE WHEN done > 0 THEN 'revoked' ELSE 'not_found' END;
END $$;

-- The live token with this secret hash, as it was read; its use is noted at most once a
-- minute (a write per request is wasted work).
CREATE OR REPLACE FUNCTION airlock_authenticate(p_secret_sha256 text, p_now timestamptz)
RETURNS TABLE (name text, roles text, created_at timestamptz, revoked_at timestamptz,
               last_used_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
#variable_conflict use_column
DECLARE
    found_token tokens;
BEGIN
    p_now := airlock_time(p_now, false);
    SELECT * INTO found_token FROM tokens t
        WHERE t.secret_sha256 = p_secret_sha256 AND t.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF found_token.last_used_at IS NULL
       OR p_now - found_token.last_used_at > interval '1 minute' THEN
        UPDATE tokens t SET last_used_at = p_now WHERE t.name = found_token.name;
    END IF;
    name := found_token.name;
    roles := found_token.roles;
    created_at := found_token.created_at;
    revoked_at := found_token.revoked_at;
    last_used_at := found_token.last_used_at;
    RETURN NEXT;
END $$;

-- A dashboard sign-in: expired sessions go, and the oldest beyond p_max.
CREATE OR REPLACE FUNCTION airlock_open_session(p_id_sha256 text, p_token_sha256 text,
    p_now timestamptz, p_expires_at timestamptz, p_max bigint)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
BEGIN
    p_now := airlock_time(p_now, true);
    PERFORM airlock_bounded('the most sessions', p_max, 1, 1000000);
    PERFORM airlock_bounded('a session''s lifetime', extract(epoch FROM p_expires_at - p_now),
                            0, extract(epoch FROM interval '400 days'));
    DELETE FROM dashboard_sessions WHERE expires_at <= p_now;
    INSERT INTO dashboard_sessions (id_sha256, token_sha256, created_at, expires_at)
        VALUES (p_id_sha256, p_token_sha256, p_now, p_expires_at);
    DELETE FROM dashboard_sessions WHERE id_sha256 IN (SELECT id_sha256 FROM
        dashboard_sessions ORDER BY created_at, id_sha256
        LIMIT greatest(0, (SELECT count(*) FROM dashboard_sessions) - p_max));
END $$;

CREATE OR REPLACE FUNCTION airlock_session(p_id_sha256 text)
RETURNS TABLE (token_sha256 text, created_at timestamptz, expires_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
    SELECT s.token_sha256, s.created_at, s.expires_at FROM dashboard_sessions s
    WHERE s.id_sha256 = p_id_sha256;
$$;

CREATE OR REPLACE FUNCTION airlock_end_session(p_id_sha256 text)
RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    done integer;
BEGIN
    DELETE FROM dashboard_sessions WHERE id_sha256 = p_id_sha256;
    GET DIAGNOSTICS done = ROW_COUNT;
    RETURN done > 0;
END $$;

CREATE OR REPLACE FUNCTION airlock_live_sessions(p_now timestamptz)
RETURNS TABLE (name text, created_at timestamptz, expires_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
    SELECT t.name, s.created_at, s.expires_at FROM dashboard_sessions s
    JOIN tokens t ON t.secret_sha256 = s.token_sha256
    WHERE s.expires_at > p_now AND t.revoked_at IS NULL ORDER BY s.created_at, t.name;
$$;

-- The named server secret: the candidate when this call creates it, else the one kept.
CREATE OR REPLACE FUNCTION airlock_server_secret(p_name text, p_candidate text,
    p_now timestamptz)
RETURNS text LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    kept text;
BEGIN
    p_now := airlock_time(p_now, false);
    INSERT INTO server_secrets (name, secret, created_at) VALUES (p_name, p_candidate, p_now)
        ON CONFLICT (name) DO NOTHING;
    SELECT secret INTO kept FROM server_secrets WHERE name = p_name;
    RETURN kept;
END $$;

------------------------------------------------------------------------------------------
-- Drafts.
------------------------------------------------------------------------------------------

-- Refuses (AL017) a text key that a post on the channel other than `p_except` holds
-- while quarantined (whatever the window), or approved, in flight or posted and going
-- out within the window of `p_at` (posted_at when posted, else scheduled_at). Holds the channel's text-key lock
-- (+7) until the transaction ends, so two drafts (or edits) with one text find each other.
CREATE OR REPLACE FUNCTION airlock_refuse_duplicate(p_channel text, p_text_key text,
    p_at timestamptz, p_window_us bigint, p_except bigint)
RETURNS void LANGUAGE plpgsql
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    win interval := p_window_us * interval '1 microsecond';
    earlier record;
BEGIN
    PERFORM airlock_bounded('the duplicate window in µs', p_window_us, 0, 3153600000000000);
    PERFORM pg_advisory_xact_lock(1095912455, hashtext(p_channel || E'\n' || p_text_key));
    SELECT id, status INTO earlier FROM posts WHERE channel = p_channel AND text_key = p_text_key
        AND ((status = 'draft' AND quarantined_at IS NOT NULL)
             OR (status IN ('approved', 'posting', 'needs_review', 'posted')
                 AND COALESCE(posted_at, scheduled_at) > p_at - win
                 AND COALESCE(posted_at, scheduled_at) < p_at + win))
        AND (p_except IS NULL OR id <> p_except)
        ORDER BY id DESC LIMIT 1;
    IF FOUND THEN
        PERFORM airlock_raise('AL017', 'duplicate text',
            jsonb_build_object('earlier', earlier.id, 'status', earlier.status));
    END IF;
END $$;

-- Store::create_post: an idempotency key's earlier post, a filled slot's post, or a new
-- draft (the creator's live drafts counted under its lock, +8; a queued duplicate text
-- refused) with its creation key. existing: whether the post was there before.
-- `p_more_parts`: the parts after the first ([{text, media}]); `p_first_comment`.
-- The request an idempotency key made a post for, within its time to live: a front end
-- asks first, so a retry is answered before the request is checked again (the
-- runtime role cannot read create_keys itself).
CREATE OR REPLACE FUNCTION airlock_created_with_key(
    p_scope text, p_key text, p_since timestamptz)
RETURNS TABLE (request_sha256 text, post_id bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
    SELECT k.request_sha256, k.post_id FROM create_keys k
    WHERE k.scope = p_scope AND k.key = p_key AND k.created_at >= p_since
$$;

CREATE OR REPLACE FUNCTION airlock_create_post(
    p_channel text, p_title text, p_text text, p_media jsonb, p_more_parts jsonb,
    p_first_comment text, p_link text, p_source jsonb,
    p_source_path text, p_scheduled_at timestamptz, p_content_hash text, p_actor text,
    p_test boolean, p_slot text, p_now timestamptz, p_text_key text,
    p_key_scope text, p_key text, p_key_request text, p_key_ttl_us bigint,
    p_duplicate_window_us bigint, p_max_live_drafts bigint,
    OUT existing boolean, OUT post posts)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    earlier record;
    taken bigint;
    held bigint;
    new_id bigint;
BEGIN
    PERFORM airlock_bounded_time('the schedule', p_scheduled_at, p_now, interval '100 years',
                                 interval '100 years');
    p_now := airlock_time(p_now, false);
    existing := true;
    IF p_key IS NOT NULL THEN
        PERFORM airlock_bounded('the creation keys'' lifetime in µs', p_key_ttl_us,
                                60000000, 3153600000000000);
        PERFORM pg_advisory_xact_lock(1095912452, hashtext(p_key_scope || E'\n' || p_key));
        DELETE FROM create_keys WHERE created_at < p_now - p_key_ttl_us * interval '1 microsecond';
        SELECT request_sha256, post_id INTO earlier FROM create_keys
            WHERE scope = p_key_scope AND key = p_key;
        IF FOUND THEN
            IF earlier.request_sha256 <> p_key_request THEN
                PERFORM airlock_raise('AL016', 'idempotency mismatch',
                    jsonb_build_object('key', p_key));
            END IF;
            SELECT * INTO post FROM posts WHERE id = earlier.post_id;
            IF NOT FOUND THEN
                PERFORM airlock_raise('AL010', 'not found',
                    jsonb_build_object('id', earlier.post_id));
            END IF;
            RETURN;
        END IF;
    END IF;
    IF p_slot IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock(1095912453, hashtext(p_channel || E'\n' || p_slot));
        SELECT id INTO taken FROM posts WHERE channel = p_channel AND slot = p_slot;
        IF FOUND THEN
            SELECT * INTO post FROM posts WHERE id = taken;
            RETURN;
        END IF;
    END IF;
    IF p_max_live_drafts IS NOT NULL THEN
        PERFORM airlock_bounded('the most live drafts', p_max_live_drafts, 0, 1000000);
        -- Creates by one actor count one after another (airlock_store::decide::draft_limit).
        PERFORM pg_advisory_xact_lock(1095912456, hashtext(p_actor));
        SELECT count(*) INTO held FROM posts WHERE status = 'draft' AND created_by = p_actor;
        IF held >= p_max_live_drafts THEN
            PERFORM airlock_raise('AL019', 'draft limit', jsonb_build_object(
                'actor', p_actor, 'held', held, 'max', p_max_live_drafts));
        END IF;
    END IF;
    IF p_duplicate_window_us IS NOT NULL THEN
        PERFORM airlock_refuse_duplicate(p_channel, p_text_key, p_scheduled_at,
                                         p_duplicate_window_us, NULL);
    END IF;
    INSERT INTO posts (channel, status, title, text, media, more_parts, first_comment, link,
        source, source_path, scheduled_at, content_hash, created_by, edited_by, test, slot,
        created_at, updated_at, event_actor, event_note, text_key)
        VALUES (p_channel, 'draft', p_title, p_text, p_media,
            COALESCE(p_more_parts, '[]'::jsonb), p_first_comment, p_link, p_source,
            p_source_path, p_scheduled_at, p_content_hash, p_actor, p_actor, p_test, p_slot,
            p_now, p_now, p_actor, 'created', p_text_key)
        RETURNING id INTO new_id;
    IF p_key IS NOT NULL THEN
        INSERT INTO create_keys (scope, key, request_sha256, post_id, created_at)
            VALUES (p_key_scope, p_key, p_key_request, new_id, p_now);
    END IF;
    SELECT * INTO post FROM posts WHERE id = new_id;
    existing := false;
END $$;

------------------------------------------------------------------------------------------
-- Posts: events and discarding drafts.
------------------------------------------------------------------------------------------

-- Store::add_event: an event at the post's status as it commits, with its notifications.
CREATE OR REPLACE FUNCTION airlock_add_event(p_id bigint, p_kind text, p_note text,
    p_actor text, p_now timestamptz, p_notify jsonb)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    v_status text;
BEGIN
    p_now := airlock_time(p_now, false);
    PERFORM airlock_refuse_store_kind(p_kind);
    -- FOR SHARE: the status recorded on the event is the one the post has when it commits.
    SELECT status INTO v_status FROM posts WHERE id = p_id FOR SHARE;
    IF NOT FOUND THEN
        PERFORM airlock_raise('AL010', 'not found', NULL);
    END IF;
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
        VALUES (p_id, p_now, p_kind, v_status, v_status, p_actor, p_note);
    PERFORM airlock_insert_outbox(p_notify, p_now);
END $$;

-- Store::delete_draft: a draft at the version read, with no publish attempt on record,
-- leaves its event (`p_kind`, `p_note`) and goes with its creation keys.
CREATE OR REPLACE FUNCTION airlock_delete_draft(p_id bigint, p_version bigint, p_actor text,
    p_now timestamptz, p_kind text, p_note text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = {{schema}}, pg_temp AS $$
DECLARE
    cur posts;
BEGIN
    PERFORM airlock_refuse_store_kind(p_kind);
    p_now := airlock_time(p_now, false);
    SELECT * INTO cur FROM posts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM airlock_raise('AL010', 'not found', NULL);
    END IF;
    IF cur.version <> p_version THEN
        PERFORM airlock_raise('AL011', 'conflict', NULL);
    END IF;
    IF cur.status <> 'draft' THEN
        PERFORM airlock_raise('AL001', 'illegal transition',
            jsonb_build_object('from', cur.status, 'to', 'draft'));
    END IF;
    IF EXISTS (SELECT 1 FROM intents WHERE post_id = p_id)
       OR EXISTS (SELECT 1 FROM reservations WHERE post_id = p_id) THEN
        PERFORM airlock_raise('AL015', 'has history', NULL);
    END IF;
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
        VALUES (p_id, p_now, p_kind, 'draft', 'draft', p_actor, p_note);
    DELETE FROM create_keys WHERE post_id = p_id;
    DELETE FROM posts WHERE id = p_id;
END $$;

-- {{posts_functions}}

------------------------------------------------------------------------------------------
-- Privileges: the runtime role may call the functions above and read what reads need,
-- without secrets (token hashes, dashboard session hashes, server secrets), and nothing
-- else: no INSERT, UPDATE, DELETE or TRUNCATE on any table, no sequence, no CREATE.
------------------------------------------------------------------------------------------

-- Which version of this file is installed, for this runtime role (checked on open).
CREATE OR REPLACE FUNCTION airlock_functions_version()
RETURNS text LANGUAGE sql IMMUTABLE
SET search_path = {{schema}}, pg_temp AS $$
    SELECT {{version_literal}}::text;
$$;

REVOKE ALL ON ALL TABLES IN SCHEMA {{schema}} FROM {{runtime_role}};
REVOKE ALL ON ALL SEQUENCES IN SCHEMA {{schema}} FROM {{runtime_role}};
-- What PUBLIC holds the runtime role holds too: airlock's own tables and sequences keep
-- nothing for PUBLIC (other applications' objects in a shared schema are left alone).
DO $$
DECLARE
    tables text[] := ARRAY['posts', 'post_events', 'intents', 'reservations', 'verdicts',
        'pauses', 'outbox', 'channel_failures', 'tokens', 'dashboard_sessions',
        'server_secrets', 'create_keys', 'ledger_clock', 'quota_hours', 'quota_suspects',
        '_sqlx_migrations'];
    t regclass;
BEGIN
    -- The tables, and the sequences they own.
    FOR t IN SELECT c.oid::regclass FROM pg_class c
             WHERE c.relnamespace = {{schema_literal}}::regnamespace AND c.relkind = 'r'
               AND c.relname = ANY (tables)
             UNION
             SELECT d.objid::regclass FROM pg_depend d JOIN pg_class o ON o.oid = d.refobjid
             WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass
               AND o.relnamespace = {{schema_literal}}::regnamespace AND o.relname = ANY (tables)
               AND (SELECT relkind FROM pg_class WHERE oid = d.objid) = 'S'
    LOOP
        EXECUTE format('REVOKE ALL ON %s FROM PUBLIC', t);
    END LOOP;
END $$;
-- A role that may create objects in the schema could define a function or operator that
-- airlock's functions (running as the owner, with this schema on their search_path)
-- would pick over the built-in one: the runtime role never may. PUBLIC's CREATE
-- (PostgreSQL 15 gives it none on `public`; a cluster upgraded from an older release
-- keeps it) is the DBA's to take back: doctor says "not hardened" while it stands
-- (docs/deploy.md#hardened-postgresql).
REVOKE CREATE ON SCHEMA {{schema}} FROM {{runtime_role}};
GRANT USAGE ON SCHEMA {{schema}} TO {{runtime_role}};
GRANT SELECT ON posts, post_events, intents, reservations, verdicts, pauses, outbox,
    channel_failures, ledger_clock, _sqlx_migrations TO {{runtime_role}};
GRANT SELECT (name, roles, created_at, revoked_at, last_used_at) ON tokens TO {{runtime_role}};
GRANT SELECT ON ledger_limits, channel_limits, quota_hours, quota_suspects TO {{runtime_role}};
GRANT SELECT (created_at, expires_at) ON dashboard_sessions TO {{runtime_role}};

DO $$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT p.oid::regprocedure AS signature, p.proname AS name FROM pg_proc p
             WHERE p.pronamespace = {{schema_literal}}::regnamespace
               AND p.proname LIKE 'airlock\_%'
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f.signature);
        IF f.name = ANY (ARRAY[
            'airlock_functions_version',
            'airlock_claim_post', 'airlock_claim_batch', 'airlock_record_intent',
            'airlock_change_published', 'airlock_change_published_batch',
            'airlock_change_part_published',
            'airlock_change_not_sent', 'airlock_change_failed',
            'airlock_change_unknown', 'airlock_change_held', 'airlock_change_reaped_sent',
            'airlock_change_reaped_unsent', 'airlock_change_edited', 'airlock_change_verdict',
            'airlock_change_withdrawn', 'airlock_change_released', 'airlock_change_requeued',
            'airlock_change_settled_published', 'airlock_change_part_settled',
            'airlock_change_settled_not_published',
            'airlock_change_cannot_land', 'airlock_change_resend_claimed',
            'airlock_change_deferred', 'airlock_change_deferral_lifted',
            'airlock_record_verifications', 'airlock_pause', 'airlock_resume',
            'airlock_resume_own',
            'airlock_claim_notifications', 'airlock_notification_delivered',
            'airlock_notification_failed', 'airlock_create_token', 'airlock_revoke_token',
            'airlock_authenticate', 'airlock_open_session', 'airlock_session',
            'airlock_end_session', 'airlock_live_sessions', 'airlock_server_secret',
            'airlock_create_post', 'airlock_created_with_key', 'airlock_delete_draft',
            'airlock_add_event', 'airlock_reservation_hours', 'airlock_reservation_suspect'])
        THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f.signature,
                           {{runtime_role_literal}}::text);
        ELSE
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', f.signature,
                           {{runtime_role_literal}}::text);
        END IF;
    END LOOP;
END $$;
