-- once.lua: runs a write script at most once per call (stores/redis/connection.py, once=True).
-- KEYS[#KEYS] appended by the caller: the call's operation key (stores/redis/keys.py operation: named after the
--          script's KEYS[1] and an operation id unique to the call, so in its slot), taken off KEYS before the
--          script runs, so the script sees its own KEYS; no ARGV of its own (the script's are all its own).
-- Defines once(run) -> run()'s reply, or the reply a first run of this call recorded.
-- The first run records its reply under the operation key for OPERATION_TTL_MS; a repeat of the same call (a
-- client retry after a timeout or a lost reply, by us or by the cluster client) answers that reply and writes
-- nothing, so no write (an event append, a quota delta, a version bump) is ever applied twice. Replies are
-- tables of strings and integers (every write script's are), which cjson keeps as they are. A refusal (a reply
-- starting with one of REFUSALS) wrote nothing, so it is not recorded: its repeat simply runs again. Redis
-- drops each record when its time is up, so the records are those of the calls of the last OPERATION_TTL_MS.
local OPERATION_TTL_MS = 120000  -- longer than any call's retries take (docs/cluster.md)
local REFUSALS = {
  conflict = true, quota = true, too_large = true, task_conflict = true, full = true, again = true,
  claimed = true, claims_full = true,
}

local function once(run)
  local operation = table.remove(KEYS)
  local done = redis.call('GET', operation)
  if done then
    return cjson.decode(done)
  end
  local reply = run()
  if type(reply) == 'table' and REFUSALS[reply[1]] then
    return reply
  end
  redis.call('SET', operation, cjson.encode(reply), 'PX', OPERATION_TTL_MS)
  return reply
end
