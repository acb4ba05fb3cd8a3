-- changes.lua: shared prelude, prepended to commit.lua, commit_task.lua, usage.lua and reset.lua: one scope's
-- retention (lazy expiry) and change set. The functions take a table of the scope's key names
-- (state_keys(at): KEYS[at..at+6]), because commit.lua passes its KEYS[1..7] and commit_task.lua its KEYS[9..15]:
--   documents hash:   field "kind/id" -> document JSON
--   versions hash:    field "kind/id" -> integer version; "#floor" -> the highest version any document that
--                     went away had (a new document starts above it, so no version is ever reused)
--   counters hash:    quota name -> integer (never below 0)
--   expiries zset:    field -> expiry time (seconds since the epoch) of documents with an expiry of their own
--   owners hash:      field -> owner field, of documents that lapse with another one
--   dependents zset:  members "owner|field" (all scored 0, ranged by lex; '|' and '}' never occur in a field)
--   holds hash:       field -> JSON {quota name: amount} the document accounts for (given back when it lapses)
-- Change set in ARGV from position `at`: now, scope, E, P, D, Q, X (numbers of expected versions, puts, deletes,
-- quotas, extensions), then E pairs (field, expected version), P quintuples (field, JSON, expiry time or "",
-- owner field or "", holds JSON or ""), D fields, Q triples (name, delta, limit), X pairs (field, time); a
-- positive delta must keep counter + delta <= limit.
-- Defines state_keys(at), read_changes(at) -> change set table (its `next` is the first ARGV position after
-- it), sweep(s, now) (drops what lapsed by now), frees_at(s, name), check_changes(c, s) -> nil,
-- {"conflict", field} or {"quota", name, limit, frees at or ""} (writes nothing), and apply_changes(c, s) ->
-- the new versions of the puts, in order.
local FLOOR = '#floor'

local function state_keys(at)
  return {
    documents = KEYS[at], versions = KEYS[at + 1], counters = KEYS[at + 2], expiries = KEYS[at + 3],
    owners = KEYS[at + 4], dependents = KEYS[at + 5], holds = KEYS[at + 6],
  }
end

local function read_changes(at)
  local c = {
    now = ARGV[at], scope = ARGV[at + 1],
    n_expect = tonumber(ARGV[at + 2]), n_put = tonumber(ARGV[at + 3]), n_delete = tonumber(ARGV[at + 4]),
    n_quota = tonumber(ARGV[at + 5]), n_extend = tonumber(ARGV[at + 6]),
  }
  c.expect_at = at + 7
  c.puts_at = c.expect_at + 2 * c.n_expect
  c.deletes_at = c.puts_at + 5 * c.n_put
  c.quotas_at = c.deletes_at + c.n_delete
  c.extends_at = c.quotas_at + 3 * c.n_quota
  c.next = c.extends_at + 2 * c.n_extend
  c.checked = {}  -- field -> the version check_changes found it at, for the fields the change set expects
  return c
end

local function add(counters, name, delta)
  if redis.call('HINCRBY', counters, name, delta) < 0 then  -- one command, and a second only to floor it
    redis.call('HSET', counters, name, '0')
  end
end

-- The lex range of the dependents members of one owner.
local function owned_range(field)
  return '[' .. field .. '|', '(' .. field .. '}'
end

-- Forget a document's own lease (expiry, owner link, holds); what it owns stays owned by it.
local function unlink(s, field)
  redis.call('ZREM', s.expiries, field)
  local owner = redis.call('HGET', s.owners, field)
  if owner then
    redis.call('ZREM', s.dependents, owner .. '|' .. field)
    redis.call('HDEL', s.owners, field)
  end
  redis.call('HDEL', s.holds, field)
end

-- Remove a document and its version, keeping the floor above that version.
local function drop(s, field)
  local version = redis.call('HGET', s.versions, field)
  if version and tonumber(version) > tonumber(redis.call('HGET', s.versions, FLOOR) or '0') then
    redis.call('HSET', s.versions, FLOOR, version)
  end
  redis.call('HDEL', s.documents, field)
  redis.call('HDEL', s.versions, field)
end

local lapse

