-- wrk script of the side-by-side benchmark (bench/peer.py): one JSON-RPC scenario, the same bytes for every
-- server. Settings come from the environment (wrk passes no script arguments to every thread):
--   BENCH_SCENARIO  create | create_new | run | get | list | stream | mix
--   BENCH_TOKEN     bearer token ("" = none);  BENCH_TASK  a task id for GetTask;  BENCH_ARTIFACT  for run
-- Every reply is checked: a non-200 status or a JSON-RPC error counts as an error, and bench/peer.py refuses
-- a run with any. done() prints one JSON line.

local scenario = os.getenv("BENCH_SCENARIO") or "create"
local token = os.getenv("BENCH_TOKEN") or ""
local task_id = os.getenv("BENCH_TASK") or ""
local artifact_id = os.getenv("BENCH_ARTIFACT") or ""
local SQUARES = "[2,3,4] | square | sum | report total"

local threads = {}
local counter = 0
local errors = 0
local first_error = nil
local thread_id = 0

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

local headers = { ["Content-Type"] = "application/json", ["A2A-Version"] = "1.0" }
if token ~= "" then
  headers["Authorization"] = "Bearer " .. token
end

local function rpc(method, params)
  return '{"jsonrpc":"2.0","id":1,"method":"' .. method .. '","params":' .. params .. "}"
end

local function send(method, data)
  counter = counter + 1
  local id = string.format("m-%d-%d-%d", thread_id, counter, math.random(1, 1000000000))
  return rpc(method, '{"message":{"messageId":"' .. id .. '","role":"ROLE_USER","parts":[{"mediaType":'
    .. '"application/json","data":' .. data .. "}]}}")
end

local bodies = {
  create = function() return send("SendMessage", '{"operation":"create","thought":"' .. SQUARES .. '"}') end,
  create_new = function()
    counter = counter + 1
    local thought = string.format("[%d, %d] | sum | report t", thread_id, counter)
    return send("SendMessage", '{"operation":"create","thought":"' .. thought .. '"}')
  end,
  run = function() return send("SendMessage", '{"operation":"run","artifactId":"' .. artifact_id .. '"}') end,
  get = function() return rpc("GetTask", '{"id":"' .. task_id .. '"}') end,
  list = function() return rpc("ListTasks", '{"pageSize":50}') end,
  stream = function()
    return send("SendStreamingMessage", '{"operation":"create","thought":"' .. SQUARES .. '"}')
  end,
}

-- The mix polls the task its thread created last (the primed one until then): a client polls its own
-- tasks, which retention keeps, while a fixed task would be evicted by the mix's own sends.
bodies.mix = function()
  local r = math.random()
  if r < 0.7 then return bodies.get() end
  if r < 0.9 then return bodies.run() end
  return bodies.create()
end

local make = bodies[scenario]

function init(args)
  thread_id = wrk.thread:get("thread_id")
  math.randomseed(os.time() + thread_id * 7919)
end

function request()
  return wrk.format("POST", "/a2a/jsonrpc", headers, make())
end

function response(status, _, body)
  if scenario == "mix" then
    -- Only a send's reply ({"result":{"task":{"id":…), never a GetTask's, which would take the thread back to an
    -- older task its other connections were still polling.
    local created = string.match(string.sub(body, 1, 200), '"result":%s*{%s*"task":%s*{%s*"id":%s*"([^"]+)"')
    if created then task_id = created end
  end
  if status ~= 200 or string.find(string.sub(body, 1, 160), '"error"', 1, true) then
    errors = errors + 1
    if first_error == nil then
      first_error = status .. " " .. string.sub(body, 1, 300)
      wrk.thread:set("first_error", first_error)
    end
    wrk.thread:set("errors", errors)
  end
end

function done(summary, latency, _)
  local bad, sample = 0, ""
  for _, thread in ipairs(threads) do
    bad = bad + (thread:get("errors") or 0)
    sample = thread:get("first_error") or sample
  end
  local socket = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"errors":%d,"socket_errors":%d,"status_errors":%d,'
      .. '"first_error":"%s"}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), bad, socket,
    summary.errors.status, (string.gsub(sample, '[%c"\\]', ' '))))
end
