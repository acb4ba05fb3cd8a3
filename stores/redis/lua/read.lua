-- read.lua: read documents of one scope with their versions, as absent when they lapsed. Writes nothing.
-- KEYS[1] documents hash, KEYS[2] versions hash, KEYS[3] expiries zset, KEYS[4] owners hash (see changes.lua)
-- ARGV[1] now (seconds since the epoch), ARGV[2..] fields "kind/id"
-- Returns {JSON, version, JSON, version, ...} in ARGV order, nil for both of an absent or lapsed document:
-- one whose expiry is at or before now, or whose owner is absent or lapsed.
local now = tonumber(ARGV[1])

local function alive(field)
  local at = redis.call('ZSCORE', KEYS[3], field)
  if at then
    return tonumber(at) > now
  end
  local owner = redis.call('HGET', KEYS[4], field)
  if owner then
    return redis.call('HEXISTS', KEYS[1], owner) == 1 and alive(owner)
  end
  return true
end

local out = {}
for i = 2, #ARGV do
  local field = ARGV[i]
  local document = redis.call('HGET', KEYS[1], field)
  if document and alive(field) then
    out[#out + 1] = document
    out[#out + 1] = redis.call('HGET', KEYS[2], field)
  else
    out[#out + 1] = false
    out[#out + 1] = false
  end
end
return out
