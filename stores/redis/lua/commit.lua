-- commit.lua: apply one scope's change set atomically: drop what lapsed, check versions, check quotas, then
-- write all or nothing. Prepended by changes.lua (state_keys, read_changes, sweep, check_changes,
-- apply_changes).
-- KEYS[1..7] documents, versions, counters, expiries, owners, dependents, holds (see changes.lua)
-- ARGV[1..] the change set (see changes.lua): now, scope, E, P, D, Q, X, then its entries.
-- Returns {"ok", version of each put...}, {"conflict", field} or {"quota", name, limit, frees at}; on anything
-- but "ok" nothing was written but the drop of lapsed documents.
local s = state_keys(1)
local changes = read_changes(1)
sweep(s, changes.now)
local refusal = check_changes(changes, s)
if refusal then
  return refusal
end
local written = apply_changes(changes, s)
return {'ok', unpack(written)}
