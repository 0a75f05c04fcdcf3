-- ACK: a batch of outcomes. Each releases its lease and host slot and applies the host verdict
-- (archiver.policy.politeness.host_verdict: the report is computed by the caller, the backoff
-- numbers arrive as arguments); then a RETRY goes to P:delayed, and a final outcome marks the
-- URL d/f/s and lowers the join count only if the URL is still pending (a late outcome of a
-- reaped lease counts once; the requeued copy is dropped when claimed). Captures go to
-- P:commits:FILE. Returns {late, dup}.
-- ARGV: conc, max pause, threshold, first pause, factor, commits ttl; then per outcome: record
-- A record is NUL-separated: token, outcome (d/f/s/r), host report (0 neutral, 1 healthy,
-- 2 failing), pause seconds (or -1), retry delay, sent (0: no request was sent, so the host's
-- booking is given back if it is still the latest), number of captures, host, then file,
-- start, end per capture, then the item.
local conc, max_pause = tonumber(ARGV[1]), tonumber(ARGV[2])
local threshold, first, factor = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local commits_ttl = tonumber(ARGV[6])
local late, dup = 0, 0
for r = 7, #ARGV do
  local f = fields(ARGV[r], 8)
  local tok, outcome, report, pause = f[1], f[2], f[3], tonumber(f[4])
  local delay, sent, ncaps, host = tonumber(f[5]), f[6], tonumber(f[7]), f[8]
  local caps = fields(f[9], 3 * ncaps)
  local item = caps[3 * ncaps + 1]
  local key = string.sub(item, 1, KEY_BYTES)
  local held = redis.call('HDEL', P .. 'lease', tok) == 1
  if held then
    redis.call('ZREM', P .. 'leases', tok)
    redis.call('HINCRBY', C, 'leased', -1)
    local hk = P .. 'host:' .. host
    local st = redis.call('HMGET', hk, 'n', 'pause', 'fails', 'booked', 'last')
    local fails = tonumber(st[3]) or 0
    if sent == '0' and st[4] == tok then  -- no later booking: its time was never used
      redis.call('HSET', hk, 'next', st[5], 'booked', 0)
    end
    if report == '2' then
      fails = fails + 1
      if fails >= threshold then
        pause = math.max(pause, math.min(first * factor ^ (fails - threshold), max_pause))
      end
    elseif report == '1' then
      fails = 0
    end
    local paused = tonumber(st[2]) or 0
    if pause >= 0 then paused = math.max(paused, now + math.min(pause, max_pause)) end
    redis.call('HSET', hk, 'n', math.max((tonumber(st[1]) or 0) - 1, 0), 'fails', fails,
               'pause', paused)
    schedule(host, conc)
  end
  if outcome == 'r' then
    if held then
      redis.call('ZADD', P .. 'delayed', now + delay, host .. '\0' .. item)
      redis.call('HINCRBY', C, 'queued', 1)
    end
  elseif redis.call('HGET', P .. 'seen', key) == 'q' then
    redis.call('HSET', P .. 'seen', key, outcome)
    redis.call('HINCRBY', C, 'unfinished', -1)
    redis.call('HINCRBY', C, outcome, 1)
    if not held then late = late + 1 end
  else
    dup = dup + 1
  end
  for c = 1, 3 * ncaps, 3 do
    local ck = P .. 'commits:' .. caps[c]
    redis.call('HSET', ck, caps[c + 1] .. ' ' .. caps[c + 2], host .. '\0' .. item)
    redis.call('EXPIRE', ck, commits_ttl)
  end
end
if late > 0 then redis.call('HINCRBY', C, 'late', late) end
if dup > 0 then redis.call('HINCRBY', C, 'dup', dup) end
return {late, dup}
