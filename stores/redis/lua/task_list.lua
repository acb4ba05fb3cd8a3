-- task_list.lua: expire paused tasks lazily, ensure the shared cursor identity, and return one scope's index.
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version (see expire_paused.lua)
-- KEYS[8]  identity hash: id, secret (created once with HSETNX; every worker then signs alike). Only a
--          partition that holds tasks gets one, so a listing never creates a key in an empty partition.
-- ARGV[1]  expiry cutoff (now - paused TTL)
-- ARGV[2]  task field prefix of the scope ("scope/")
-- ARGV[3]  candidate store id, ARGV[4] candidate secret (used only if none exists yet)
-- Returns {store id, secret, field1, info1, seq1, field2, info2, seq2, ...} for the scope's tasks; id and
-- secret are false when the partition holds no task and never had an identity.
expire_paused(ARGV[1])
local result = redis.call('HMGET', KEYS[8], 'id', 'secret')
-- Written once, and only in a partition that holds tasks: later listings only read (so a replica can list),
-- and listing an empty partition creates no key there.
if (not result[1] or not result[2]) and redis.call('HLEN', KEYS[2]) > 0 then
  redis.call('HSETNX', KEYS[8], 'id', ARGV[3])
  redis.call('HSETNX', KEYS[8], 'secret', ARGV[4])
  result = redis.call('HMGET', KEYS[8], 'id', 'secret')
end
local prefix, plen = ARGV[2], string.len(ARGV[2])
local all = redis.call('HGETALL', KEYS[2])
for i = 1, #all, 2 do
  local field = all[i]
  if string.sub(field, 1, plen) == prefix then
    table.insert(result, field)
    table.insert(result, all[i + 1])
    table.insert(result, redis.call('HGET', KEYS[3], field) or '0')
  end
end
return result
