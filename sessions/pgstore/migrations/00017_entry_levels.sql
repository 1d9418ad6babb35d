-- +goose Up
-- Seed 002's per-session entry fields (issue 27): verbose and reasoning
-- levels and the usage footer kept as written, and the send policy (deny:
-- replies recorded, not sent).
ALTER TABLE entries
    ADD COLUMN verbose_level   text NOT NULL DEFAULT '',
    ADD COLUMN reasoning_level text NOT NULL DEFAULT '',
    ADD COLUMN send_policy     text NOT NULL DEFAULT '',
    ADD COLUMN response_usage  text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE entries
    DROP COLUMN verbose_level,
    DROP COLUMN reasoning_level,
    DROP COLUMN send_policy,
    DROP COLUMN response_usage;
