-- Exact quotas after recovery (docs/quotas.md).
--
-- A post settled `posted` by proof of an earlier attempt committed its new reservation
-- without a send time; a reservation without one counts "as now" in the rolling window
-- for ever. Such a row is filled in with the send time of the latest attempt at or
-- before its generation (the request the platform received), else the post's publish
-- time, else when it was made. Only rows whose sent_at is still NULL are touched.
UPDATE reservations SET sent_at = COALESCE(
        (SELECT max(i.created_at) FROM intents i
         WHERE i.post_id = reservations.post_id AND i.generation <= reservations.generation),
        (SELECT p.posted_at FROM posts p WHERE p.id = reservations.post_id),
        reservations.created_at)
    WHERE state = 'committed' AND sent_at IS NULL;

-- A quota deferral, kept apart from the platform's and the backoff's `not_before`: a pass
-- recomputes it, so a freed slot or a raised limit releases the post at once.
ALTER TABLE posts ADD COLUMN deferred_until TEXT;
CREATE INDEX posts_deferred ON posts (deferred_until) WHERE deferred_until IS NOT NULL;
