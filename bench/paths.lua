-- wrk hooks: GET the comma-separated paths of WRK_PATHS (or the lines of the file WRK_PATHS_FILE,
-- for a stream too long for the environment) in turn, each thread from its own offset (the second
-- of two from the middle), and a one-line JSON summary at the end (as report.lua). With
-- WRK_DELAY_MS, each connection waits that long after an answer before its next request (a paced
-- load below what the machine can serve, so the latency is the server's, not the wait of four busy
-- threads for two cores).
--
-- Each thread formats all its requests in init, before the timed run, and `request` hands them
-- out as they are: a request that made a new string left garbage, and LuaJIT's collector, marking
-- and sweeping a stream of 100,000 paths, stopped the thread for 20-30 ms at a time, while the
-- answers of its connections waited unread and counted as the server's latency (wrk's maximum
-- 24-30 ms against 5-10 ms with nothing allocated, same server, same stream).
local paths = {}
local file = os.getenv("WRK_PATHS_FILE")
if file then
  for line in io.lines(file) do
    if #line > 0 then table.insert(paths, line) end
  end
else
  for p in string.gmatch(os.getenv("WRK_PATHS") or "/", "[^,]+") do
    table.insert(paths, p)
  end
end
local threads = 0
local formatted = {}
local next_request = 0

-- `thread:set` sets a global of the thread's own Lua state, read in `init`.
setup = function(thread)
  threads = threads + 1
  thread:set("offset", (threads - 1) * math.floor(#paths / 2))
end

init = function(args)
  for k, p in ipairs(paths) do
    formatted[k] = wrk.format("GET", p)
  end
  paths = nil
  next_request = offset or 0
  collectgarbage("collect")
end

local pause = tonumber(os.getenv("WRK_DELAY_MS") or "")
if pause then
  delay = function()
    return pause
  end
end

request = function()
  next_request = next_request + 1
  return formatted[(next_request - 1) % #formatted + 1]
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"socket_errors":%d,"non_2xx":%d,"p50_us":%d,"p99_us":%d,"bytes":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), summary.bytes))
end
