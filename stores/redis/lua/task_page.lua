-- task_page.lua: read a ListTasks page's tasks with their listing info, all at one instant. Reads only, so it
-- also runs on a replica or a full server.
-- KEYS[1..3] data, info, seq of the partition (see expire_paused.lua)
-- ARGV[1..] task fields ("scope/id") of the page, in the order selected
-- Returns {body1, info1, seq1, body2, info2, seq2, ...}, each false when the task is gone.
local result = {}
for i = 1, #ARGV do
  table.insert(result, redis.call('HGET', KEYS[1], ARGV[i]))
  table.insert(result, redis.call('HGET', KEYS[2], ARGV[i]))
  table.insert(result, redis.call('HGET', KEYS[3], ARGV[i]))
end
return result
