-- +goose Up
-- Per-session settings a chat sets (issue 23 /model /think /activation,
-- issue 27 entry fields): the provider of a model override written
-- without one, the reasoning effort, and how a group session is addressed.
ALTER TABLE entries
    ADD COLUMN provider_override text NOT NULL DEFAULT '',
    ADD COLUMN thinking_level    text NOT NULL DEFAULT '',
    ADD COLUMN group_activation  text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE entries
    DROP COLUMN provider_override,
    DROP COLUMN thinking_level,
    DROP COLUMN group_activation;
