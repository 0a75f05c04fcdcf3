-- RELEASE: hand leases back untouched (a cancelled get, a closing process): each item to the
-- front of its host's list, no try counted, the host's booking for it given back when no later
-- one was made. Returns how many leases were handed back.
-- ARGV: conc; then per lease: token
local conc = tonumber(ARGV[1])
local released = 0
for i = 2, #ARGV do
  local v = redis.call('HGET', P .. 'lease', ARGV[i])
  if v then
    local _, rest = split(v)
    local hk = P .. 'host:' .. split(rest)
    local st = redis.call('HMGET', hk, 'booked', 'last')
    if st[1] == ARGV[i] then  -- no later booking: the lease never started, its time is unused
      redis.call('HSET', hk, 'next', st[2], 'booked', 0)
    end
    unlease(ARGV[i], v, conc)
    released = released + 1
  end
end
return released
