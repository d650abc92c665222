-- wrk script for the Tessera bench (bench/load/wrk.ts). It sends the run's requests and checks
-- every response.
--
-- BENCH_SPEC names a file written by wrk.ts, one tab-separated line each:
--   kind <name> <weight> <method> <path>     starts a kind of request
--   header <name> <value>                     a header of the last kind
--   body <body>                               its fixed body
--   expect <status> <prefix>                  what its answers look like: status, start of body
--   contains <text> / lacks <text>            and text the body must / must not contain
--   feed <once|cycle> <file> <start> <count> [<header>]
--                                             bodies from a file, one per line, instead of body;
--                                             with <header>, each line is `<its value>\t<body>`
-- BENCH_THREADS is wrk's thread count (each thread takes every BENCH_THREADS-th feed line).
--
-- One kind with a fixed body: wrk replays one prebuilt request (no request() function, the
-- cheapest path). Otherwise request() picks a kind per request by weight (math.random) and takes
-- the next line of its feed. A `once` feed that runs out stops the thread and is reported.
--
-- Every response must meet the expectation of one kind (the first that matches counts it);
-- anything else is counted as non-2xx or unexpected. done() prints one "BENCH_RESULT {json}" line
-- and one "BENCH_SAMPLE text" line.

local kinds = {}

