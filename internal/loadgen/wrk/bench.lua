-- bench.lua: the requests `spillway bench` sends, for wrk (Debian's wrk
-- package, 4.x), so that its figures can be checked with an outside tool.
--
--   wrk -t2 -c32 -d5s --latency -s bench.lua http://127.0.0.1:PORT -- MODE [KEY] [MODEL]
--
-- MODE is plain (an OpenAI Chat request), stream (the same, streamed, with
-- usage) or translated (an Anthropic Messages stream, which spillway serves
-- from an OpenAI provider). KEY, when given and not "-", is sent as
-- "Authorization: Bearer KEY". MODEL defaults to bench-model. The bodies
-- are byte for byte the Go load generator's (cmd/spillway/bench.go,
-- bencher.target; TestWrkSendsTheGoBodies checks it).
--
-- Every 2xx answer is checked for its terminator ("}" for a JSON body, the
-- last SSE event of a stream): one that ends early counts as cut. done()
-- prints one line, "SPILLWAY_WRK_JSON {...}", with the counts, the errors
-- and the latency distribution in microseconds.

local msgs = '"messages":[{"role":"user","content":"Write twenty words about rivers."}]'
local term

-- Per thread, read by done() through thread:get.
ok_count, cut_count = 0, 0

function init(args)
  local mode = args[1] or "plain"
  local key = args[2] or "-"
  local model = args[3] or "bench-model"
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  if key ~= "-" and key ~= "" then
    wrk.headers["Authorization"] = "Bearer " .. key
  end
  local head = '{"model":"' .. model .. '","max_tokens":256,'
  if mode == "plain" then
    wrk.path = "/v1/chat/completions"
    wrk.body = head .. msgs .. '}'
    term = '}'
  elseif mode == "stream" then
    wrk.path = "/v1/chat/completions"
    wrk.body = head .. '"stream":true,"stream_options":{"include_usage":true},' .. msgs .. '}'
    term = 'data: [DONE]'
  elseif mode == "translated" then
    wrk.path = "/v1/messages"
    wrk.headers["Anthropic-Version"] = "2023-06-01"
    wrk.body = head .. '"stream":true,' .. msgs .. '}'
    term = 'data: {"type":"message_stop"}'
  else
    error("bench.lua: mode must be plain, stream or translated, not " .. tostring(mode))
  end
end

-- ends reports whether body ends with term, trailing whitespace ignored.
local function ends(body)
  local n = #body
  while n > 0 do
    local c = body:byte(n)
    if c ~= 32 and c ~= 9 and c ~= 10 and c ~= 13 then break end
    n = n - 1
  end
  return n >= #term and body:sub(n - #term + 1, n) == term
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    if ends(body) then
      ok_count = ok_count + 1
    else
      cut_count = cut_count + 1
    end
  end
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local ok, cut = 0, 0
  for _, t in ipairs(threads) do
    ok = ok + t:get("ok_count")
    cut = cut + t:get("cut_count")
  end
  local e = summary.errors
  io.write(string.format(
    'SPILLWAY_WRK_JSON {"duration_us":%d,"requests":%d,"bytes":%d,"ok":%d,"cut":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d,"p99_9":%d}}\n',
    summary.duration, summary.requests, summary.bytes, ok, cut,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9)))
end
