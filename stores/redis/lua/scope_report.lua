-- scope_report.lua: shared prelude (after changes.lua), prepended to usage.lua and reset.lua.
-- Defines report(s, stats) -> {documents, document bytes, tasks, task bytes, then per non-zero counter: name,
-- value, frees at (see frees_at in changes.lua) ...}, for the state keys `s` (see state_keys) and the
-- partition's task stats hash `stats` (see expire_paused.lua): the including script's KEYS[1..7] and KEYS[8]
-- or KEYS[13]; no ARGV of its own. Writes nothing.
local function report(s, stats)
  local documents = redis.call('HLEN', s.documents)
  local bytes = 0
  for _, field in ipairs(redis.call('HKEYS', s.documents)) do
    bytes = bytes + redis.call('HSTRLEN', s.documents, field)
  end
  local out = {
    documents, bytes,
    tonumber(redis.call('HGET', stats, 'count') or '0'), tonumber(redis.call('HGET', stats, 'bytes') or '0'),
  }
  local counters = redis.call('HGETALL', s.counters)
  for i = 1, #counters, 2 do
    if tonumber(counters[i + 1]) > 0 then
      out[#out + 1] = counters[i]
      out[#out + 1] = counters[i + 1]
      out[#out + 1] = frees_at(s, counters[i])
    end
  end
  return out
end
