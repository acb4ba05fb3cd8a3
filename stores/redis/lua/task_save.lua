-- task_save.lua: insert or replace one task, evicting to fit, and append its events, all or nothing.
-- Prepended by expire_paused.lua and task_write.lua (read_task_write, check_task_write, apply_task_write).
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version of the task's partition (see expire_paused.lua)
-- KEYS[8]  the task's event stream
-- KEYS[9] KEYS[10] the partition's idempotency claims hash and claim expiries zset (see task_write.lua)
-- ARGV[1..17] the task save, ARGV[18..] its events (see task_write.lua: ARGV[1] task field, ARGV[2] task
--          JSON, ..., ARGV[6] expiry cutoff, ..., ARGV[12] expected version, ...)
-- Returns {"ok", sequence, new version}, {"too_large"}, {"task_conflict", current version},
-- {"claimed", record}, {"claims_full"} or {"full"}; on anything but "ok" no task was changed (only
-- already-expired paused tasks may have been dropped).
local write = read_task_write(1, KEYS[9], KEYS[10])
expire_paused(write.cutoff)
local checked = check_task_write(write)
if checked.refusal then
  return checked.refusal
end
local sequence, version = apply_task_write(write, checked.plan, KEYS[8])
return {'ok', sequence, version}
