-- PUT: mark a batch of URLs seen; queue the new ones at the back of their host's list (a host
-- whose list was empty is scheduled). Returns the 0-based indexes of the new items.
-- ARGV: conc; then per item: url-key HOST \0 item-json
local conc = tonumber(ARGV[1])
local new = {}
local added = 0
for i = 2, #ARGV do
  local a = ARGV[i]
  local key = string.sub(a, 1, KEY_BYTES)
  if redis.call('HSETNX', P .. 'seen', key, 'q') == 1 then
    local j = string.find(a, '\0', KEY_BYTES + 1, true)
    local host = string.sub(a, KEY_BYTES + 1, j - 1)
    if redis.call('HSETNX', P .. 'host:' .. host, 'n', 0) == 1 then
      redis.call('HINCRBY', C, 'hosts', 1)
    end
    if redis.call('RPUSH', P .. 'q:' .. host, key .. string.sub(a, j + 1)) == 1 then
      schedule(host, conc)
    end
    added = added + 1
    new[#new + 1] = i - 2
  end
end
if added > 0 then
  redis.call('HINCRBY', C, 'unfinished', added)
  redis.call('HINCRBY', C, 'queued', added)
  redis.call('HINCRBY', C, 'seen', added)
end
return new
