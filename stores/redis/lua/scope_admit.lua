-- scope_admit.lua: admit one scope to the scope registry (stores/scopes.py) in one atomic step: renew its
-- lease, register it while there is room, or claim an idle scope's place for it. Touches the registry only
-- (its own slot): deleting what a claimed scope held is a step of its own, in that scope's slot, and
-- scope_reclaimed.lua then gives its place away (stores/redis/scopes.py).
-- KEYS[1]  registry sorted set: scope -> lease (seconds since the epoch); a scope being reclaimed is scored
--          minus the end of its claim (negative: older than any lease)
-- ARGV[1]  the scope, ARGV[2] now, ARGV[3] idle cutoff (now - idle seconds), ARGV[4] max scopes,
-- ARGV[5]  the victim scope, or '' (none), ARGV[6] the end of a new claim (now + claim seconds)
-- Returns {'ok'}; {'claimed', victim, claim score}: the victim was idle (or its claim had lapsed) and is now
-- claimed; {'busy', end of claim}: the scope itself is being reclaimed; or {'full', oldest scope, its lease}
-- (for a claimed oldest scope, its lease is its claim's end minus the idle time: when it frees). Only
-- 'ok' and 'claimed' change anything.
local scope, now, cutoff, max_scopes = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local victim, claim_end = ARGV[5], ARGV[6]
local idle = now - cutoff

local lease = redis.call('ZSCORE', KEYS[1], scope)
if lease and tonumber(lease) < 0 then
  if -tonumber(lease) > now then
    return {'busy', tostring(-tonumber(lease))}
  end
  -- A lapsed claim (its reclaimer stopped): this scope may be claimed like any idle one, by itself too.
  victim = scope
elseif lease or redis.call('ZCARD', KEYS[1]) < max_scopes then
  redis.call('ZADD', KEYS[1], ARGV[2], scope)
  return {'ok'}
end
if victim ~= '' then
  local held = redis.call('ZSCORE', KEYS[1], victim)
  if held then
    held = tonumber(held)
    if (held >= 0 and held <= cutoff) or (held < 0 and -held <= now) then
      redis.call('ZADD', KEYS[1], '-' .. claim_end, victim)
      return {'claimed', victim, '-' .. claim_end}
    end
  end
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local oldest_lease = tonumber(oldest[2])
if oldest_lease < 0 then
  oldest_lease = -oldest_lease - idle
end
return {'full', oldest[1], tostring(oldest_lease)}
