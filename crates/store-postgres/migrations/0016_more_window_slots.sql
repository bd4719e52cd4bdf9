-- Claims in batches (issue 28): a batch holds one of the window's slots for each of its
-- claims, and takes at most half of them (airlock_claim_batch), so that another
-- process's batch at the same moment finds as many free. Sixteen more slots, writing
-- shards 33 to 48 of quota_hours (17 to 32 are the backends', airlock_count_hour). The
-- quick proof counts every other slot as a claim in flight, so a claim now proves its
-- room from the counts while its limits are 32 above them; nearer, it decides from the
-- rows, as before.
INSERT INTO ledger_locks (name)
    SELECT 'window slot ' || g FROM generate_series(33, 48) g;
