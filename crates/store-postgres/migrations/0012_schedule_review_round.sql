-- N of M approvals mean N verdicts that still stand (issue 26): a pass is given for the
-- post as it would go out, and when it goes out is part of that. Moving a draft that
-- holds a pass in its review round starts a new round, so that pass no longer counts
-- and the critics review the moved draft again. A draft without passes moves freely,
-- and a write that also changes the content or withdraws an approval starts its one new
-- round by airlock_posts_review (0006). The same rule as
-- crates/store-sqlite/migrations/0012_schedule_review_round.sql.

CREATE FUNCTION airlock_posts_review_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.scheduled_at IS DISTINCT FROM OLD.scheduled_at
       AND OLD.status = 'draft' AND NEW.status = 'draft'
       AND NEW.content_hash IS NOT DISTINCT FROM OLD.content_hash
       AND NEW.review_round = OLD.review_round
       AND EXISTS (SELECT 1 FROM verdicts v
                   WHERE v.post_id = OLD.id AND v.review_round = OLD.review_round
                     AND v.verdict = 'pass') THEN
        NEW.review_round := OLD.review_round + 1;
    END IF;
    RETURN NEW;
END $$;
-- Named after posts_review, so it runs after it and sees the round that one left.
CREATE TRIGGER posts_review_moved BEFORE UPDATE OF scheduled_at ON posts
    FOR EACH ROW EXECUTE FUNCTION airlock_posts_review_moved();
