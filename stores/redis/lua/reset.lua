-- reset.lua: drop one scope's documents, counters, leases and tasks (with their event streams) in one atomic
-- step, and report what it held (see scope_report.lua), after dropping what had lapsed anyway.
-- Prepended by changes.lua and scope_report.lua.
-- KEYS[1..7]  documents, versions, counters, expiries, owners, dependents, holds (see changes.lua)
-- KEYS[8..14] data, info, seq, evictable, paused, stats, version of the partition's tasks (see expire_paused.lua)
-- KEYS[15] KEYS[16] the partition's idempotency claims hash and claim expiries zset (see task_write.lua)
-- KEYS[17..]  the event streams of the tasks the caller saw, one per ARGV[2..] (stores/redis/keys.py task_events)
-- ARGV[1]  now, ARGV[2..] the task fields the caller saw (HKEYS of KEYS[8]), in the order of their streams
-- Every key is passed in KEYS: when a task was saved since the caller looked, its stream is not among them,
-- and the script changes nothing and returns {"again"} (the caller looks again).
-- Version counters survive: the versions hash keeps only "#floor" (the highest version the scope had) and the
-- task stats keep next_seq and next_ver, so no document or task version is ever handed out twice.
-- Returns the report of what the scope held (see scope_report.lua).
local seen = {}
for i = 2, #ARGV do
  seen[ARGV[i]] = true
end
for _, field in ipairs(redis.call('HKEYS', KEYS[8])) do
  if not seen[field] then
    return {'again'}
  end
end
local s = state_keys(1)
sweep(s, ARGV[1])
local out = report(s, KEYS[13])
local floor = 0
for _, version in ipairs(redis.call('HVALS', s.versions)) do
  if tonumber(version) > floor then
    floor = tonumber(version)
  end
end
redis.call('DEL', s.documents, s.versions, s.counters, s.expiries, s.owners, s.dependents, s.holds)
if floor > 0 then
  redis.call('HSET', s.versions, '#floor', floor)
end
for i = 17, #KEYS do
  redis.call('DEL', KEYS[i])
end
redis.call('DEL', KEYS[8], KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[14], KEYS[15], KEYS[16])
if redis.call('EXISTS', KEYS[13]) == 1 then
  redis.call('HSET', KEYS[13], 'count', 0, 'bytes', 0)
end
return out
