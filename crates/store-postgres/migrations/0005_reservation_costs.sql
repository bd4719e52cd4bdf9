-- What a reservation costs in money, in micro-dollars (X's pay-per-use API), so a
-- channel's monthly budget is decided in the transaction that inserts the reservation,
-- with the post quota. Reservations made before this migration cost nothing.
ALTER TABLE reservations ADD COLUMN cost_usd_micros BIGINT NOT NULL DEFAULT 0
    CHECK (cost_usd_micros >= 0);
