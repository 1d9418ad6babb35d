-- +goose Up
-- Where a session's latest reply went (seed 002's deliveryContext: channel,
-- bot account, chat, thread), and a subagent's spawn options kept with the
-- child so a restart still deletes it (cleanup) and times its run out
-- (run_timeout_seconds, counted from run_started_at, Unix milliseconds; 0:
-- not running) (issue 27).
ALTER TABLE entries
    ADD COLUMN delivery_channel    text    NOT NULL DEFAULT '',
    ADD COLUMN delivery_to         text    NOT NULL DEFAULT '',
    ADD COLUMN delivery_account_id text    NOT NULL DEFAULT '',
    ADD COLUMN delivery_thread_id  text    NOT NULL DEFAULT '',
    ADD COLUMN subagent_cleanup    text    NOT NULL DEFAULT '',
    ADD COLUMN run_timeout_seconds integer NOT NULL DEFAULT 0,
    ADD COLUMN run_started_at      bigint  NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE entries
    DROP COLUMN delivery_channel,
    DROP COLUMN delivery_to,
    DROP COLUMN delivery_account_id,
    DROP COLUMN delivery_thread_id,
    DROP COLUMN subagent_cleanup,
    DROP COLUMN run_timeout_seconds,
    DROP COLUMN run_started_at;
