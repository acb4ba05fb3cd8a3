-- usage.lua: drop what lapsed in one scope, then report what it holds (see scope_report.lua).
-- Prepended by changes.lua and scope_report.lua.
-- KEYS[1..7] documents, versions, counters, expiries, owners, dependents, holds (see changes.lua)
-- KEYS[8]  the partition's task stats hash (see expire_paused.lua)
-- ARGV[1]  now (seconds since the epoch)
-- Returns the report (see scope_report.lua).
local s = state_keys(1)
sweep(s, ARGV[1])
return report(s, KEYS[8])
