-- task_write.lua: shared prelude (after expire_paused.lua), prepended to task_save.lua and commit_task.lua:
-- one task save, read from ARGV, checked, then applied, so a script can check everything before writing.
-- Uses the including script's KEYS[1..7] (see expire_paused.lua); the event stream's key and the two claim
-- keys (the claims hash: "scope/key" -> record JSON, and the claim expiries zset) are passed in.
-- Task save in ARGV from position `at` (offsets from `at`):
--   +0  task field ("scope/id")           +1  task JSON (its byte length is its size)
--   +2  listing info JSON                 +3  retention: "active", "terminal" or "paused"
--   +4  now (last-update score)           +5  expiry cutoff (now - paused TTL)
--   +6  max tasks                         +7  max total bytes
--   +8  max bytes per task                +9  stream MAXLEN (approximate)
--   +10 stream TTL in milliseconds        +11 expected version: "" = unconditional,
--                                                "0" = must not exist, n = stored version must be n
--   +12 first event number ("" = after the log's newest; see stores.base.TaskStore, "Event log")
--   +13 claim field ("" = no idempotency key claimed)
--   +14 claim record JSON                 +15 claim expiry time
--   +16 max live claims per partition
--   +17 .. #ARGV  event JSONs to append, in order
-- Defines read_task_write(at, claims, claim_expiries) -> task save table, check_task_write(w) -> {refusal =
-- {"too_large"} | {"task_conflict", current version} | {"claimed", record} | {"claims_full"} | {"full"}}
-- or {plan} (writes nothing), and
-- apply_task_write(w, plan, stream) -> sequence, new version.
local function read_task_write(at, claims, claim_expiries)
  return {
    field = ARGV[at], body = ARGV[at + 1], info = ARGV[at + 2], retention = ARGV[at + 3],
    now = ARGV[at + 4], cutoff = ARGV[at + 5], max_tasks = tonumber(ARGV[at + 6]),
    max_bytes = tonumber(ARGV[at + 7]), max_task_bytes = tonumber(ARGV[at + 8]),
    stream_maxlen = ARGV[at + 9], stream_ttl = ARGV[at + 10], expect = ARGV[at + 11],
    first_event = ARGV[at + 12], claim = ARGV[at + 13], claim_record = ARGV[at + 14],
    claim_expires = ARGV[at + 15], max_claims = tonumber(ARGV[at + 16]),
    claims = claims, claim_expiries = claim_expiries,
    events_at = at + 17,
  }
end

-- An idempotency claim is live while its expiry lies after now; lapsed ones count for nothing.
local function check_claim(w)
  local expires = redis.call('ZSCORE', w.claim_expiries, w.claim)
  if expires and tonumber(expires) > tonumber(w.now) then
    return {'claimed', redis.call('HGET', w.claims, w.claim)}
  end
  local live = redis.call('HLEN', w.claims) - redis.call('ZCOUNT', w.claim_expiries, '-inf', w.now)
  if live >= w.max_claims then
    return {'claims_full'}
  end
  return nil
end

local function check_task_write(w)
  local field, size = w.field, string.len(w.body)
  if size > w.max_task_bytes then
    return {refusal = {'too_large'}}
  end

  -- Optimistic concurrency: checked after expiry, so a task that expired meanwhile is at version 0.
  if w.expect ~= '' then
    local current = version_of(field)
    if current ~= tonumber(w.expect) then
      return {refusal = {'task_conflict', current}}
    end
  end

  if w.claim ~= '' then
    local refusal = check_claim(w)
    if refusal then
      return {refusal = refusal}
    end
  end

  -- One read of the stats, written back once when the save is applied (apply_task_write).
  local previous = redis.call('HSTRLEN', KEYS[1], field)  -- 0: no such task (a task JSON is never empty)
  local exists = previous > 0
  local stats = redis.call('HMGET', KEYS[6], 'count', 'bytes', 'next_seq', 'next_ver')
  local count = tonumber(stats[1] or '0') + (exists and 0 or 1)
  local bytes = tonumber(stats[2] or '0') - previous + size

  -- Plan the eviction (oldest last update first, never this task, never an active one); it is committed
  -- only together with the save, once the task is shown to fit. Candidates come in small pages: at
  -- capacity a save usually needs one victim, not the whole set. An entry whose task is gone (size 0) frees
  -- nothing, but is cleaned up with the victims.
  local victims = {}
  local offset, page = 0, 16
  while count > w.max_tasks or bytes > w.max_bytes do
    local batch = redis.call('ZRANGE', KEYS[4], offset, offset + page - 1)
    if #batch == 0 then
      return {refusal = {'full'}}
    end
    for _, candidate in ipairs(batch) do
      if candidate ~= field then
        table.insert(victims, candidate)
        local freed = redis.call('HSTRLEN', KEYS[1], candidate)
        if freed > 0 then
          count = count - 1
          bytes = bytes - freed
        end
        if count <= w.max_tasks and bytes <= w.max_bytes then break end
      end
    end
    offset = offset + page
  end
  return {plan = {
    exists = exists, victims = victims, count = count, bytes = bytes,
    next_seq = tonumber(stats[3] or '0'), next_ver = tonumber(stats[4] or '0'),
  }}
end

-- The evictable set is scored by the version of each task's last save: the partition's commit order, so
-- "oldest last update first" is exact across hosts and clocks, and scores are integers, which a small sorted
-- set (a listpack) compares as integers; scored by time they were parsed as decimals on every comparison,
-- most of a save's sorted-set cost. Entries scored by time (stored before, or by a worker of the earlier
-- release during a rolling upgrade) lie above every version: they are rescored, keeping their order, below
-- every version to come.
local function order_by_version(version)
  local top = redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')
  if #top == 0 or tonumber(top[2]) <= version then return end
  local fields = redis.call('ZRANGE', KEYS[4], 0, -1)
  for i, candidate in ipairs(fields) do
    redis.call('ZADD', KEYS[4], i - #fields - 1, candidate)
  end
end

local function apply_task_write(w, plan, stream)
  local field = w.field
  for _, victim in ipairs(plan.victims) do
    drop_task(victim)
  end

  local sequence, next_seq = nil, plan.next_seq
  if plan.exists then
    sequence = redis.call('HGET', KEYS[3], field)
  else
    next_seq = next_seq + 1
    sequence = next_seq
    redis.call('HSET', KEYS[3], field, sequence)
    redis.call('DEL', stream)  -- a reused id starts a fresh log
  end
  local version = plan.next_ver + 1  -- per partition: never reused for an id
  -- The stats as planned (the count and bytes after the evictions and this save) and the two counters, in
  -- one write: the values their increments would give.
  redis.call('HSET', KEYS[6], 'count', plan.count, 'bytes', plan.bytes,
    'next_seq', next_seq, 'next_ver', version)
  redis.call('HSET', KEYS[1], field, w.body)
  redis.call('HSET', KEYS[2], field, w.info)
  redis.call('HSET', KEYS[7], field, version)

  -- A task that was not there is in neither set: every removal takes it out of both (drop_task, reset.lua).
  if plan.exists then
    redis.call('ZREM', KEYS[4], field)
    redis.call('ZREM', KEYS[5], field)
  end
  if w.retention ~= 'active' then
    order_by_version(version)
    redis.call('ZADD', KEYS[4], version, field)
  end
  if w.retention == 'paused' then
    redis.call('ZADD', KEYS[5], w.now, field)
  end

  if w.claim ~= '' then  -- drop the lapsed claims (O(lapsed)), then record this one
    for _, lapsed in ipairs(redis.call('ZRANGEBYSCORE', w.claim_expiries, '-inf', w.now)) do
      redis.call('HDEL', w.claims, lapsed)
    end
    redis.call('ZREMRANGEBYSCORE', w.claim_expiries, '-inf', w.now)
    redis.call('HSET', w.claims, w.claim, w.claim_record)
    redis.call('ZADD', w.claim_expiries, w.claim_expires, w.claim)
  end

  if #ARGV >= w.events_at then
    -- Entry ids are the events' numbers ("n-0"), so a reader resumes after a number with XREAD.
    local newest = 0
    local top = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
    if #top > 0 then newest = tonumber(string.match(top[1][1], '^(%d+)')) end
    local first = newest + 1
    if w.first_event ~= '' then first = tonumber(w.first_event) end
    if first <= newest then
      redis.call('DEL', stream)  -- a log of an earlier numbering restarts (XADD needs growing ids)
    end
    for i = w.events_at, #ARGV do
      local id = string.format('%d-0', first + i - w.events_at)
      redis.call('XADD', stream, 'MAXLEN', '~', w.stream_maxlen, id, 'e', ARGV[i])
    end
    redis.call('PEXPIRE', stream, w.stream_ttl)
  end
  return tonumber(sequence), version
end
