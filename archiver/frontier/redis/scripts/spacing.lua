-- SPACING: a seed's per_host_delay for one host, instead of the crawl's delay, for every process
-- (the longest, when seeds give the host several; claim.lua and reserve.lua space by the
-- longer of it and the host's Crawl-delay). The next start counts from the latest one with it.
-- Returns the spacing kept.
-- ARGV: conc, host, spacing
local conc, host, d = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local hk = P .. 'host:' .. host
local st = redis.call('HMGET', hk, 'spacing', 'last', 'delay')
if st[1] then d = math.max(d, tonumber(st[1])) end
redis.call('HSET', hk, 'spacing', d)
if st[2] then
  redis.call('HSET', hk, 'next', tonumber(st[2]) + math.max(tonumber(st[3]) or 0, d))
end
schedule(host, conc)
return tostring(d)
