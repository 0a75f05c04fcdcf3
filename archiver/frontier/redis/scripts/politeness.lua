-- POLITENESS: the crawl's per-host delay and concurrency changed (an operator's control.toml):
-- store them for every process (P:politeness, read by each one), and reconsider the hosts with
-- fetches in flight: one at its old number of slots is out of P:ready until then, and its next
-- start is counted again from its latest one with the new spacing. Returns the number of hosts.
-- ARGV: conc, delay, process id
local conc, delay = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('HSET', P .. 'politeness', 'delay', ARGV[2], 'concurrency', ARGV[1], 'by', ARGV[3])
local done, n = {}, 0
for _, v in ipairs(redis.call('HVALS', P .. 'lease')) do
  local _, rest = split(v)
  local host = split(rest)
  if not done[host] then
    done[host] = true
    n = n + 1
    local hk = P .. 'host:' .. host
    local st = redis.call('HMGET', hk, 'last', 'delay', 'spacing')
    if st[1] then
      local base = tonumber(st[3]) or delay  -- a seed's delay for the host stays
      redis.call('HSET', hk, 'next', tonumber(st[1]) + math.max(tonumber(st[2]) or 0, base))
    end
    schedule(host, conc)
  end
end
return n
