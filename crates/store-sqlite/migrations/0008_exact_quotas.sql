-- Exact quotas after recovery (docs/quotas.md).
--
-- A post settled `posted` by proof of an earlier attempt committed its new reservation
-- without a send time; a reservation without one counts "as now" in the rolling window
-- for ever. Such a row is given the time it was made as its send time: it then counts
-- once, no earlier than the publish it stands for (a later time only holds a window
-- longer), and reads as a well-formed row (sent no earlier than it was made). Only rows
-- whose sent_at is still NULL are touched.
UPDATE reservations SET sent_at = created_at
    WHERE state = 'committed' AND sent_at IS NULL;

-- A quota deferral, kept apart from the platform's and the backoff's `not_before`: a pass
-- recomputes it, so a freed slot or a raised limit releases the post at once.
ALTER TABLE posts ADD COLUMN deferred_until TEXT;
CREATE INDEX posts_deferred ON posts (deferred_until) WHERE deferred_until IS NOT NULL;
