-- task_load.lua: expire paused tasks lazily, then read one task. Never touches its last update.
-- KEYS[1..6] data, info, seq, evictable, paused, stats (see expire_paused.lua)
-- ARGV[1]  task field ("scope/id")
-- ARGV[2]  expiry cutoff (now - paused TTL, seconds since the epoch)
-- Returns the task JSON, or nil (false) when unknown, evicted or expired.
expire_paused(ARGV[2])
return redis.call('HGET', KEYS[1], ARGV[1])
