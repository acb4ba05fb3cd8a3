-- scope_admit.lua: admit one scope to the scope registry (stores/scopes.py) in one atomic step: renew its
-- lease, register it while there is room, or reclaim an idle scope's place for it.
-- KEYS[1]  registry sorted set: scope -> lease (seconds since the epoch)
-- KEYS[2]  the operators' registry set of scopes (stores/keys.py registry): a reclaimed scope leaves it
-- KEYS[3..] only with a victim: every fixed key of the victim's partition (stores/keys.py partition_keys)
-- ARGV[1]  the scope, ARGV[2] now, ARGV[3] idle cutoff (now - idle seconds), ARGV[4] max scopes,
-- ARGV[5]  the victim scope, or '' (none)
-- Returns {'ok'}, {'reclaimed', victim} (the victim's keys were deleted and the scope took its place), or
-- {'full', oldest scope, its lease} (nothing was changed).
local scope, now, cutoff, max_scopes, victim = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
if redis.call('ZSCORE', KEYS[1], scope) or redis.call('ZCARD', KEYS[1]) < max_scopes then
  redis.call('ZADD', KEYS[1], now, scope)
  return {'ok'}
end
if victim ~= '' then
  local lease = redis.call('ZSCORE', KEYS[1], victim)
  if lease and tonumber(lease) <= cutoff then
    for i = 3, #KEYS do
      redis.call('DEL', KEYS[i])
    end
    redis.call('SREM', KEYS[2], victim)
    redis.call('ZREM', KEYS[1], victim)
    redis.call('ZADD', KEYS[1], now, scope)
    return {'reclaimed', victim}
  end
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {'full', oldest[1], oldest[2]}
