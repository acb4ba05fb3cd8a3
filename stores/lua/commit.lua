-- commit.lua: apply one scope's change set atomically: check versions, check quotas, then write all or nothing.
-- Prepended by changes.lua (read_changes, check_changes, apply_changes).
-- KEYS[1]  documents hash: field "kind/id" -> document JSON
-- KEYS[2]  versions hash:  field "kind/id" -> integer version (absent = 0)
-- KEYS[3]  counters hash:  quota name -> integer (never below 0)
-- ARGV[1..] the change set (see changes.lua): E, P, D, Q, then E pairs (field, expected version),
--           P pairs (field, JSON), D fields, Q triples (name, delta, limit).
-- Returns {"ok"}, {"conflict", field} or {"quota", name, limit}; on anything but "ok" nothing was written.
local changes = read_changes(1)
local refusal = check_changes(changes, KEYS[2], KEYS[3])
if refusal then
  return refusal
end
apply_changes(changes, KEYS[1], KEYS[2], KEYS[3])
return {'ok'}
