-- The critic's workflow (issue 16): verdicts as records, review rounds, the revision
-- cap and quarantine, and the key duplicate drafts are found by. The same rules as
-- crates/store-sqlite/migrations/0006_review.sql.
--
-- posts.review_round: a new round starts whenever the content changes or an approval
-- is withdrawn (approved -> draft), kept by a trigger so that every path is covered;
-- only passes given in the current round count toward approvals_required.
-- posts.revisions: fail verdicts since the post was drafted or released.
-- posts.quarantined_at: set after max_revisions fails. Quarantine is a condition on a
-- draft, not a state: the status stays 'draft', and the trigger below refuses approving
-- it (AL001), changing its content (AL006), and the flag on any other state (AL001).
-- posts.text_key: SHA-256 of the normalised text (airlock_core::review::text_key),
-- written by airlock with the text. Posts drafted before this migration have none and
-- are not compared. Drafts with the same key serialize on advisory lock class +7.

ALTER TABLE posts ADD COLUMN review_round bigint NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN revisions bigint NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN quarantined_at timestamptz;
ALTER TABLE posts ADD COLUMN text_key text;

CREATE INDEX posts_text_key ON posts (channel, text_key) WHERE text_key IS NOT NULL;
CREATE INDEX posts_quarantined ON posts (id) WHERE quarantined_at IS NOT NULL;

-- Append-only, like post_events; no foreign key, so the verdicts of a discarded draft stay.
CREATE TABLE verdicts (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    post_id      bigint      NOT NULL,
    verdict      text        NOT NULL CHECK (verdict IN ('pass', 'fail')),
    reasons      jsonb       NOT NULL DEFAULT '[]',   -- array of strings
    actor        text        NOT NULL,
    content_hash text        NOT NULL,
    rubric_hash  text        NOT NULL,
    review_round bigint      NOT NULL,
    content      jsonb,                               -- the reviewed content
    at           timestamptz NOT NULL
);
CREATE INDEX verdicts_post ON verdicts (post_id, id);

CREATE FUNCTION airlock_verdicts_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'airlock: verdicts are append-only' USING ERRCODE = 'AL004';
END $$;
CREATE TRIGGER verdicts_no_update BEFORE UPDATE OR DELETE ON verdicts
    FOR EACH ROW EXECUTE FUNCTION airlock_verdicts_append_only();
CREATE TRIGGER verdicts_no_truncate BEFORE TRUNCATE ON verdicts
    FOR EACH STATEMENT EXECUTE FUNCTION airlock_verdicts_append_only();

CREATE FUNCTION airlock_verdicts_size_limit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF char_length(NEW.reasons::text) > 200000 OR char_length(NEW.actor) > 200
       OR char_length(NEW.content::text) > 1000000 THEN
        RAISE EXCEPTION 'airlock: value too large: a verdict has at most 20 reasons of 1000 characters'
            USING ERRCODE = 'AL005';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER verdicts_size_limit BEFORE INSERT ON verdicts
    FOR EACH ROW EXECUTE FUNCTION airlock_verdicts_size_limit();

CREATE FUNCTION airlock_posts_review() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Only a draft is quarantined, and a quarantined draft never leaves draft (it is
    -- never approved).
    IF NEW.quarantined_at IS NOT NULL AND NEW.status <> 'draft' THEN
        RAISE EXCEPTION 'airlock: illegal status transition % -> %: post % is quarantined, and only a draft may be',
            OLD.status, NEW.status, OLD.id USING ERRCODE = 'AL001';
    END IF;
    -- The content of a quarantined draft stays as it was reviewed, until it is released.
    IF OLD.quarantined_at IS NOT NULL AND NEW.quarantined_at IS NOT NULL
       AND (NEW.content_hash IS DISTINCT FROM OLD.content_hash
            OR NEW.text IS DISTINCT FROM OLD.text OR NEW.title IS DISTINCT FROM OLD.title
            OR NEW.media IS DISTINCT FROM OLD.media OR NEW.link IS DISTINCT FROM OLD.link) THEN
        RAISE EXCEPTION 'airlock: quarantined: release post % before changing it', OLD.id
            USING ERRCODE = 'AL006';
    END IF;
    -- A new review round whenever the content changes or an approval is withdrawn.
    IF NEW.content_hash IS DISTINCT FROM OLD.content_hash
       OR (OLD.status = 'approved' AND NEW.status = 'draft') THEN
        NEW.review_round := OLD.review_round + 1;
    END IF;
    RETURN NEW;
END $$;
-- Only writes that set the status, the quarantine or the content run it.
CREATE TRIGGER posts_review
    BEFORE UPDATE OF status, quarantined_at, content_hash, text, title, media, link ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_review();
