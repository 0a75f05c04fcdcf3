-- LEAVE: this process leaves the crawl. Returns how many other processes are still alive
-- (heartbeat within a lease timeout): 0 means this one was the last.
-- ARGV: owner, lease timeout
redis.call('ZREM', P .. 'procs', ARGV[1])
return redis.call('ZCOUNT', P .. 'procs', now - tonumber(ARGV[2]), '+inf')
