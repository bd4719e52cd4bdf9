-- Times in a row a platform answered "not now" for a post (a rate limit, a publishing
-- limit). They are not attempts, until there are too many of them (see the guarded path).
ALTER TABLE posts ADD COLUMN waits bigint NOT NULL DEFAULT 0;
