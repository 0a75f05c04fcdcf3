-- CLAIM: requeue expired leases (when allowed to reap), move due retries back to their hosts,
-- then lease up to `want` items of ready hosts, as many per host as its free slots and spacing
-- allow. Items whose URL is no longer pending (finished by a late outcome) are dropped.
-- Returns {{"token\0HOST\0item", ...}, seconds until the next host or retry is due (or -1),
-- reaped, stale}.
-- ARGV: owner, want, conc, default delay, lease timeout, may reap
local owner, want = ARGV[1], tonumber(ARGV[2])
local conc, delay, timeout = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- work per call at most: a script blocks the server while it runs
local REAP_BATCH, DUE_BATCH, ROUNDS = 200, 500, 4
local reaped = 0
if ARGV[6] == '1' then
  local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, REAP_BATCH)
  for _, tok in ipairs(expired) do
    local v = redis.call('HGET', P .. 'lease', tok)
    if v then
      unlease(tok, v, conc)
      reaped = reaped + 1
    else
      redis.call('ZREM', P .. 'leases', tok)
    end
  end
  if reaped > 0 then redis.call('HINCRBY', C, 'reaped', reaped) end
end
local due = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', now, 'LIMIT', 0, DUE_BATCH)
for _, m in ipairs(due) do
  redis.call('ZREM', P .. 'delayed', m)
  local host, item = split(m)
  if redis.call('RPUSH', P .. 'q:' .. host, item) == 1 then schedule(host, conc) end
end
local out = {}
local popped, stale, claimed, rounds = 0, 0, 0, 0
while want > 0 and rounds < ROUNDS do
  rounds = rounds + 1
  local hosts = redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, want)
  if #hosts == 0 then break end
  for _, host in ipairs(hosts) do
    local hk, qk = P .. 'host:' .. host, P .. 'q:' .. host
    while want > 0 do
      local st = redis.call('HMGET', hk, 'n', 'next', 'pause', 'delay', 'spacing')
      local n, nxt = tonumber(st[1]) or 0, tonumber(st[2]) or 0
      if n >= conc or math.max(nxt, tonumber(st[3]) or 0) > now then break end
      local item = redis.call('LPOP', qk)
      if not item then break end
      popped = popped + 1
      if redis.call('HGET', P .. 'seen', string.sub(item, 1, KEY_BYTES)) == 'q' then
        local tok = redis.call('HINCRBY', C, 'token', 1)
        redis.call('ZADD', P .. 'leases', now + timeout, tok)
        redis.call('HSET', P .. 'lease', tok, owner .. '\0' .. host .. '\0' .. item)
        local start = math.max(now, nxt)
        -- the crawl's delay (or a seed's for the host), or its Crawl-delay when longer
        local spacing = math.max(tonumber(st[4]) or 0, tonumber(st[5]) or delay)
        redis.call('HSET', hk, 'n', n + 1, 'last', start, 'next', start + spacing, 'booked', tok)
        out[#out + 1] = tok .. '\0' .. host .. '\0' .. item
        claimed = claimed + 1
        want = want - 1
      else
        stale = stale + 1
      end
    end
    schedule(host, conc)
  end
end
if popped > 0 then redis.call('HINCRBY', C, 'queued', -popped) end
if claimed > 0 then redis.call('HINCRBY', C, 'leased', claimed) end
if stale > 0 then redis.call('HINCRBY', C, 'stale', stale) end
local hint = -1
local r = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
if r[2] then hint = math.max(tonumber(r[2]) - now, 0) end
local d = redis.call('ZRANGE', P .. 'delayed', 0, 0, 'WITHSCORES')
if d[2] then
  local w = math.max(tonumber(d[2]) - now, 0)
  if hint < 0 or w < hint then hint = w end
end
return {out, string.format('%.6f', hint), reaped, stale}
