-- expire_paused.lua: shared prelude, prepended to task_load.lua, task_save.lua, task_list.lua and commit_task.lua.
-- Uses the including script's KEYS (no ARGV of its own):
-- KEYS[1]  data hash:      task field -> task JSON
-- KEYS[2]  info hash:      task field -> listing info JSON
-- KEYS[3]  seq hash:       task field -> admission sequence
-- KEYS[4]  evictable zset: terminal/paused task fields scored by their last save's version (task_write.lua)
-- KEYS[5]  paused zset:    paused task fields scored by last update
-- KEYS[6]  stats hash:     count, bytes, next_seq, next_ver
-- KEYS[7]  version hash:   task field -> version (absent task = version 0)
-- Defines drop_task(field), remove_task(field) and expire_paused(cutoff) (none returns a value) and
-- version_of(field).

-- A task's event stream is "<partition tag>:events:<task field>" (stores/redis/keys.py task_events), and KEYS[1] is
-- "<partition tag>:data". Not among KEYS, since which tasks go is decided here, but it carries the
-- partition's hash tag, so it lies in the slot of KEYS (tests/stores/test_task_store.py checks the name).
local EVENTS = string.sub(KEYS[1], 1, -string.len(':data') - 1) .. ':events:'

-- A removed task (evicted, expired) takes its event log with it; left to its TTL it would outlive the task
-- by up to a day, one stream per task ever evicted. Leaves the stats to the caller: a save's eviction has
-- counted the task's size already and writes the stats once (task_write.lua).
local function drop_task(field)
  redis.call('DEL', EVENTS .. field)
  redis.call('HDEL', KEYS[1], field)
  redis.call('HDEL', KEYS[2], field)
  redis.call('HDEL', KEYS[3], field)
  redis.call('ZREM', KEYS[4], field)
  redis.call('ZREM', KEYS[5], field)
  redis.call('HDEL', KEYS[7], field)
end

-- A task JSON is never empty, so its stored length tells whether it is there (0: it is not).
local function remove_task(field)
  local size = redis.call('HSTRLEN', KEYS[1], field)
  drop_task(field)
  if size > 0 then
    redis.call('HINCRBY', KEYS[6], 'count', -1)
    redis.call('HINCRBY', KEYS[6], 'bytes', -size)
  end
end

-- A stored task's version; 0 when the task does not exist (every save sets one: apply_task_write in
-- task_write.lua).
local function version_of(field)
  return tonumber(redis.call('HGET', KEYS[7], field) or '0')
end

-- Lazy expiry: paused tasks last updated at or before the cutoff (now - ttl) are gone.
local function expire_paused(cutoff)
  for _, field in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', cutoff)) do
    remove_task(field)
  end
end
