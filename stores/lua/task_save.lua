-- task_save.lua: insert or replace one task, evicting to fit, and append its events, all or nothing.
-- Prepended by expire_paused.lua and task_write.lua (read_task_write, check_task_write, apply_task_write).
-- KEYS[1..7] data, info, seq, evictable, paused, stats, version of the task's partition (see expire_paused.lua)
-- KEYS[8]  the task's event stream
-- KEYS[9]  the registry set of scopes (see changes.lua)
-- KEYS[10] KEYS[11] the partition's idempotency claims hash and claim expiries zset (see task_write.lua)
-- ARGV[1]  the partition, registered in KEYS[9] on success
-- ARGV[2..18] the task save, ARGV[19..] its events (see task_write.lua: ARGV[2] task field, ARGV[3] task
--          JSON, ..., ARGV[7] expiry cutoff, ..., ARGV[13] expected version, ...)
-- Returns {"ok", sequence, new version}, {"too_large"}, {"task_conflict", current version},
-- {"claimed", record}, {"claims_full"} or {"full"}; on anything but "ok" no task was changed (only
-- already-expired paused tasks may have been dropped).
local write = read_task_write(2, KEYS[10], KEYS[11])
expire_paused(write.cutoff)
local checked = check_task_write(write)
if checked.refusal then
  return checked.refusal
end
local sequence, version = apply_task_write(write, checked.plan, KEYS[8])
redis.call('SADD', KEYS[9], ARGV[1])
return {'ok', sequence, version}
