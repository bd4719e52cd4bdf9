-- The version of the duplicate key that posts.text_key holds (issue 26).
--
-- The key (airlock_core::review::text_key) now reads texts as people do: lookalike
-- letters, combining marks and blank symbols fold. Keys written before are version 1 and
-- no longer match the keys of new drafts, so that an old quarantined text could be
-- drafted again. A store opened by a role that may write (SqliteStore::open) recomputes
-- every stored key when the version recorded here is below
-- airlock_core::review::TEXT_KEY_VERSION, and records that version, in one transaction.
-- posts.text_key is derived from posts.text, never history; posts without a key (from
-- before 0006_review) keep none.
CREATE TABLE text_key_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL CHECK (version >= 1)
);
INSERT INTO text_key_version (id, version) VALUES (1, 1);
