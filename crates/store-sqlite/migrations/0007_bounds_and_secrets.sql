-- Bounds the store enforces on what the review of issue 12 found unbounded, and a small
-- table of server secrets.
--
-- The limits of airlock_core::limits, once more here, so that no path (or hand-written
-- SQL) stores more than airlock reads back into memory: an event's note (notes,
-- rejection reasons, evidence) at most 4000 characters, a post's error summary at most
-- 2000, and media counted as items with each item's alt text at most 1500 characters
-- and its URL at most 2048 (0003's check on the serialized length stays; airlock's own
-- check keeps the serialized media well below it). airlock refuses the same values
-- before they reach the store, so the store never refuses a post airlock accepted.
-- Rows stored before this migration are left as they are.

CREATE TRIGGER post_events_note_limit BEFORE INSERT ON post_events
WHEN length(NEW.note) > 4000
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: an event note is at most 4000 characters');
END;

CREATE TRIGGER posts_error_limit_insert BEFORE INSERT ON posts
WHEN length(NEW.error) > 2000
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a post''s error summary is at most 2000 characters');
END;

CREATE TRIGGER posts_error_limit_update BEFORE UPDATE OF error ON posts
WHEN NEW.error IS NOT OLD.error AND length(NEW.error) > 2000
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a post''s error summary is at most 2000 characters');
END;

CREATE TRIGGER posts_media_limit_insert BEFORE INSERT ON posts
WHEN json_array_length(NEW.media) > 10
  OR EXISTS (SELECT 1 FROM json_each(NEW.media)
             WHERE length(json_extract(value, '$.alt')) > 1500
                OR length(json_extract(value, '$.url')) > 2048)
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a post has at most 10 media items, each with a URL of at most 2048 characters and alt text of at most 1500');
END;

CREATE TRIGGER posts_media_limit_update BEFORE UPDATE OF media ON posts
WHEN NEW.media IS NOT OLD.media
 AND (json_array_length(NEW.media) > 10
  OR EXISTS (SELECT 1 FROM json_each(NEW.media)
             WHERE length(json_extract(value, '$.alt')) > 1500
                OR length(json_extract(value, '$.url')) > 2048))
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a post has at most 10 media items, each with a URL of at most 2048 characters and alt text of at most 1500');
END;

-- Secrets the server keeps across restarts and hosts (the key of the dashboard's login
-- form CSRF tokens): created once by the first process that needs one, then read.
CREATE TABLE server_secrets (
    name       TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
