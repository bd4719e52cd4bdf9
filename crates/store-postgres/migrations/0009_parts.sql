-- Posts of several parts (docs/parts.md). The same columns as
-- crates/store-sqlite/migrations/0009_parts.sql.
--
-- posts.more_parts: the parts after the first, a JSON list of {text, media} (the first
-- part stays in text and media, so a single post is stored as before);
-- posts.first_comment: a comment published under the post once it is out. Both are
-- content: changing them changes content_hash, which quarantine freezes.
ALTER TABLE posts ADD COLUMN more_parts jsonb NOT NULL DEFAULT '[]';
ALTER TABLE posts ADD COLUMN first_comment text;

-- Each part's request has an intent of its own, under a generation of its own: the part
-- it sends, and, once the part is known to be out, its id and permalink on the platform.
ALTER TABLE intents ADD COLUMN part bigint NOT NULL DEFAULT 1 CHECK (part >= 1);
ALTER TABLE intents ADD COLUMN platform_post_id text;
ALTER TABLE intents ADD COLUMN permalink text;

-- Bounds matching airlock_core::limits (MAX_PARTS parts, each within the text and
-- media bounds); the serialized list is bounded as a whole.
CREATE FUNCTION airlock_posts_parts_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF jsonb_typeof(NEW.more_parts) <> 'array' OR jsonb_array_length(NEW.more_parts) > 49
       OR length(NEW.more_parts::text) > 8000000 OR length(NEW.first_comment) > 100000 THEN
        RAISE EXCEPTION 'airlock: value too large: a post has at most 50 parts, and a first comment at most 100000 characters'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER posts_parts_limit BEFORE INSERT OR UPDATE OF more_parts, first_comment ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_parts_limit();
