-- usage.lua: drop what lapsed in one scope, then report what it holds (see scope_report.lua). A scope that
-- holds nothing leaves the registry (it joins again with its next commit).
-- Prepended by changes.lua and scope_report.lua.
-- KEYS[1..8] documents, versions, counters, expiries, owners, dependents, holds, registry (see changes.lua)
-- KEYS[9]  the partition's task stats hash (see expire_paused.lua)
-- ARGV[1]  now (seconds since the epoch), ARGV[2] the scope (its registry member)
-- Returns the report (see scope_report.lua).
local s = state_keys(1)
sweep(s, ARGV[1])
local out = report(s, KEYS[9])
if out[1] == 0 and out[3] == 0 and #out == 4 then
  redis.call('SREM', s.registry, ARGV[2])
end
return out
