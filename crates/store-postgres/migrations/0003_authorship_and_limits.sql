-- Separation of duties by authorship, and size limits the store itself enforces. The
-- same rules as crates/store-sqlite/migrations/0003_authorship_and_limits.sql.
--
-- posts.authors: every principal that changed a post's content since its last approval
-- (draft -> approved). A trigger maintains it from the actor airlock records on every
-- write (event_actor; 'sql' for hand-written SQL), so every path that edits content is
-- covered. A change of schedule alone changes no authorship. airlock refuses an
-- approval by any author (and by the creator and the last content editor).
--
-- Existing posts keep every row: their creator and last editor become their authors,
-- which can only refuse more approvals, never fewer.

ALTER TABLE posts ADD COLUMN authors text[] NOT NULL DEFAULT '{}';

UPDATE posts SET authors = CASE
    WHEN created_by = edited_by THEN ARRAY[created_by]
    ELSE ARRAY[created_by, edited_by] END;

CREATE FUNCTION airlock_posts_authors() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    author text := CASE WHEN NEW.version <> OLD.version THEN COALESCE(NEW.event_actor, 'sql')
                        ELSE 'sql' END;
BEGIN
    IF OLD.status = 'draft' AND NEW.status = 'approved' THEN
        -- An approval starts a new round of review.
        NEW.authors := '{}';
    -- The content hash moves with every change of content airlock writes; comparing it
    -- (64 characters) instead of the texts keeps claims and outcome writes cheap.
    ELSIF NEW.content_hash IS DISTINCT FROM OLD.content_hash
          AND NOT (author = ANY (NEW.authors)) THEN
        NEW.authors := NEW.authors || author;
    END IF;
    RETURN NEW;
END $$;
-- Only writes that set the content hash or the status run it.
CREATE TRIGGER posts_authors BEFORE UPDATE OF content_hash, status ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_authors();

-- The limits of airlock_core::limits, enforced once more here so that no path (or
-- hand-written SQL) can store a post, token or pause larger than airlock ever reads
-- back into memory. Rows stored before this migration are left as they are; only new
-- values are checked. Lengths are in characters, as airlock counts them.
CREATE FUNCTION airlock_posts_size_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (TG_OP = 'INSERT' OR NEW.text IS DISTINCT FROM OLD.text) AND char_length(NEW.text) > 100000
       OR (TG_OP = 'INSERT' OR NEW.title IS DISTINCT FROM OLD.title) AND char_length(NEW.title) > 300
       OR (TG_OP = 'INSERT' OR NEW.link IS DISTINCT FROM OLD.link) AND char_length(NEW.link) > 2048
       OR (TG_OP = 'INSERT' OR NEW.media IS DISTINCT FROM OLD.media) AND char_length(NEW.media::text) > 64000
    THEN
        RAISE EXCEPTION 'airlock: value too large: a post''s text is at most 100000 characters, its title 300, its link 2048, its media 10 items'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
-- Only writes that set content run it.
CREATE TRIGGER posts_size_limit BEFORE INSERT OR UPDATE OF text, title, link, media ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_size_limit();

CREATE FUNCTION airlock_tokens_size_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF char_length(NEW.name) > 64 THEN
        RAISE EXCEPTION 'airlock: value too large: a token name is at most 64 characters'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tokens_size_limit BEFORE INSERT ON tokens
    FOR EACH ROW EXECUTE FUNCTION airlock_tokens_size_limit();

CREATE FUNCTION airlock_pauses_size_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF char_length(NEW.reason) > 4000 THEN
        RAISE EXCEPTION 'airlock: value too large: a pause reason is at most 4000 characters'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER pauses_size_limit BEFORE INSERT ON pauses
    FOR EACH ROW EXECUTE FUNCTION airlock_pauses_size_limit();
