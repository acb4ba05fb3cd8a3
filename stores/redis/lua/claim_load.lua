-- claim_load.lua: the record of one live idempotency claim (see task_write.lua). Reads only.
-- KEYS[1]  the partition's claims hash      KEYS[2]  its claim expiries zset
-- ARGV[1]  claim field ("scope/key")        ARGV[2]  now (seconds since the epoch)
-- Returns the record JSON, or nil (false) when there is no live claim.
local expires = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not expires or tonumber(expires) <= tonumber(ARGV[2]) then
  return false
end
return redis.call('HGET', KEYS[1], ARGV[1])
