-- The prelude of every script (lua.py prepends it). KEYS[1] is P:meta, declared so the key slot
-- is known; P is its prefix. A missing meta key means the server lost the crawl's state: an
-- error, never "nothing left to do". The time is the server's, one clock for every process.
local P = string.sub(KEYS[1], 1, -5)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('ARCHIVER_STATE_LOST')
end
local T = redis.call('TIME')
local now = tonumber(T[1]) + tonumber(T[2]) / 1000000
local C = P .. 'counts'
-- Bytes of a URL key at the start of every queued item (codec.URL_KEY_BYTES: part of the state
-- format, so a constant rather than an argument).
local KEY_BYTES = 16

local function split(v)
  local i = string.find(v, '\0', 1, true)
  return string.sub(v, 1, i - 1), string.sub(v, i + 1)
end

-- n NUL-terminated fields, then the rest (an item, whose binary url-key may hold NULs).
local function fields(v, n)
  local out, pos = {}, 1
  for k = 1, n do
    local j = string.find(v, '\0', pos, true)
    out[k] = string.sub(v, pos, j - 1)
    pos = j + 1
  end
  out[n + 1] = string.sub(v, pos)
  return out
end

-- Keep P:ready true for one host: present iff it has queued items and a free slot,
-- scored by when its next fetch may start.
local function schedule(host, conc)
  local st = redis.call('HMGET', P .. 'host:' .. host, 'n', 'next', 'pause')
  if (tonumber(st[1]) or 0) >= conc or redis.call('LLEN', P .. 'q:' .. host) == 0 then
    redis.call('ZREM', P .. 'ready', host)
  else
    local at = math.max(tonumber(st[2]) or 0, tonumber(st[3]) or 0)
    redis.call('ZADD', P .. 'ready', at, host)
  end
end

-- Give a lease back: its item to the front of its host's queue, its slot freed.
local function unlease(tok, v, conc)
  redis.call('HDEL', P .. 'lease', tok)
  redis.call('ZREM', P .. 'leases', tok)
  local _, rest = split(v)
  local host, item = split(rest)
  local hk = P .. 'host:' .. host
  redis.call('HSET', hk, 'n', math.max((tonumber(redis.call('HGET', hk, 'n')) or 0) - 1, 0))
  redis.call('LPUSH', P .. 'q:' .. host, item)
  redis.call('HINCRBY', C, 'leased', -1)
  redis.call('HINCRBY', C, 'queued', 1)
  schedule(host, conc)
end
