-- airlock ledger, PostgreSQL dialect (15+). The same tables, columns and rules as the
-- SQLite ledger (crates/store-sqlite/migrations/0001_ledger.sql), with timestamptz
-- times, identity ids and PL/pgSQL triggers.
--
-- Advisory locks use the two-int form with class 1095912448 + n ('ARL\0' + n), a key
-- space apart from the single-bigint locks sqlx takes for its migrations:
--   +1 quota window (every reservation), +2 event feed, +3 migrations,
--   +4 create idempotency keys, +5 compose slots.

CREATE TABLE posts (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    channel          text        NOT NULL,
    status           text        NOT NULL
        CHECK (status IN ('draft', 'approved', 'posting', 'posted', 'failed', 'needs_review')),
    title            text,
    text             text        NOT NULL,
    media            jsonb       NOT NULL DEFAULT '[]',   -- [{"url","alt"}]
    link             text,
    source           jsonb,                               -- {"path","sha256","updated"} or NULL
    source_path      text,
    scheduled_at     timestamptz NOT NULL,
    content_hash     text        NOT NULL,
    approved_hash    text,
    approved_by      text,
    created_by       text        NOT NULL,
    edited_by        text        NOT NULL,
    generation       bigint      NOT NULL DEFAULT 0,
    attempts         bigint      NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_expires_at timestamptz,
    not_before       timestamptz,
    platform_post_id text,
    permalink        text,
    posted_at        timestamptz,
    verified_at      timestamptz,
    error            text,
    test             boolean     NOT NULL DEFAULT false,
    slot             text,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    -- Bumped by every write airlock makes; the status trigger tells airlock's writes
    -- (which set event_actor and event_note) from hand-written SQL by it.
    version          bigint      NOT NULL DEFAULT 1,
    event_actor      text,
    event_note       text
);

-- The claim index stays the size of the backlog, not of the history: a claimed or
-- published post leaves the predicate, so a million posted rows cost claims nothing.
CREATE INDEX posts_due ON posts (scheduled_at, id) WHERE status = 'approved' AND posted_at IS NULL;
CREATE INDEX posts_open ON posts (status, id) WHERE status <> 'posted';
CREATE INDEX posts_channel ON posts (channel, id);
CREATE INDEX posts_lease ON posts (lease_expires_at) WHERE status = 'posting';
CREATE INDEX posts_source ON posts (channel, source_path, created_at) WHERE source_path IS NOT NULL;
CREATE UNIQUE INDEX posts_slot ON posts (channel, slot) WHERE slot IS NOT NULL;

-- Append-only audit log. No foreign key: the events of a discarded draft stay.
-- Ids come from the sequence inside the insert trigger, after the event-feed lock (see
-- post_events_before_insert), so a reader of the feed never skips an id that commits late.
CREATE SEQUENCE post_events_id_seq AS bigint;
CREATE TABLE post_events (
    id          bigint      PRIMARY KEY,
    post_id     bigint      NOT NULL,
    at          timestamptz NOT NULL,
    kind        text        NOT NULL,
    from_status text,
    to_status   text        NOT NULL,
    actor       text        NOT NULL,
    note        text
);
ALTER SEQUENCE post_events_id_seq OWNED BY post_events.id;
CREATE INDEX post_events_post ON post_events (post_id, id);

CREATE TABLE intents (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    post_id         bigint      NOT NULL REFERENCES posts (id),
    generation      bigint      NOT NULL,
    idempotency_key text        NOT NULL,
    phase           text        NOT NULL
        CHECK (phase IN ('sending', 'succeeded', 'rejected', 'not_sent', 'unknown')),
    platform_ref    text,
    created_at      timestamptz NOT NULL,
    settled_at      timestamptz,
    UNIQUE (post_id, generation)
);

CREATE TABLE reservations (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    post_id    bigint      NOT NULL REFERENCES posts (id),
    generation bigint      NOT NULL,
    channel    text        NOT NULL,
    state      text        NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
    created_at timestamptz NOT NULL,
    sent_at    timestamptz,
    settled_at timestamptz
);
-- Live reservations by send time: the window and day queries read only recent rows.
CREATE INDEX reservations_live ON reservations (sent_at) WHERE state <> 'released';
CREATE INDEX reservations_post ON reservations (post_id, generation);

CREATE TABLE pauses (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope      text        NOT NULL,   -- '*' for every channel, else a channel name
    reason     text        NOT NULL,
    actor      text        NOT NULL,
    created_at timestamptz NOT NULL,
    resumed_at timestamptz,
    resumed_by text
);
CREATE UNIQUE INDEX pauses_active ON pauses (scope) WHERE resumed_at IS NULL;

CREATE TABLE outbox (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sink            text        NOT NULL,
    event           text        NOT NULL,
    post_id         bigint,
    payload         jsonb       NOT NULL,
    created_at      timestamptz NOT NULL,
    attempts        bigint      NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    locked_by       text,
    locked_until    timestamptz,
    delivered_at    timestamptz,
    abandoned_at    timestamptz,
    last_error      text
);
CREATE INDEX outbox_pending ON outbox (next_attempt_at, id) WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE TABLE tokens (
    name          text        PRIMARY KEY,
    roles         text        NOT NULL,
    secret_sha256 text        NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);

