-- UNCOMMIT (resume): re-queue the finished URLs whose captures in `file` start at or after
-- `offset` (resume cut them from the file). Returns how many were re-queued.
-- ARGV: conc, file, offset
local conc, off = tonumber(ARGV[1]), tonumber(ARGV[3])
local ck = P .. 'commits:' .. ARGV[2]
local all = redis.call('HGETALL', ck)
local requeued = 0
for j = 1, #all, 2 do
  local start = tonumber(string.match(all[j], '^(%d+)'))
  if start >= off then
    redis.call('HDEL', ck, all[j])
    local host, item = split(all[j + 1])
    local key = string.sub(item, 1, KEY_BYTES)
    local st = redis.call('HGET', P .. 'seen', key)
    if st == 'd' or st == 'f' or st == 's' then
      redis.call('HSET', P .. 'seen', key, 'q')
      redis.call('HINCRBY', C, st, -1)
      redis.call('HINCRBY', C, 'unfinished', 1)
      redis.call('HINCRBY', C, 'queued', 1)
      if redis.call('RPUSH', P .. 'q:' .. host, item) == 1 then schedule(host, conc) end
      requeued = requeued + 1
    end
  end
end
return requeued
