-- task_load.lua: expire paused tasks lazily, then read one task and its version. Never touches its last update.
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version (see expire_paused.lua)
-- ARGV[1]  task field ("scope/id")
-- ARGV[2]  expiry cutoff (now - paused TTL, seconds since the epoch)
-- ARGV[3]  optional: the version whose body the caller already holds ("" or absent: none)
-- Returns {task JSON, version}; {version} alone when that is the held version (the body is not sent again);
-- nil (false) when unknown, evicted or expired.
expire_paused(ARGV[2])
local held = tonumber(ARGV[3] or '')
if held then
  local version = version_of(ARGV[1])
  if version ~= 0 and version == held then
    return {version}
  end
end
local body = redis.call('HGET', KEYS[1], ARGV[1])
if not body then
  return false
end
return {body, version_of(ARGV[1])}
