-- changes.lua: shared prelude, prepended to commit.lua and commit_task.lua: one scope's change set, read from
-- ARGV, checked, then applied. The functions take the scope's key names rather than fixed KEYS positions,
-- because commit.lua passes its KEYS[1..3] and commit_task.lua its KEYS[9..11]:
--   documents hash: field "kind/id" -> document JSON
--   versions hash:  field "kind/id" -> integer version (absent = 0)
--   counters hash:  quota name -> integer (never below 0)
-- Change set in ARGV from position `at`: E, P, D, Q (numbers of expected versions, puts, deletes, quotas),
-- then E pairs (field, expected version), P pairs (field, JSON), D fields, Q triples (name, delta, limit);
-- a positive delta must keep counter + delta <= limit.
-- Defines read_changes(at) -> change set table (its `next` is the first ARGV position after it),
-- check_changes(c, versions, counters) -> nil, {"conflict", field} or {"quota", name, limit} (writes nothing),
-- and apply_changes(c, documents, versions, counters) (no return value).
local function read_changes(at)
  local c = {
    n_expect = tonumber(ARGV[at]), n_put = tonumber(ARGV[at + 1]),
    n_delete = tonumber(ARGV[at + 2]), n_quota = tonumber(ARGV[at + 3]),
  }
  c.expect_at = at + 4
  c.puts_at = c.expect_at + 2 * c.n_expect
  c.deletes_at = c.puts_at + 2 * c.n_put
  c.quotas_at = c.deletes_at + c.n_delete
  c.next = c.quotas_at + 3 * c.n_quota
  return c
end

local function check_changes(c, versions, counters)
  for e = 0, c.n_expect - 1 do
    local at = c.expect_at + 2 * e
    local current = tonumber(redis.call('HGET', versions, ARGV[at]) or '0')
    if current ~= tonumber(ARGV[at + 1]) then
      return {'conflict', ARGV[at]}
    end
  end
  for q = 0, c.n_quota - 1 do
    local at = c.quotas_at + 3 * q
    local delta, limit = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    local current = tonumber(redis.call('HGET', counters, ARGV[at]) or '0')
    if delta > 0 and current + delta > limit then
      return {'quota', ARGV[at], ARGV[at + 2]}
    end
  end
  return nil
end

local function apply_changes(c, documents, versions, counters)
  local put_fields = {}
  for p = 0, c.n_put - 1 do
    local at = c.puts_at + 2 * p
    redis.call('HSET', documents, ARGV[at], ARGV[at + 1])
    redis.call('HINCRBY', versions, ARGV[at], 1)
    put_fields[ARGV[at]] = true
  end
  for d = 0, c.n_delete - 1 do
    local field = ARGV[c.deletes_at + d]
    if not put_fields[field] then
      redis.call('HDEL', documents, field)
      redis.call('HDEL', versions, field)
    end
  end
  for q = 0, c.n_quota - 1 do
    local at = c.quotas_at + 3 * q
    local current = tonumber(redis.call('HGET', counters, ARGV[at]) or '0')
    if current + tonumber(ARGV[at + 1]) < 0 then
      redis.call('HSET', counters, ARGV[at], '0')
    else
      redis.call('HINCRBY', counters, ARGV[at], ARGV[at + 1])
    end
  end
end
