-- The critic's workflow (issue 16): verdicts as records, review rounds, the revision
-- cap and quarantine, and the key duplicate drafts are found by.
--
-- posts.review_round: a new round starts whenever the content changes or an approval
-- is withdrawn (approved -> draft), kept by a trigger so that every path is covered;
-- only passes given in the current round count toward approvals_required.
-- posts.revisions: fail verdicts since the post was drafted or released.
-- posts.quarantined_at: set after max_revisions fails. Quarantine is a condition on a
-- draft, not a state: the status stays 'draft', and the triggers below refuse
-- approving it, changing its content, and the flag on any other state.
-- posts.text_key: SHA-256 of the normalised text (airlock_core::review::text_key),
-- written by airlock with the text. Posts drafted before this migration have none and
-- are not compared.

ALTER TABLE posts ADD COLUMN review_round INTEGER NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN revisions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE posts ADD COLUMN quarantined_at TEXT;
ALTER TABLE posts ADD COLUMN text_key TEXT;

CREATE INDEX posts_text_key ON posts (channel, text_key) WHERE text_key IS NOT NULL;
CREATE INDEX posts_quarantined ON posts (id) WHERE quarantined_at IS NOT NULL;

-- Append-only, like post_events; no foreign key, so the verdicts of a discarded draft stay.
CREATE TABLE verdicts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    post_id      INTEGER NOT NULL,
    verdict      TEXT    NOT NULL CHECK (verdict IN ('pass', 'fail')),
    reasons      TEXT    NOT NULL DEFAULT '[]',   -- JSON array of strings
    actor        TEXT    NOT NULL,
    content_hash TEXT    NOT NULL,
    rubric_hash  TEXT    NOT NULL,
    review_round INTEGER NOT NULL,
    content      TEXT,                            -- JSON of the reviewed content
    at           TEXT    NOT NULL
);
CREATE INDEX verdicts_post ON verdicts (post_id, id);

CREATE TRIGGER verdicts_no_update BEFORE UPDATE ON verdicts
BEGIN
    SELECT RAISE(ABORT, 'airlock: verdicts are append-only');
END;

CREATE TRIGGER verdicts_no_delete BEFORE DELETE ON verdicts
BEGIN
    SELECT RAISE(ABORT, 'airlock: verdicts are append-only');
END;

CREATE TRIGGER verdicts_size_limit BEFORE INSERT ON verdicts
WHEN length(NEW.reasons) > 200000 OR length(NEW.actor) > 200 OR length(NEW.content) > 1000000
BEGIN
    SELECT RAISE(ABORT, 'airlock: value too large: a verdict has at most 20 reasons of 1000 characters');
END;

-- A new review round whenever the content changes or an approval is withdrawn.
CREATE TRIGGER posts_review_round AFTER UPDATE OF content_hash, status ON posts
WHEN NEW.content_hash IS NOT OLD.content_hash
  OR (OLD.status = 'approved' AND NEW.status = 'draft')
BEGIN
    UPDATE posts SET review_round = review_round + 1 WHERE id = NEW.id;
END;

-- Only a draft is quarantined, and a quarantined draft never leaves draft (it is never
-- approved): the same rule, whichever of the two columns a statement sets.
CREATE TRIGGER posts_quarantine_stays_draft BEFORE UPDATE OF status ON posts
WHEN NEW.status <> 'draft' AND NEW.quarantined_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'airlock: illegal status transition: the post is quarantined');
END;

CREATE TRIGGER posts_quarantine_drafts_only BEFORE UPDATE OF quarantined_at ON posts
WHEN NEW.quarantined_at IS NOT NULL AND NEW.status <> 'draft'
BEGIN
    SELECT RAISE(ABORT, 'airlock: illegal status transition: only a draft is quarantined');
END;

-- The content of a quarantined draft stays as it was reviewed, until it is released.
CREATE TRIGGER posts_quarantine_freezes_content BEFORE UPDATE OF content_hash, text, title, media, link ON posts
WHEN OLD.quarantined_at IS NOT NULL AND NEW.quarantined_at IS NOT NULL
 AND (NEW.content_hash IS NOT OLD.content_hash OR NEW.text IS NOT OLD.text
      OR NEW.title IS NOT OLD.title OR NEW.media IS NOT OLD.media OR NEW.link IS NOT OLD.link)
BEGIN
    SELECT RAISE(ABORT, 'airlock: quarantined: release the post before changing it');
END;
