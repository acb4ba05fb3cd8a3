-- reset.lua: drop one scope's documents, counters, leases and tasks (with their event streams) in one atomic
-- step, and report what it held (see scope_report.lua), after dropping what had lapsed anyway.
-- Prepended by changes.lua and scope_report.lua.
-- KEYS[1..8]  documents, versions, counters, expiries, owners, dependents, holds, registry (see changes.lua)
-- KEYS[9..15] data, info, seq, evictable, paused, stats, version of the partition's tasks (see expire_paused.lua)
-- KEYS[16] KEYS[17] the partition's idempotency claims hash and claim expiries zset (see task_write.lua)
-- ARGV[1]  now, ARGV[2] the scope (its registry member), ARGV[3] the key prefix of its tasks' event streams:
--          a stream's key is that prefix and the task's field (stores/keys.py task_events). Those keys are not
--          in KEYS (they are known only here) but carry the partition's hash tag, so they are in its slot.
-- Version counters survive: the versions hash keeps only "#floor" (the highest version the scope had) and the
-- task stats keep next_seq and next_ver, so no document or task version is ever handed out twice.
-- Returns the report of what the scope held (see scope_report.lua).
local s = state_keys(1)
sweep(s, ARGV[1])
local out = report(s, KEYS[14])
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
for _, field in ipairs(redis.call('HKEYS', KEYS[9])) do
  redis.call('DEL', ARGV[3] .. field)
end
redis.call('DEL', KEYS[9], KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[15], KEYS[16], KEYS[17])
if redis.call('EXISTS', KEYS[14]) == 1 then
  redis.call('HSET', KEYS[14], 'count', 0, 'bytes', 0)
end
redis.call('SREM', s.registry, ARGV[2])
return out
