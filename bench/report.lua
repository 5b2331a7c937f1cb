-- wrk hooks: an optional POST body from WRK_BODY, and a one-line JSON summary at the end.
local body = os.getenv("WRK_BODY")
if body and #body > 0 then
  wrk.method = "POST"
  wrk.body = body
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"socket_errors":%d,"non_2xx":%d,"p50_us":%d,"p99_us":%d,"bytes":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99), summary.bytes))
end
