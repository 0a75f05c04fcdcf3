-- RENEW: the heartbeat. Extends this process's leases, stamps P:procs, and with `recover` hands
-- back the leases of this owner that it does not know (a claim whose reply was lost with the
-- connection; a predecessor with the same id). Returns {tokens no longer held, recovered}.
-- ARGV: owner, lease timeout, recover, conc; then per lease held: token
local owner, timeout, conc = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local lost, known = {}, {}
for i = 5, #ARGV do
  local tok = ARGV[i]
  known[tok] = true
  if redis.call('ZSCORE', P .. 'leases', tok) then
    redis.call('ZADD', P .. 'leases', now + timeout, tok)
  else
    lost[#lost + 1] = tok
  end
end
redis.call('ZADD', P .. 'procs', now, owner)
local recovered = 0
if ARGV[3] == '1' then
  local all = redis.call('HGETALL', P .. 'lease')
  for j = 1, #all, 2 do
    local tok, v = all[j], all[j + 1]
    local o = split(v)
    if o == owner and not known[tok] then
      unlease(tok, v, conc)
      recovered = recovered + 1
    end
  end
end
return {lost, recovered}
