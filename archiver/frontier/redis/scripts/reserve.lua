-- RESERVE: one more request start inside a lease (the page after its robots.txt), booked like a
-- claim's, so later claims by any process are spaced behind it. Returns 1.
-- ARGV: conc, host, default delay
local conc, host = tonumber(ARGV[1]), ARGV[2]
local hk = P .. 'host:' .. host
local st = redis.call('HMGET', hk, 'next', 'pause', 'delay', 'spacing')
local start = math.max(now, tonumber(st[1]) or 0, tonumber(st[2]) or 0)
local spacing = math.max(tonumber(st[3]) or 0, tonumber(st[4]) or tonumber(ARGV[3]))
redis.call('HSET', hk, 'last', start, 'next', start + spacing, 'booked', 0)
schedule(host, conc)
return 1
