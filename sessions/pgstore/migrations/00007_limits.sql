-- +goose Up
-- Budget counters of package limits (issue 14), the seam's LimitCounters:
-- tokens and cost charged to a subject (scope sender, room or agent) in
-- one budget window (period day or month, starting at window_start). Every
-- replica adds its charges with one INSERT ... ON CONFLICT DO UPDATE that
-- adds to the row, so concurrent charges are never lost; window_end lets
-- pruning drop the windows that ended.
CREATE TABLE limit_counters (
    scope        text             COLLATE "C" NOT NULL,
    subject      text             COLLATE "C" NOT NULL,
    period       text             COLLATE "C" NOT NULL,
    window_start bigint           NOT NULL,
    window_end   bigint           NOT NULL,
    tokens       bigint           NOT NULL DEFAULT 0,
    cost_usd     double precision NOT NULL DEFAULT 0,
    updated_at   timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, subject, period, window_start)
);
CREATE INDEX limit_counters_end ON limit_counters (window_end);

-- +goose Down
DROP TABLE limit_counters;