-- Idempotency keys of POST /posts and draft_post, per token.
CREATE TABLE create_keys (
    scope          text        NOT NULL,
    key            text        NOT NULL,
    request_sha256 text        NOT NULL,
    post_id        bigint      NOT NULL,
    created_at     timestamptz NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX create_keys_created ON create_keys (created_at);

-- Consecutive definite failures per channel, for pause_after_failures.
CREATE TABLE channel_failures (
    channel     text   PRIMARY KEY,
    consecutive bigint NOT NULL
);

-- Trigger refusals carry their own SQLSTATEs (class AL), which the backend maps to
-- domain errors: AL001 illegal status transition, AL002 posted_at is permanent,
-- AL003 only drafts are deleted, AL004 post_events is append-only.

-- A post is born a draft.
CREATE FUNCTION airlock_posts_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> 'draft' THEN
        RAISE EXCEPTION 'airlock: illegal status transition: a post is created as draft, not %', NEW.status
            USING ERRCODE = 'AL001';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER posts_insert_draft_only BEFORE INSERT ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_before_insert();

CREATE FUNCTION airlock_posts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
    VALUES (NEW.id, NEW.created_at, 'status', NULL, 'draft',
            COALESCE(NEW.event_actor, 'sql'), NEW.event_note);
    RETURN NULL;
END $$;
CREATE TRIGGER posts_insert_event AFTER INSERT ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_after_insert();

-- The edges of SPEC section 3; must equal airlock_core::status::is_legal.
CREATE FUNCTION airlock_posts_status_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.status || '>' || NEW.status) NOT IN (
        'draft>approved',
        'approved>draft',
        'approved>posting',
        'posting>approved',
        'posting>posted',
        'posting>failed',
        'posting>needs_review',
        'needs_review>posted',
        'needs_review>failed',
        'needs_review>approved',
        'failed>approved')
    THEN
        RAISE EXCEPTION 'airlock: illegal status transition % -> % (post %)', OLD.status, NEW.status, OLD.id
            USING ERRCODE = 'AL001';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER posts_status_guard BEFORE UPDATE ON posts
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION airlock_posts_status_guard();

-- Every status change appends its event in the same transaction. A write that did not
-- come from airlock (version unchanged) is recorded as hand-written SQL. A post that
-- becomes approved may be due: dispatchers listening on airlock_due wake up when the
-- transaction commits (a hint; they read the ledger to decide).
CREATE FUNCTION airlock_posts_status_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    by_airlock boolean := NEW.version <> OLD.version;
BEGIN
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
    VALUES (NEW.id,
            CASE WHEN by_airlock THEN NEW.updated_at ELSE now() END,
            'status', OLD.status, NEW.status,
            CASE WHEN by_airlock THEN COALESCE(NEW.event_actor, 'sql') ELSE 'sql' END,
            CASE WHEN by_airlock THEN NEW.event_note
                 ELSE 'status changed by a hand-written SQL statement' END);
    IF NEW.status = 'approved' THEN
        PERFORM pg_notify('airlock_due', NEW.id::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER posts_status_event AFTER UPDATE ON posts
    FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION airlock_posts_status_event();

-- A post that ever got a posted_at keeps it: it is never picked again.
CREATE FUNCTION airlock_posts_posted_at_is_permanent() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'airlock: posted_at is permanent once set (post %)', OLD.id
        USING ERRCODE = 'AL002';
END $$;
CREATE TRIGGER posts_posted_at_is_permanent BEFORE UPDATE ON posts
    FOR EACH ROW WHEN (OLD.posted_at IS NOT NULL AND NEW.posted_at IS DISTINCT FROM OLD.posted_at)
    EXECUTE FUNCTION airlock_posts_posted_at_is_permanent();

CREATE FUNCTION airlock_posts_delete_drafts_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'airlock: only drafts can be discarded (post % is %)', OLD.id, OLD.status
        USING ERRCODE = 'AL003';
END $$;
CREATE TRIGGER posts_delete_drafts_only BEFORE DELETE ON posts
    FOR EACH ROW WHEN (OLD.status <> 'draft')
    EXECUTE FUNCTION airlock_posts_delete_drafts_only();

-- Every event insert holds the event-feed lock shared until its transaction ends, and
-- takes its id only then: a feed reader that briefly takes the lock exclusively knows
-- every id up to the highest it sees is final (committed or never to appear).
CREATE FUNCTION airlock_post_events_before_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1095912450, 0);
    NEW.id := nextval('post_events_id_seq');
    RETURN NEW;
END $$;
CREATE TRIGGER post_events_insert BEFORE INSERT ON post_events
    FOR EACH ROW EXECUTE FUNCTION airlock_post_events_before_insert();

CREATE FUNCTION airlock_post_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'airlock: post_events is append-only' USING ERRCODE = 'AL004';
END $$;
CREATE TRIGGER post_events_no_update BEFORE UPDATE OR DELETE ON post_events
    FOR EACH ROW EXECUTE FUNCTION airlock_post_events_append_only();
CREATE TRIGGER post_events_no_truncate BEFORE TRUNCATE ON post_events
    FOR EACH STATEMENT EXECUTE FUNCTION airlock_post_events_append_only();

-- A lifted pause may make posts due.
CREATE FUNCTION airlock_pauses_lifted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('airlock_due', 'resumed ' || OLD.scope);
    RETURN NULL;
END $$;
CREATE TRIGGER pauses_resumed AFTER UPDATE ON pauses
    FOR EACH ROW WHEN (OLD.resumed_at IS NULL AND NEW.resumed_at IS NOT NULL)
    EXECUTE FUNCTION airlock_pauses_lifted();
CREATE TRIGGER pauses_deleted AFTER DELETE ON pauses
    FOR EACH ROW WHEN (OLD.resumed_at IS NULL)
    EXECUTE FUNCTION airlock_pauses_lifted();
