-- The queue by the time each post becomes due (its schedule, or `not_before` when later:
-- a retry's backoff or a quota deferral), per channel. The dispatcher reads each open
-- channel's range up to now and stops after the posts it asked for: posts deferred or
-- scheduled later lie past the range, and a paused channel's range is never entered, so
-- the work of a look does not grow with the number of posts waiting.
CREATE INDEX posts_due_at ON posts (channel,
    (CASE WHEN not_before > scheduled_at THEN not_before ELSE scheduled_at END), id)
    WHERE status = 'approved' AND posted_at IS NULL;
