-- commit.lua: apply one scope's change set atomically: check versions, check quotas, then write all or nothing.
-- KEYS[1]  documents hash: field "kind/id" -> document JSON
-- KEYS[2]  versions hash:  field "kind/id" -> integer version (absent = 0)
-- KEYS[3]  counters hash:  quota name -> integer (never below 0)
-- ARGV[1]  E, number of expected versions     ARGV[2]  P, number of puts
-- ARGV[3]  D, number of deletes                ARGV[4]  Q, number of quotas
-- ARGV[5..] E pairs (field, expected version), then P pairs (field, JSON), then D fields,
--           then Q triples (name, delta, limit); a positive delta must keep counter + delta <= limit.
-- Returns {"ok"}, {"conflict", field} or {"quota", name, limit}; on anything but "ok" nothing was written.
local n_expect, n_put, n_delete, n_quota = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local i = 5

for _ = 1, n_expect do
  local current = tonumber(redis.call('HGET', KEYS[2], ARGV[i]) or '0')
  if current ~= tonumber(ARGV[i + 1]) then
    return {'conflict', ARGV[i]}
  end
  i = i + 2
end

local puts_at, deletes_at, quotas_at = i, i + 2 * n_put, i + 2 * n_put + n_delete

for q = 0, n_quota - 1 do
  local at = quotas_at + 3 * q
  local delta, limit = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
  local current = tonumber(redis.call('HGET', KEYS[3], ARGV[at]) or '0')
  if delta > 0 and current + delta > limit then
    return {'quota', ARGV[at], ARGV[at + 2]}
  end
end

-- Every check passed: write.
local put_fields = {}
for p = 0, n_put - 1 do
  local at = puts_at + 2 * p
  redis.call('HSET', KEYS[1], ARGV[at], ARGV[at + 1])
  redis.call('HINCRBY', KEYS[2], ARGV[at], 1)
  put_fields[ARGV[at]] = true
end
for d = 0, n_delete - 1 do
  local field = ARGV[deletes_at + d]
  if not put_fields[field] then
    redis.call('HDEL', KEYS[1], field)
    redis.call('HDEL', KEYS[2], field)
  end
end
for q = 0, n_quota - 1 do
  local at = quotas_at + 3 * q
  local current = tonumber(redis.call('HGET', KEYS[3], ARGV[at]) or '0')
  if current + tonumber(ARGV[at + 1]) < 0 then
    redis.call('HSET', KEYS[3], ARGV[at], '0')
  else
    redis.call('HINCRBY', KEYS[3], ARGV[at], ARGV[at + 1])
  end
end
return {'ok'}
