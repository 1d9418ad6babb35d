-- When a scheduled job ended (Unix nanoseconds; NULL while it is active):
-- maintenance forgets ended jobs past the retention (archiveRetention),
-- found through jobs_ended, which holds ended jobs only. A job that ended
-- before this column existed is taken to have ended at its last due
-- time, or now if that is later.
ALTER TABLE jobs ADD COLUMN ended_at INTEGER;
UPDATE jobs SET ended_at = min(next_at, unixepoch() * 1000000000) WHERE state <> 'active';
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE state <> 'active';
