-- task_save.lua: insert or replace one task, evicting to fit, and append its events, all or nothing.
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version (see expire_paused.lua)
-- KEYS[8]  the task's event stream
-- ARGV[1]  task field ("scope/id")          ARGV[2]  task JSON (its byte length is its size)
-- ARGV[3]  listing info JSON                ARGV[4]  retention: "active", "terminal" or "paused"
-- ARGV[5]  now (last-update score)          ARGV[6]  expiry cutoff (now - paused TTL)
-- ARGV[7]  max tasks                        ARGV[8]  max total bytes
-- ARGV[9]  max bytes per task               ARGV[10] stream MAXLEN (approximate)
-- ARGV[11] stream TTL in milliseconds       ARGV[12] expected version: "" = unconditional,
--                                                    "0" = must not exist, n = stored version must be n
-- ARGV[13..] event JSONs to append, in order
-- Returns {"ok", sequence, new version}, {"too_large"}, {"conflict", current version} or {"full"}; on
-- anything but "ok" no task was changed (only already-expired paused tasks may have been dropped, and a task
-- stored before versions existed may have been given its version; see version_of).
expire_paused(ARGV[6])

local field, body = ARGV[1], ARGV[2]
local size = string.len(body)
if size > tonumber(ARGV[9]) then
  return {'too_large'}
end

-- Optimistic concurrency: checked after expiry, so a task that expired meanwhile is at version 0.
if ARGV[12] ~= '' then
  local current = version_of(field)
  if current ~= tonumber(ARGV[12]) then
    return {'conflict', current}
  end
end

local exists = redis.call('HEXISTS', KEYS[1], field) == 1
local previous = 0
if exists then previous = redis.call('HSTRLEN', KEYS[1], field) end
local count = tonumber(redis.call('HGET', KEYS[6], 'count') or '0') + (exists and 0 or 1)
local bytes = tonumber(redis.call('HGET', KEYS[6], 'bytes') or '0') - previous + size
local max_tasks, max_bytes = tonumber(ARGV[7]), tonumber(ARGV[8])

-- Plan the eviction first (oldest last update first, never this task, never an active one) ...
-- Candidates come in small pages: at capacity a save usually needs one victim, not the whole set.
local victims = {}
local offset, page = 0, 16
while count > max_tasks or bytes > max_bytes do
  local batch = redis.call('ZRANGE', KEYS[4], offset, offset + page - 1)
  if #batch == 0 then
    return {'full'}
  end
  for _, candidate in ipairs(batch) do
    if candidate ~= field then
      table.insert(victims, candidate)
      count = count - 1
      bytes = bytes - redis.call('HSTRLEN', KEYS[1], candidate)
      if count <= max_tasks and bytes <= max_bytes then break end
    end
  end
  offset = offset + page
end

-- ... and commit it only together with the save, now that the task is shown to fit.
for _, victim in ipairs(victims) do
  remove_task(victim)
end

local sequence
if exists then
  sequence = redis.call('HGET', KEYS[3], field)
  redis.call('HINCRBY', KEYS[6], 'bytes', size - previous)
else
  sequence = redis.call('HINCRBY', KEYS[6], 'next_seq', 1)
  redis.call('HSET', KEYS[3], field, sequence)
  redis.call('HINCRBY', KEYS[6], 'count', 1)
  redis.call('HINCRBY', KEYS[6], 'bytes', size)
  redis.call('DEL', KEYS[8])  -- a reused id starts a fresh log
end
local version = redis.call('HINCRBY', KEYS[6], 'next_ver', 1)  -- store-wide: a version is never reused
redis.call('HSET', KEYS[1], field, body)
redis.call('HSET', KEYS[2], field, ARGV[3])
redis.call('HSET', KEYS[7], field, version)

redis.call('ZREM', KEYS[4], field)
redis.call('ZREM', KEYS[5], field)
if ARGV[4] ~= 'active' then
  redis.call('ZADD', KEYS[4], ARGV[5], field)
end
if ARGV[4] == 'paused' then
  redis.call('ZADD', KEYS[5], ARGV[5], field)
end

if #ARGV >= 13 then
  for i = 13, #ARGV do
    redis.call('XADD', KEYS[8], 'MAXLEN', '~', ARGV[10], '*', 'e', ARGV[i])
  end
  redis.call('PEXPIRE', KEYS[8], ARGV[11])
end
return {'ok', tonumber(sequence), version}
