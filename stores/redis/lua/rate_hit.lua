-- rate_hit.lua: count one request in each of an identity's fixed rate-limit windows (stores/rate_counters.py).
-- KEYS[1], KEYS[2], ...  one counter per window of the request's limits (any number of them)
-- ARGV[1], ARGV[2], ...  the length of the window of the same KEYS index, in seconds
-- Returns {count1, ttl_ms1, count2, ttl_ms2, ...}: the window's count with this request, and the time until it
-- ends. A window starts with its first request: that INCR sets its expiry. A counter that lost its expiry
-- (never, unless written by hand) gets one, so no counter outlives its window for good.
local out = {}
for i, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  local ttl = redis.call('PTTL', key)
  if count == 1 or ttl < 0 then
    ttl = tonumber(ARGV[i]) * 1000
    redis.call('PEXPIRE', key, ttl)
  end
  out[#out + 1] = count
  out[#out + 1] = ttl
end
return out
