-- RELEASE: hand leases back untouched (a cancelled get, a closing process): each item to the
-- front of its host's list, no try counted. Returns how many leases were handed back.
-- ARGV: conc; then per lease: token
local conc = tonumber(ARGV[1])
local released = 0
for i = 2, #ARGV do
  local v = redis.call('HGET', P .. 'lease', ARGV[i])
  if v then
    unlease(ARGV[i], v, conc)
    released = released + 1
  end
end
return released
