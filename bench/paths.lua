-- wrk hooks: GET the comma-separated paths of WRK_PATHS (or the lines of the file WRK_PATHS_FILE,
-- for a stream too long for the environment) in turn, each thread from its own offset, and a
-- one-line JSON summary at the end (as report.lua).
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
local i = 0

setup = function(thread)
  threads = threads + 1
  thread:set("i", (threads - 1) * math.floor(#paths / 2))
end

request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"socket_errors":%d,"non_2xx":%d,"p50_us":%d,"p99_us":%d,"bytes":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), summary.bytes))
end
