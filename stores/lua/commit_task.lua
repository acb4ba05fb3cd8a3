-- commit_task.lua: one scope's change set and one task save of the same partition, all or nothing: every
-- check of both halves runs before anything is written. Runs in one cluster slot because a partition's task
-- keys carry its state scope's hash tag (stores/keys.py).
-- Prepended by expire_paused.lua, task_write.lua and changes.lua.
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version of the partition (see expire_paused.lua)
-- KEYS[8]  the task's event stream
-- KEYS[9]  documents hash, KEYS[10] versions hash, KEYS[11] counters hash of the scope (see changes.lua)
-- ARGV[1..] the change set (see changes.lua: E, P, D, Q, then its entries), directly followed by the task
--          save (12 values) and its events (see task_write.lua).
-- Returns {"ok", sequence, new task version}, or a refusal in this order of checks: {"conflict", field},
-- {"quota", name, limit}, {"too_large"}, {"task_conflict", current version}, {"full"}. On a refusal neither
-- documents nor tasks were changed (as in task_save.lua, already-expired paused tasks may have been dropped).
local changes = read_changes(1)
local write = read_task_write(changes.next)
expire_paused(write.cutoff)
local refusal = check_changes(changes, KEYS[10], KEYS[11])
if refusal then
  return refusal
end
local checked = check_task_write(write)
if checked.refusal then
  return checked.refusal
end
apply_changes(changes, KEYS[9], KEYS[10], KEYS[11])
local sequence, version = apply_task_write(write, checked.plan, KEYS[8])
return {'ok', sequence, version}
