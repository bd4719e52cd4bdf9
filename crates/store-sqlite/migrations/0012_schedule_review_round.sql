-- N of M approvals mean N verdicts that still stand (issue 26): a pass is given for the
-- post as it would go out, and when it goes out is part of that. Moving a draft that
-- holds a pass in its review round starts a new round, so that pass no longer counts
-- and the critics review the moved draft again. A draft without passes moves freely,
-- and a write that also changes the content or withdraws an approval starts its one new
-- round by posts_review_round (0006).

CREATE TRIGGER posts_review_round_moved AFTER UPDATE OF scheduled_at ON posts
WHEN NEW.scheduled_at IS NOT OLD.scheduled_at
 AND OLD.status = 'draft' AND NEW.status = 'draft'
 AND NEW.content_hash IS OLD.content_hash
 AND NEW.review_round = OLD.review_round
 AND EXISTS (SELECT 1 FROM verdicts
             WHERE post_id = NEW.id AND review_round = OLD.review_round AND verdict = 'pass')
BEGIN
    UPDATE posts SET review_round = review_round + 1 WHERE id = NEW.id;
END;
