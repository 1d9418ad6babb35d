-- +goose Up
-- One index fewer per usage row (issue 21): the identity column's primary
-- key index served no query (rows are found by agent, session, sender or
-- time, and id only breaks ties in Rows' order, after a sort), while every
-- row inserted into it. The row's natural key, unique already and what the
-- insert's ON CONFLICT names, becomes the primary key (usage_pkey, built
-- once over the table's rows); id keeps its values and its identity.
ALTER TABLE usage DROP CONSTRAINT usage_pkey,
    DROP CONSTRAINT usage_agent_id_session_id_at_key,
    ADD CONSTRAINT usage_pkey PRIMARY KEY (agent_id, session_id, at);

-- +goose Down
ALTER TABLE usage DROP CONSTRAINT usage_pkey,
    ADD CONSTRAINT usage_pkey PRIMARY KEY (id),
    ADD CONSTRAINT usage_agent_id_session_id_at_key UNIQUE (agent_id, session_id, at);
