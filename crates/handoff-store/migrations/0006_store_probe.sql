-- One row the store rewrites to learn whether writes work again after they failed (disk full,
-- I/O error), so readiness recovers even when nothing else writes.
CREATE TABLE store_probe (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL
);