do
  local spec = assert(io.open(assert(os.getenv("BENCH_SPEC"), "BENCH_SPEC is not set"), "r"))
  local kind = nil
  for line in spec:lines() do
    local fields = {}
    for field in string.gmatch(line, "[^\t]+") do fields[#fields + 1] = field end
    local tag = fields[1]
    if tag == "kind" then
      kind = { name = fields[2], weight = tonumber(fields[3]), method = fields[4], path = fields[5],
               headers = {}, header_list = {}, body = nil, status = 200, prefix = "", contains = {}, lacks = {}, feed = nil }
      kinds[#kinds + 1] = kind
    elseif tag == "header" then
      kind.headers[fields[2]] = fields[3] or ""
      kind.header_list[#kind.header_list + 1] = fields[2] .. ": " .. (fields[3] or "")
    elseif tag == "body" then
      kind.body = fields[2] or ""
    elseif tag == "expect" then
      kind.status = tonumber(fields[2])
      kind.prefix = fields[3] or ""
    elseif tag == "contains" then
      kind.contains[#kind.contains + 1] = fields[2]
    elseif tag == "lacks" then
      kind.lacks[#kind.lacks + 1] = fields[2]
    elseif tag == "feed" then
      kind.feed = { mode = fields[2], file = fields[3], start = tonumber(fields[4]), count = tonumber(fields[5]), header = fields[6] }
    end
  end
  spec:close()
end

local single = #kinds == 1 and kinds[1].feed == nil

if single then
  -- The cheapest path: wrk builds the request once and replays it.
  local only = kinds[1]
  wrk.method = only.method
  if only.body ~= nil and only.body ~= "" then wrk.body = only.body end
  for name, value in pairs(only.headers) do wrk.headers[name] = value end
end

local threads = {}

function setup(thread)
  thread:set("thread_index", #threads)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
  unexpected = 0
  sample = ""
  exhausted = ""
  stopped = false
  local index = thread_index or 0
  local stride = tonumber(os.getenv("BENCH_THREADS") or "1")
  local total_weight = 0
  for i, kind in ipairs(kinds) do
    _G["sent_" .. i] = 0
    _G["matched_" .. i] = 0
    _G["taken_" .. i] = 0
    total_weight = total_weight + kind.weight
    kind.threshold = total_weight
    if not single then
      -- Everything but Content-Length and the body, built once.
      local head = { string.format("%s %s HTTP/1.1", kind.method, kind.path), "Host: " .. wrk.headers["Host"] }
      local fed = kind.feed and kind.feed.header
      for _, header in ipairs(kind.header_list) do
        if fed == nil or string.lower(string.match(header, "^[^:]*")) ~= string.lower(fed) then head[#head + 1] = header end
      end
      kind.head = table.concat(head, "\r\n") .. "\r\n"
      if kind.feed == nil then
        kind.fixed = kind.head .. "Content-Length: " .. #(kind.body or "") .. "\r\n\r\n" .. (kind.body or "")
      else
        local lines = {}
        for line in io.lines(kind.feed.file) do
          if kind.feed.header ~= nil then
            -- The line's header goes with the rest of the head: only Content-Length and the body follow.
            local value, body = string.match(line, "^([^\t]*)\t(.*)$")
            line = { head = kind.feed.header .. ": " .. value .. "\r\n", body = body }
          end
          lines[#lines + 1] = line
        end
        kind.lines = lines
        kind.next = kind.feed.start + index
        kind.stride = stride
      end
    end
  end
  for _, kind in ipairs(kinds) do kind.threshold = kind.threshold / total_weight end
  math.randomseed(os.time() * 1000 + index)
end

local function next_body(i, kind)
  local count = #kind.lines
  local position = kind.next
  if kind.feed.mode == "once" then
    if position >= count then return nil end
  else
    position = position % count
  end
  kind.next = kind.next + kind.stride
  _G["taken_" .. i] = _G["taken_" .. i] + 1
  return kind.lines[position + 1]
end

local function stop(name)
  exhausted = name
  stopped = true
  wrk.thread:stop()
  -- Whatever is returned may still be written: a request with no effect, whose answer is ignored.
  return "GET /healthz HTTP/1.1\r\nHost: " .. wrk.headers["Host"] .. "\r\n\r\n"
end

if not single then
  function request()
    if stopped then return stop(exhausted) end
    local i = #kinds
    if i > 1 then
      local r = math.random()
      for j, kind in ipairs(kinds) do
        if r < kind.threshold then i = j break end
      end
    end
    local kind = kinds[i]
    local text = kind.fixed
    if text == nil then
      local body = next_body(i, kind)
      if body == nil then return stop(kind.name) end
      if type(body) == "table" then
        text = kind.head .. body.head .. "Content-Length: " .. #body.body .. "\r\n\r\n" .. body.body
      else
        text = kind.head .. "Content-Length: " .. #body .. "\r\n\r\n" .. body
      end
    end
    _G["sent_" .. i] = _G["sent_" .. i] + 1
    return text
  end
end

local function remember(status, response_body)
  if sample == "" then
    sample = tostring(status) .. " " .. string.gsub(string.sub(response_body or "", 1, 160), "[\r\n]", " ")
  end
end

local function meets(kind, status, response_body)
  if status ~= kind.status or string.sub(response_body, 1, #kind.prefix) ~= kind.prefix then return false end
  for _, text in ipairs(kind.contains) do
    if string.find(response_body, text, 1, true) == nil then return false end
  end
  for _, text in ipairs(kind.lacks) do
    if string.find(response_body, text, 1, true) ~= nil then return false end
  end
  return true
end

function response(status, headers, response_body)
  if stopped then return end
  response_body = response_body or ""
  for i, kind in ipairs(kinds) do
    if meets(kind, status, response_body) then
      _G["matched_" .. i] = _G["matched_" .. i] + 1
      return
    end
  end
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  else
    unexpected = unexpected + 1
  end
  remember(status, response_body)
end

function done(summary, latency, requests)
  local total_non2xx, total_unexpected, first_sample, first_exhausted = 0, 0, "", ""
  local counts = {}
  for i, kind in ipairs(kinds) do counts[i] = { sent = 0, matched = 0, taken = 0 } end
  for _, thread in ipairs(threads) do
    total_non2xx = total_non2xx + (thread:get("non2xx") or 0)
    total_unexpected = total_unexpected + (thread:get("unexpected") or 0)
    local s = thread:get("sample")
    if first_sample == "" and s ~= nil then first_sample = s end
    local e = thread:get("exhausted")
    if first_exhausted == "" and e ~= nil then first_exhausted = e end
    for i in ipairs(kinds) do
      counts[i].sent = counts[i].sent + (thread:get("sent_" .. i) or 0)
      counts[i].matched = counts[i].matched + (thread:get("matched_" .. i) or 0)
      counts[i].taken = counts[i].taken + (thread:get("taken_" .. i) or 0)
    end
  end
  local kind_json = {}
  for i, kind in ipairs(kinds) do
    -- A replayed fixed request is not counted as it is written.
    local sent = single and "null" or tostring(counts[i].sent)
    kind_json[i] = string.format('{"name":"%s","sent":%s,"matched":%d,"taken":%d}', kind.name, sent, counts[i].matched, counts[i].taken)
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"duration_us":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f},"non2xx":%d,"unexpected":%d,"kinds":[%s],"exhausted":%s}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    total_non2xx, total_unexpected, table.concat(kind_json, ","),
    first_exhausted == "" and "null" or ('"' .. first_exhausted .. '"')))
  io.write("BENCH_SAMPLE " .. first_sample .. "\n")
end
