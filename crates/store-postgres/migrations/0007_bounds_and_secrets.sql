-- Bounds the store enforces on what the review of issue 12 found unbounded, and a small
-- table of server secrets. The same rules as
-- crates/store-sqlite/migrations/0007_bounds_and_secrets.sql.
--
-- An event's note at most 4000 characters, a post's error summary at most 2000, media
-- counted as items with each item's alt text at most 1500 characters and its URL at most
-- 2048 (0003's check on the serialized length stays; airlock's own check keeps the
-- serialized media well below it). airlock refuses the same values before they reach
-- the store. Rows stored before this migration are left as they are.

CREATE FUNCTION airlock_post_events_note_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF char_length(NEW.note) > 4000 THEN
        RAISE EXCEPTION 'airlock: value too large: an event note is at most 4000 characters'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER post_events_note_limit BEFORE INSERT ON post_events
    FOR EACH ROW EXECUTE FUNCTION airlock_post_events_note_limit();

CREATE FUNCTION airlock_posts_error_and_media_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (TG_OP = 'INSERT' OR NEW.error IS DISTINCT FROM OLD.error)
       AND char_length(NEW.error) > 2000 THEN
        RAISE EXCEPTION 'airlock: value too large: a post''s error summary is at most 2000 characters'
            USING ERRCODE = 'AL005';
    END IF;
    IF (TG_OP = 'INSERT' OR NEW.media IS DISTINCT FROM OLD.media)
       AND (jsonb_array_length(NEW.media) > 10
            OR EXISTS (SELECT 1 FROM jsonb_array_elements(NEW.media) AS item
                       WHERE char_length(item ->> 'alt') > 1500
                          OR char_length(item ->> 'url') > 2048)) THEN
        RAISE EXCEPTION 'airlock: value too large: a post has at most 10 media items, each with a URL of at most 2048 characters and alt text of at most 1500'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER posts_error_and_media_limit BEFORE INSERT OR UPDATE OF error, media ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_error_and_media_limit();

-- Secrets the server keeps across restarts and hosts (the key of the dashboard's login
-- form CSRF tokens): created once by the first process that needs one, then read.
CREATE TABLE server_secrets (
    name       text        PRIMARY KEY,
    secret     text        NOT NULL,
    created_at timestamptz NOT NULL
);
