-- Dashboard sessions live in the ledger, so that a restart or an upgrade of `serve`
-- signs nobody out. Only hashes are stored: the SHA-256 of the session cookie and the
-- signed-in token's secret_sha256 (as in tokens), which is re-authenticated on every
-- request so that revoking the token ends its sessions.
CREATE TABLE dashboard_sessions (
    id_sha256    TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL REFERENCES tokens (secret_sha256),
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);

-- Posted but not verified: what the verification alert counts at every scrape, kept
-- the size of the problem rather than of the history.
CREATE INDEX posts_unverified ON posts (id) WHERE status = 'posted' AND verified_at IS NULL;