-- Everything `field` owns lapses with it.
local function lapse_owned(s, field)
  local low, high = owned_range(field)
  local owned = redis.call('ZRANGEBYLEX', s.dependents, low, high)
  for _, member in ipairs(owned) do
    lapse(s, string.sub(member, #field + 2))
  end
  if #owned > 0 then
    redis.call('ZREMRANGEBYLEX', s.dependents, low, high)
  end
end

-- A lapse gives back what the document held, then drops it with everything it owns.
lapse = function(s, field)
  local held = redis.call('HGET', s.holds, field)
  if held then
    for name, amount in pairs(cjson.decode(held)) do
      add(s.counters, name, -amount)
    end
  end
  drop(s, field)
  unlink(s, field)
  lapse_owned(s, field)
end

-- Lazy expiry: O(documents that lapsed), found through the sorted set.
local function sweep(s, now)
  for _, field in ipairs(redis.call('ZRANGEBYSCORE', s.expiries, '-inf', now)) do
    lapse(s, field)
  end
end

local function holds_some(s, field, name)
  local held = redis.call('HGET', s.holds, field)
  if held and (tonumber(cjson.decode(held)[name]) or 0) > 0 then
    return true
  end
  local low, high = owned_range(field)
  for _, member in ipairs(redis.call('ZRANGEBYLEX', s.dependents, low, high)) do
    if holds_some(s, string.sub(member, #field + 2), name) then
      return true
    end
  end
  return false
end

-- When the first document holding some of counter `name` (itself, or through what it owns) lapses; "" when
-- none does. Walks expiries in order, in pages: only refusals and usage reports ask.
local function frees_at(s, name)
  local offset, page = 0, 64
  while true do
    local batch = redis.call('ZRANGE', s.expiries, offset, offset + page - 1, 'WITHSCORES')
    if #batch == 0 then
      return ''
    end
    for i = 1, #batch, 2 do
      if holds_some(s, batch[i], name) then
        return batch[i + 1]
      end
    end
    offset = offset + page
  end
end

local function check_changes(c, s)
  for e = 0, c.n_expect - 1 do
    local at = c.expect_at + 2 * e
    local current = tonumber(redis.call('HGET', s.versions, ARGV[at]) or '0')
    if current ~= tonumber(ARGV[at + 1]) then
      return {'conflict', ARGV[at]}
    end
    c.checked[ARGV[at]] = current
  end
  for q = 0, c.n_quota - 1 do
    local at = c.quotas_at + 3 * q
    local delta, limit = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
    local current = tonumber(redis.call('HGET', s.counters, ARGV[at]) or '0')
    if delta > 0 and current + delta > limit then
      return {'quota', ARGV[at], ARGV[at + 2], frees_at(s, ARGV[at])}
    end
  end
  return nil
end

local function apply_changes(c, s)
  local put_fields, written = {}, {}
  for p = 0, c.n_put - 1 do
    local at = c.puts_at + 5 * p
    local field = ARGV[at]
    redis.call('HSET', s.documents, field, ARGV[at + 1])
    local version
    local checked = c.checked[field]  -- nil: not expected, so not known to be there or not
    if checked ~= 0 and (checked or redis.call('HEXISTS', s.versions, field) == 1) then
      version = redis.call('HINCRBY', s.versions, field, 1)
    else
      version = tonumber(redis.call('HGET', s.versions, FLOOR) or '0') + 1
      redis.call('HSET', s.versions, field, version)
    end
    written[#written + 1] = version
    -- A put replaces the lease whole. A document found absent has none: every removal unlinks (drop, lapse).
    if checked ~= 0 then
      unlink(s, field)
    end
    if ARGV[at + 2] ~= '' then
      redis.call('ZADD', s.expiries, ARGV[at + 2], field)
    end
    if ARGV[at + 3] ~= '' then
      redis.call('HSET', s.owners, field, ARGV[at + 3])
      redis.call('ZADD', s.dependents, 0, ARGV[at + 3] .. '|' .. field)
    end
    if ARGV[at + 4] ~= '' then
      redis.call('HSET', s.holds, field, ARGV[at + 4])
    end
    put_fields[field] = true
  end
  for d = 0, c.n_delete - 1 do
    local field = ARGV[c.deletes_at + d]
    if not put_fields[field] then
      drop(s, field)
      unlink(s, field)
      lapse_owned(s, field)
    end
  end
  for q = 0, c.n_quota - 1 do
    local at = c.quotas_at + 3 * q
    add(s.counters, ARGV[at], tonumber(ARGV[at + 1]))
  end
  for x = 0, c.n_extend - 1 do
    local at = c.extends_at + 2 * x
    redis.call('ZADD', s.expiries, 'XX', 'GT', ARGV[at + 1], ARGV[at])  -- only a later expiry of a lease
  end
  return written
end
