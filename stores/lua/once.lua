-- once.lua: runs a write script at most once per call (stores/redis_connection.py, once=True).
-- KEYS[#KEYS-1], KEYS[#KEYS] appended by the caller: the operations hash (operation id -> recorded reply) and
--          sorted set (operation id -> when recorded, ms) of the script's KEYS[1] (stores/keys.py
--          operations: in its slot), taken off KEYS before the script runs, so the script sees its own KEYS.
-- ARGV[#ARGV] appended by the caller: the call's operation id, unique to the call, taken off ARGV likewise.
-- Defines once(run) -> run()'s reply, or the reply a first run of this call recorded.
-- The first run records its reply for OPERATION_TTL_MS; a repeat of the same call (a client retry after a
-- timeout or a lost reply, by us or by the cluster client) answers that reply and writes nothing, so no write
-- (an event append, a quota delta, a version bump) is ever applied twice. Replies are tables of strings and
-- integers (every write script's are), which cjson keeps as they are. A refusal (a reply starting with one of
-- REFUSALS) wrote nothing, so it is not recorded: its repeat simply runs again. Each run forgets a few
-- records older than the TTL, so the two keys hold about the calls of the last OPERATION_TTL_MS.
local OPERATION_TTL_MS = 120000  -- longer than any call's retries take (docs/cluster.md)
local FORGET = 8  -- expired records dropped per run: more than the one each run adds
local REFUSALS = {
  conflict = true, quota = true, too_large = true, task_conflict = true, full = true, again = true,
  claimed = true, claims_full = true,
}

local function once(run)
  local recorded_at = table.remove(KEYS)
  local recorded = table.remove(KEYS)
  local operation = table.remove(ARGV)
  local done = redis.call('HGET', recorded, operation)
  if done then
    return cjson.decode(done)
  end
  local reply = run()
  if type(reply) == 'table' and REFUSALS[reply[1]] then
    return reply
  end
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local expired = redis.call('ZRANGEBYSCORE', recorded_at, '-inf', now - OPERATION_TTL_MS, 'LIMIT', 0, FORGET)
  if #expired > 0 then
    redis.call('HDEL', recorded, unpack(expired))
    redis.call('ZREM', recorded_at, unpack(expired))
  end
  redis.call('HSET', recorded, operation, cjson.encode(reply))
  redis.call('ZADD', recorded_at, now, operation)
  return reply
end
