-- DELAY: a robots.txt Crawl-delay (an extension record, RFC 9309 section 2.2.4; capped by the
-- caller) for one host: its next start counts from the latest start with the new delay (the
-- crawl's own delay, when longer, still wins: claim.lua spaces by the longer of the two).
-- Returns 1.
-- ARGV: conc, host, delay
local conc, host, d = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local hk = P .. 'host:' .. host
local st = redis.call('HMGET', hk, 'next', 'last')
local nxt = tonumber(st[1]) or 0
if st[2] then nxt = math.max(nxt, tonumber(st[2]) + d) end
redis.call('HSET', hk, 'delay', d, 'next', nxt)
schedule(host, conc)
return 1
