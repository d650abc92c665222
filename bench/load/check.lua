-- wrk script for the Tessera bench (bench/load/wrk.ts): sends one fixed request and checks every
-- response. The request and the expectation come from the environment:
--   BENCH_METHOD, BENCH_BODY, BENCH_HEADERS ("Name: value" lines),
--   BENCH_EXPECT_STATUS, BENCH_EXPECT_PREFIX (the body must start with it).
-- done() prints one "BENCH_RESULT {json}" line and one "BENCH_SAMPLE text" line.

local expect_status = tonumber(os.getenv("BENCH_EXPECT_STATUS") or "200")
local expect_prefix = os.getenv("BENCH_EXPECT_PREFIX") or ""
local prefix_length = #expect_prefix

wrk.method = os.getenv("BENCH_METHOD") or "GET"
local body = os.getenv("BENCH_BODY")
if body ~= nil and body ~= "" then wrk.body = body end
for line in string.gmatch(os.getenv("BENCH_HEADERS") or "", "[^\n]+") do
  local name, value = string.match(line, "^([^:]+):%s*(.*)$")
  if name ~= nil then wrk.headers[name] = value end
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
  unexpected = 0
  sample = ""
end

local function remember(status, response_body)
  if sample == "" then
    sample = tostring(status) .. " " .. string.gsub(string.sub(response_body or "", 1, 160), "[\r\n]", " ")
  end
end

function response(status, headers, response_body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    remember(status, response_body)
  elseif status ~= expect_status or string.sub(response_body or "", 1, prefix_length) ~= expect_prefix then
    unexpected = unexpected + 1
    remember(status, response_body)
  end
end

function done(summary, latency, requests)
  local total_non2xx, total_unexpected, first_sample = 0, 0, ""
  for _, thread in ipairs(threads) do
    total_non2xx = total_non2xx + (thread:get("non2xx") or 0)
    total_unexpected = total_unexpected + (thread:get("unexpected") or 0)
    local s = thread:get("sample")
    if first_sample == "" and s ~= nil then first_sample = s end
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f},"non2xx":%d,"unexpected":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    total_non2xx, total_unexpected))
  io.write("BENCH_SAMPLE " .. first_sample .. "\n")
end
