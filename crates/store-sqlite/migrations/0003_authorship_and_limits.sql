-- Separation of duties by authorship, and size limits the store itself enforces.
--
-- posts.authors: every principal that changed a post's content since its last approval
-- (draft -> approved), a JSON array of actor names. A trigger maintains it from the
-- actor airlock records on every write (event_actor; 'sql' for hand-written SQL), so
-- every path that edits content is covered. A change of schedule alone changes no
-- authorship. airlock refuses an approval by any author (and by the creator and the
-- last content editor).
--
-- Existing posts keep every row: their creator and last editor become their authors,
-- which can only refuse more approvals, never fewer.

ALTER TABLE posts ADD COLUMN authors TEXT NOT NULL DEFAULT '[]';

UPDATE posts SET authors = CASE
    WHEN created_by = edited_by THEN json_array(created_by)
    ELSE json_array(created_by, edited_by) END;

-- The content hash moves with every change of content airlock writes.
CREATE TRIGGER posts_content_authors AFTER UPDATE OF content_hash ON posts
WHEN NEW.content_hash IS NOT OLD.content_hash
BEGIN
    UPDATE posts SET authors = (
        SELECT json_group_array(actor) FROM (
            SELECT value AS actor FROM json_each(NEW.authors)
            UNION
            SELECT CASE WHEN NEW.version <> OLD.version THEN COALESCE(NEW.event_actor, 'sql')
                        ELSE 'sql' END
        )
    ) WHERE id = NEW.id;
END;

-- An approval starts a new round of review: the next change of content starts a new
-- list of authors.
CREATE TRIGGER posts_approval_clears_authors AFTER UPDATE OF status ON posts
WHEN OLD.status = 'draft' AND NEW.status = 'approved'
BEGIN
    UPDATE posts SET authors = '[]' WHERE id = NEW.id;
END;

-- The limits of airlock_core::limits, enforced once more here so that no path (or
-- hand-written SQL) can store a post, token or pause larger than airlock ever reads
-- back into memory. Rows stored before this migration are left as they are; only new
-- values are checked. Lengths are in characters, as airlock counts them.
CREATE TRIGGER posts_size_limit_insert BEFORE INSERT ON posts
WHEN length(NEW.text) > 100000
  OR length(NEW.title) > 300
  OR length(NEW.link) > 2048
  OR length(NEW.media) > 64000
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a post''s text is at most 100000 characters, its title 300, its link 2048, its media 10 items');
END;

CREATE TRIGGER posts_size_limit_update BEFORE UPDATE OF text, title, link, media ON posts
WHEN (NEW.text IS NOT OLD.text AND length(NEW.text) > 100000)
  OR (NEW.title IS NOT OLD.title AND length(NEW.title) > 300)
  OR (NEW.link IS NOT OLD.link AND length(NEW.link) > 2048)
  OR (NEW.media IS NOT OLD.media AND length(NEW.media) > 64000)
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a post''s text is at most 100000 characters, its title 300, its link 2048, its media 10 items');
END;

CREATE TRIGGER tokens_size_limit BEFORE INSERT ON tokens
WHEN length(NEW.name) > 64
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a token name is at most 64 characters');
END;

CREATE TRIGGER pauses_size_limit BEFORE INSERT ON pauses
WHEN length(NEW.reason) > 4000
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a pause reason is at most 4000 characters');
END;
