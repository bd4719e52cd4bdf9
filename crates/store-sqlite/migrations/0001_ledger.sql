-- airlock ledger, SQLite dialect. Times are UTC text of fixed width
-- (2026-12-01T08:00:00.000Z), so text order is time order.

CREATE TABLE posts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    channel          TEXT    NOT NULL,
    status           TEXT    NOT NULL
        CHECK (status IN ('draft', 'approved', 'posting', 'posted', 'failed', 'needs_review')),
    title            TEXT,
    text             TEXT    NOT NULL,
    media            TEXT    NOT NULL DEFAULT '[]',   -- JSON [{"url","alt"}]
    link             TEXT,
    source           TEXT,                            -- JSON {"path","sha256","updated"} or NULL
    source_path      TEXT,
    scheduled_at     TEXT    NOT NULL,
    content_hash     TEXT    NOT NULL,
    approved_hash    TEXT,
    approved_by      TEXT,
    created_by       TEXT    NOT NULL,
    edited_by        TEXT    NOT NULL,
    generation       INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    lease_expires_at TEXT,
    not_before       TEXT,
    platform_post_id TEXT,
    permalink        TEXT,
    posted_at        TEXT,
    verified_at      TEXT,
    error            TEXT,
    test             INTEGER NOT NULL DEFAULT 0 CHECK (test IN (0, 1)),
    slot             TEXT,
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL,
    -- Bumped by every write airlock makes; the status trigger tells airlock's writes
    -- (which set event_actor and event_note) from hand-written SQL by it.
    version          INTEGER NOT NULL DEFAULT 1,
    event_actor      TEXT,
    event_note       TEXT
);

-- The claim index stays the size of the backlog, not of the history.
CREATE INDEX posts_due ON posts (scheduled_at, id) WHERE status = 'approved' AND posted_at IS NULL;
CREATE INDEX posts_open ON posts (status, id) WHERE status <> 'posted';
CREATE INDEX posts_channel ON posts (channel, id);
CREATE INDEX posts_lease ON posts (lease_expires_at) WHERE status = 'posting';
CREATE INDEX posts_source ON posts (channel, source_path, created_at) WHERE source_path IS NOT NULL;
CREATE UNIQUE INDEX posts_slot ON posts (channel, slot) WHERE slot IS NOT NULL;

-- Append-only audit log. No foreign key: the events of a discarded draft stay.
CREATE TABLE post_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id     INTEGER NOT NULL,
    at          TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    actor       TEXT    NOT NULL,
    note        TEXT
);
CREATE INDEX post_events_post ON post_events (post_id, id);

CREATE TABLE intents (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id         INTEGER NOT NULL REFERENCES posts (id),
    generation      INTEGER NOT NULL,
    idempotency_key TEXT    NOT NULL,
    phase           TEXT    NOT NULL
        CHECK (phase IN ('sending', 'succeeded', 'rejected', 'not_sent', 'unknown')),
    platform_ref    TEXT,
    created_at      TEXT    NOT NULL,
    settled_at      TEXT,
    UNIQUE (post_id, generation)
);

CREATE TABLE reservations (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id    INTEGER NOT NULL REFERENCES posts (id),
    generation INTEGER NOT NULL,
    channel    TEXT    NOT NULL,
    state      TEXT    NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
    created_at TEXT    NOT NULL,
    sent_at    TEXT,
    settled_at TEXT
);
-- Live reservations by send time: the window and day queries read only recent rows.
CREATE INDEX reservations_live ON reservations (sent_at) WHERE state <> 'released';
CREATE INDEX reservations_post ON reservations (post_id, generation);

CREATE TABLE pauses (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT NOT NULL,   -- '*' for every channel, else a channel name
    reason     TEXT NOT NULL,
    actor      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    resumed_at TEXT,
    resumed_by TEXT
);
CREATE UNIQUE INDEX pauses_active ON pauses (scope) WHERE resumed_at IS NULL;

CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    sink            TEXT    NOT NULL,
    event           TEXT    NOT NULL,
    post_id         INTEGER,
    payload         TEXT    NOT NULL,
    created_at      TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL,
    locked_by       TEXT,
    locked_until    TEXT,
    delivered_at    TEXT,
    abandoned_at    TEXT,
    last_error      TEXT
);
CREATE INDEX outbox_pending ON outbox (next_attempt_at) WHERE delivered_at IS NULL AND abandoned_at IS NULL;

CREATE TABLE tokens (
    name          TEXT PRIMARY KEY,
    roles         TEXT NOT NULL,
    secret_sha256 TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL,
    revoked_at    TEXT,
    last_used_at  TEXT
);

-- Idempotency keys of POST /posts and draft_post, per token.
CREATE TABLE create_keys (
    scope          TEXT NOT NULL,
    key            TEXT NOT NULL,
    request_sha256 TEXT NOT NULL,
    post_id        INTEGER NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);

-- Consecutive definite failures per channel, for pause_after_failures.
CREATE TABLE channel_failures (
    channel     TEXT PRIMARY KEY,
    consecutive INTEGER NOT NULL
);

-- A post is born a draft.
CREATE TRIGGER posts_insert_draft_only BEFORE INSERT ON posts
WHEN NEW.status <> 'draft'
BEGIN
    SELECT RAISE(ABORT, 'airlock: illegal status transition: a post is created as draft');
END;

CREATE TRIGGER posts_insert_event AFTER INSERT ON posts
BEGIN
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
    VALUES (NEW.id, NEW.created_at, 'status', NULL, 'draft',
            COALESCE(NEW.event_actor, 'sql'), NEW.event_note);
END;

-- The edges of SPEC section 3; must equal airlock_core::status::is_legal.
CREATE TRIGGER posts_status_guard BEFORE UPDATE OF status ON posts
WHEN NEW.status <> OLD.status
 AND (OLD.status || '>' || NEW.status) NOT IN (
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
BEGIN
    SELECT RAISE(ABORT, 'airlock: illegal status transition');
END;

-- Every status change appends its event in the same transaction. A write that did not
-- come from airlock (version unchanged) is recorded as hand-written SQL.
CREATE TRIGGER posts_status_event AFTER UPDATE OF status ON posts
WHEN NEW.status <> OLD.status
BEGIN
    INSERT INTO post_events (post_id, at, kind, from_status, to_status, actor, note)
    VALUES (NEW.id,
            CASE WHEN NEW.version <> OLD.version THEN NEW.updated_at
                 ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END,
            'status', OLD.status, NEW.status,
            CASE WHEN NEW.version <> OLD.version THEN COALESCE(NEW.event_actor, 'sql') ELSE 'sql' END,
            CASE WHEN NEW.version <> OLD.version THEN NEW.event_note
                 ELSE 'status changed by a hand-written SQL statement' END);
END;

-- A post that ever got a posted_at keeps it: it is never picked again.
CREATE TRIGGER posts_posted_at_is_permanent BEFORE UPDATE OF posted_at ON posts
WHEN OLD.posted_at IS NOT NULL AND (NEW.posted_at IS NULL OR NEW.posted_at <> OLD.posted_at)
BEGIN
    SELECT RAISE(ABORT, 'airlock: posted_at is permanent once set');
END;

CREATE TRIGGER posts_delete_drafts_only BEFORE DELETE ON posts
WHEN OLD.status <> 'draft'
BEGIN
    SELECT RAISE(ABORT, 'airlock: only drafts can be discarded');
END;

CREATE TRIGGER post_events_no_update BEFORE UPDATE ON post_events
BEGIN
    SELECT RAISE(ABORT, 'airlock: post_events is append-only');
END;

CREATE TRIGGER post_events_no_delete BEFORE DELETE ON post_events
BEGIN
    SELECT RAISE(ABORT, 'airlock: post_events is append-only');
END;
