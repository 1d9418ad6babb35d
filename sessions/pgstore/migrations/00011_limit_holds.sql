-- +goose Up
-- Budget holds (issue 22): a turn's estimated cost reserved on each
-- counter of its budgets before it runs, dropped in the transaction that
-- adds its real cost (sessions.LimitReserver). A reservation locks the
-- counters' rows (limit_counters) and sums their unexpired holds, so
-- replicas admit concurrent turns against one count. A hold left by a
-- killed process counts until expires_at (unix seconds), then never; the
-- hourly prune deletes expired ones.
CREATE TABLE limit_holds (
    id           text             COLLATE "C" NOT NULL,
    scope        text             COLLATE "C" NOT NULL,
    subject      text             COLLATE "C" NOT NULL,
    period       text             COLLATE "C" NOT NULL,
    window_start bigint           NOT NULL,
    tokens       bigint           NOT NULL,
    cost_usd     double precision NOT NULL,
    expires_at   bigint           NOT NULL,
    PRIMARY KEY (id, scope, subject, period, window_start)
);
CREATE INDEX limit_holds_counter ON limit_holds (scope, subject, period, window_start);
CREATE INDEX limit_holds_expires ON limit_holds (expires_at);

-- +goose Down
DROP TABLE limit_holds;
