-- commit_task.lua: one scope's change set and one task save of the same partition, all or nothing: every
-- check of both halves runs before anything is written. Runs in one cluster slot because a partition's task
-- keys carry its state scope's hash tag (stores/redis/keys.py).
-- Prepended by expire_paused.lua, task_write.lua and changes.lua.
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version of the partition (see expire_paused.lua)
-- KEYS[8]  the task's event stream
-- KEYS[9..15] documents, versions, counters, expiries, owners, dependents, holds (see changes.lua)
-- KEYS[16] KEYS[17] the partition's idempotency claims hash and claim expiries zset (see task_write.lua)
-- ARGV[1..] the change set (see changes.lua: now, scope, E, P, D, Q, X, then its entries), directly followed
--          by the task save (17 values) and its events (see task_write.lua).
-- Returns {"ok", sequence, new task version, version of each put...}, or a refusal in this order of checks:
-- {"conflict", field}, {"quota", name, limit, frees at}, {"too_large"}, {"task_conflict", current version},
-- {"claimed", record}, {"claims_full"}, {"full"}. On a refusal neither documents nor tasks were changed (as in
-- task_save.lua, already-expired paused tasks may have been dropped, and as in commit.lua, lapsed documents).
local s = state_keys(9)
local changes = read_changes(1)
local write = read_task_write(changes.next, KEYS[16], KEYS[17])
expire_paused(write.cutoff)
sweep(s, changes.now)
local refusal = check_changes(changes, s)
if refusal then
  return refusal
end
local checked = check_task_write(write)
if checked.refusal then
  return checked.refusal
end
local written = apply_changes(changes, s)
local sequence, version = apply_task_write(write, checked.plan, KEYS[8])
return {'ok', sequence, version, unpack(written)}
