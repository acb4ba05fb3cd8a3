-- scope_reclaimed.lua: finish a reclaim (stores/redis/scopes.py) once the claimed scope's keys are deleted:
-- take it out of the registry if the claim is still the caller's, then register the new scope if there is
-- room. Touches the registry only.
-- KEYS[1]  registry sorted set (see scope_admit.lua)
-- ARGV[1]  the claimed scope, ARGV[2] the claim's score (scope_admit.lua's reply), ARGV[3] the new scope
--          ('' for none), ARGV[4] now, ARGV[5] max scopes
-- Returns {'ok'} (the new scope is registered, or none was asked for) or {'full'}.
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[1], ARGV[1])
end
if ARGV[3] == '' then
  return {'ok'}
end
if redis.call('ZSCORE', KEYS[1], ARGV[3]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[5]) then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
  return {'ok'}
end
return {'full'}
