"""The Redis frontier: several crawler processes, on one machine or many, share one crawl.

``--frontier redis://HOST:PORT/DB --crawl-id NAME`` keeps the queue, the seen set, the leases,
per-host politeness, the join count, dedup digests and the robots.txt cache in Redis. Any number
of ``archiver crawl`` processes with the same crawl id work on one crawl; giving the same seeds
twice is harmless (they are seen already).

Data model
==========

Every key starts with ``archiver:{NAME}:`` (``P:`` below). The braces are a Redis Cluster hash
tag, so all of a crawl's keys live in one slot, as Lua scripts need (the scripts still touch
keys they do not declare, so Cluster is not supported; one Redis server, or a replica set with
failover, is)::

    P:meta              HASH   created, format: the crawl exists (a missing meta key mid-crawl
                               means the server lost its data: a loud error, never "finished")
    P:seen              HASH   url-key -> state: q (pending: queued, waiting to retry, or
                               leased), d (done), f (failed), s (skipped). url-key is the
                               16-byte BLAKE2b of the URL: the seen set and the per-URL state in
                               one entry, ~70 bytes a URL whatever its length
    P:q:HOST            LIST   queued items of one host, FIFO: url-key + compact JSON of the
                               CrawlItem (url, redirects_left, depth, hops, via, tries)
    P:ready             ZSET   hosts that have queued items *and* a free slot, scored by the
                               (Redis-clock) time their next fetch may start
    P:host:HOST         HASH   politeness across all processes (HostGate's fields): n (fetches
                               in flight), last (latest start), next (earliest next start:
                               delay spacing), pause (429/503 and failure backoff), delay
                               (robots.txt Crawl-delay), fails (consecutive failures)
    P:delayed           ZSET   "HOST\\0item" -> due time: RETRY outcomes waiting to be re-queued
    P:leases            ZSET   token -> lease deadline (Redis clock)
    P:lease             HASH   token -> "owner\\0HOST\\0item" (owner = ``hostname-pid``)
    P:counts            HASH   unfinished (the join count), queued, leased, d, f, s, seen,
                               hosts, token (lease id sequence), reaped, late, dup, stale
    P:procs             ZSET   process id -> last heartbeat: who is alive, who is last
    P:commits:FILE      HASH   "start end" -> "HOST\\0item" for each capture in WARC FILE whose
                               outcome reached Redis (resume cuts an ``.open`` file back to
                               these); dropped when the writer moves to its next file, 7-day TTL
    P:digests           HASH   payload digest -> [record id, uri, date] (RedisDigestIndex)
    P:robots:ORIGIN     STRING status, fetch time and body of a robots.txt (RedisRobotsCache),
                               24-hour TTL

Scripts
=======

All state changes are Lua scripts, so each is atomic across processes and costs one round trip
per *batch*; every script first checks ``P:meta`` and reads the time from Redis (``TIME``), so
politeness and lease deadlines use one clock for every machine.

* ``PUT``: for a batch of items, ``HSETNX`` the seen state and ``RPUSH`` the new ones onto their
  host's list; a host whose list was empty is (re)scheduled in ``P:ready``; returns which items
  were new. One call per ``put_many`` (consecutive ``put_many`` calls share one call).
* ``CLAIM``: first requeues (at the front of their host's list) the leases whose deadline passed
  (the reaper: whoever claims notices), then moves due retries back to their hosts, then takes up
  to N items from ready hosts, as many per host as its free slots and delay allow, each with a
  lease (token, deadline) and the host's slot taken and next start moved on (``HostGate``
  semantics, shared). Items whose URL is no longer pending (a late acknowledgement finished it)
  are dropped here. Returns the leases and how long until the next host is due.
* ``ACK``: a batch of outcomes. Each releases its lease and its host slot (applying 429/503 pauses
  and failure backoff), then: RETRY goes to ``P:delayed``; a final outcome marks the URL d/f/s and
  decrements the join count, *only if the URL is still pending* (a URL is never marked done
  twice: a late acknowledgement of a lease that was reaped still counts once, and the copy that
  was requeued is dropped when claimed). Captures are recorded in ``P:commits:FILE``.
* ``RELEASE``: hands leases back untouched (a cancelled ``get``, a process closing).
* ``RENEW``: the heartbeat: extends this process's leases, stamps ``P:procs``, and after a
  reconnect hands back leases of this process that it never learned about (a claim whose reply
  was lost with the connection).
* ``DELAY`` (a robots.txt Crawl-delay: the next start counts from the latest with the new
  delay), ``RESERVE`` (one more start inside a lease: the page after its robots.txt),
  ``UNCOMMIT`` (resume), ``LEAVE`` (close: "am I the last live process?").

Leases, join and politeness across processes
============================================

A claim is a lease: a process renews its leases every ``lease_timeout / 3`` seconds; a process
that dies (kill -9, lost machine) stops renewing, and after ``lease_timeout`` the next claim by
any process puts those URLs back at the front of their queues and frees their host slots, so
another process fetches them. A process reaps only after it has itself been connected for a
whole ``lease_timeout``: after a Redis restart or a network outage every deadline may have
passed, and each live process gets that long to renew its leases first.

The join count (``unfinished``) is the number of URLs seen and not finished, in every process:
``put`` adds the new URLs, the first final outcome of a URL removes it; RETRY keeps it. Every
round trip reads it back, and ``join()`` returns when it is 0: nothing is queued, waiting, or in
flight anywhere. A worker's children are always in Redis before its outcome is (``put_many`` is
awaited before ``task_done`` is called, and the outcomes of one process go out in call order), so
the count never touches 0 while work remains.

Per-host limits hold for all processes together because slots and start times live in
``P:host:HOST`` and are taken inside ``CLAIM``, in the same atomic step as the URL. A slot is
freed by the outcome, by ``RELEASE``, or by the reaper when the lease expires. The rules are
:class:`~archiver.policy.politeness.HostGate`'s (a 5xx or no response is a failure; three in a row
pause the host 5 s, doubling; 429/503 pause it for Retry-After), on Redis's clock. The gate
given to the constructor supplies the limits and serves as this process's *mirror* of its own
claims, which answers the synchronous ``reserve``.

Batching (one connection's worth of round trips)
================================================

One *pump* task per process does all the frontier's Redis traffic, one pipelined round trip at a
time: pending ``put_many`` calls and outcomes (in call order), dedup digest lookups and
additions (:class:`RedisDigestIndex`), a claim for the workers that are
waiting in ``get()`` right now (never more: a claimed URL holds a host slot), the heartbeat when
due, and (at most every 100 ms) a read of the counters. While a round trip is in flight, new
calls queue up and go together in the next one, so the batch grows with the load (group
commit). ``task_done`` does not
wait for Redis: outcomes are flushed within ``ack_interval`` (20 ms) or with the next round trip,
whichever comes first (at once when 64 are pending, or when a host asked us to slow down);
``put_many`` and ``get`` wake the pump at once; ``flush()`` waits until everything reported so
far is in Redis. Measured with ``scripts/bench-redis``: ~0.3 script calls per URL with 3 busy
processes, and Redis holds ~190 bytes per queued URL (seen-set entry ~75, queue entry ~110 for
a 40-character URL with its ``via``) and ~75 bytes per finished one. The in-process
``HostScheduler`` is not used: its decisions would be local, and per-host limits must be global;
Redis decides, and the pump polls with backoff (5 ms doubling to ``poll_interval``, or until the
next host is due, whichever is sooner) when nothing is ready, so idle processes cost Redis a few
cheap calls a second.

Outages
=======

Redis unreachable at ``open()`` is :class:`~archiver.errors.FrontierUnavailableError` with a
one-line message. Afterwards, connection errors are retried with backoff (50 ms doubling to 2 s,
or a quarter of the lease timeout if that is less, so every live process is back well before
anyone may reap): workers
wait in ``get`` (and ``task_done`` once ``max_pending`` outcomes are queued), outcomes and
commits already reported are kept in order and sent when Redis answers again, so captures
already written are committed, none is lost and none is fetched twice. Every script is safe to
send twice (outcomes are keyed by lease token and URL state; a lost claim reply is repaired by
the next ``RENEW``). If Redis comes back *empty* (restarted without persistence) the crawl's
state is gone: that is a :class:`~archiver.errors.FrontierError`, surfaced to the workers. So a
Redis that may restart needs persistence (``appendonly yes``); one that only becomes
unreachable (network) does not.

Several processes, one output directory (the proposal the crawler wiring follows)
==================================================================================

The process id ``{hostname}-{pid}`` names the process's WARC series (the writer's host part), so
names never collide. Processes on one machine may share ``--output DIR``: WARCs in ``DIR/warcs/``,
per-process state (lock, journals, crawl.json, log) in ``DIR/state/{hostname}-{pid}/``; processes
on other machines use their own DIR. ``archiver index DIR [DIR...]`` merges every journal under
``DIR/state/*/journals``; the last process to leave (:attr:`RedisFrontier.last_to_leave`) merges
automatically. A dead process's ``.open`` files are closed keeping their whole captures: the URLs
it had in flight are also fetched again elsewhere, so each of those may be captured twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ReadOnlyError, RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from archiver.errors import FrontierError, FrontierUnavailableError
from archiver.frontier.base import Lease
from archiver.models import (
    CachedRobots,
    CrawlItem,
    FrontierStats,
    Original,
    Outcome,
    ResumeInfo,
    TaskResult,
)
from archiver.policy.politeness import HostGate, host_report
from archiver.urls import host_port, redact_url

T = TypeVar("T")

#: Format of the crawl state in Redis; a process refuses a crawl written in another format.
STATE_FORMAT = "archiver-redis/1"
#: Size of the URL key (BLAKE2b digest): 128 bits, collision-free for any crawl.
URL_KEY_BYTES = 16
#: Items per PUT script call (a Lua script blocks the server while it runs).
PUT_CHUNK = 1000
#: Pending outcomes that are sent at once instead of waiting for ``ack_interval``.
FLUSH_BATCH = 64
#: How long the commit record of a WARC file outlives its last update.
COMMITS_TTL = 7 * 24 * 3600
#: RFC 9309 section 2.4: a cached robots.txt SHOULD NOT be used for more than 24 hours.
ROBOTS_TTL = 24 * 3600.0

#: Errors after which the same request may be sent again once Redis answers.
_TRANSIENT: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # includes BusyLoadingError (a restarted server loading its data)
    RedisTimeoutError,
    ReadOnlyError,  # a replica that is being promoted
    OSError,
)
_STATE_LOST = "ARCHIVER_STATE_LOST"

_OUTCOME_CODES = {
    Outcome.DONE: "d",
    Outcome.FAILED: "f",
    Outcome.SKIPPED: "s",
    Outcome.RETRY: "r",
}

# -- Lua ------------------------------------------------------------------------------------------

# Shared prelude. KEYS[1] is P:meta (a real key, declared so the slot is known); P is its prefix.
_PRELUDE = r"""
local P = string.sub(KEYS[1], 1, -5)
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('ARCHIVER_STATE_LOST')
end
local T = redis.call('TIME')
local now = tonumber(T[1]) + tonumber(T[2]) / 1000000
local C = P .. 'counts'

local function split(v)
  local i = string.find(v, '\0', 1, true)
  return string.sub(v, 1, i - 1), string.sub(v, i + 1)
end

-- n NUL-terminated fields, then the rest (an item, whose binary url-key may hold NULs).
local function fields(v, n)
  local out, pos = {}, 1
  for k = 1, n do
    local j = string.find(v, '\0', pos, true)
    out[k] = string.sub(v, pos, j - 1)
    pos = j + 1
  end
  out[n + 1] = string.sub(v, pos)
  return out
end

-- Keep P:ready true for one host: present iff it has queued items and a free slot,
-- scored by when its next fetch may start.
local function schedule(host, conc)
  local st = redis.call('HMGET', P .. 'host:' .. host, 'n', 'next', 'pause')
  if (tonumber(st[1]) or 0) >= conc or redis.call('LLEN', P .. 'q:' .. host) == 0 then
    redis.call('ZREM', P .. 'ready', host)
  else
    local at = math.max(tonumber(st[2]) or 0, tonumber(st[3]) or 0)
    redis.call('ZADD', P .. 'ready', at, host)
  end
end

-- Give a lease back: its item to the front of its host's queue, its slot freed.
local function unlease(tok, v, conc)
  redis.call('HDEL', P .. 'lease', tok)
  redis.call('ZREM', P .. 'leases', tok)
  local _, rest = split(v)
  local host, item = split(rest)
  local hk = P .. 'host:' .. host
  redis.call('HSET', hk, 'n', math.max((tonumber(redis.call('HGET', hk, 'n')) or 0) - 1, 0))
  redis.call('LPUSH', P .. 'q:' .. host, item)
  redis.call('HINCRBY', C, 'leased', -1)
  redis.call('HINCRBY', C, 'queued', 1)
  schedule(host, conc)
end
"""

# ARGV: conc, then one "url-key HOST\0json" per item. Returns the 0-based indexes of new items.
_PUT = r"""
local conc = tonumber(ARGV[1])
local new = {}
local added = 0
for i = 2, #ARGV do
  local a = ARGV[i]
  local key = string.sub(a, 1, 16)
  if redis.call('HSETNX', P .. 'seen', key, 'q') == 1 then
    local j = string.find(a, '\0', 17, true)
    local host = string.sub(a, 17, j - 1)
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
"""

# ARGV: owner, want, conc, default delay, lease timeout, may reap (0/1).
# Returns {{"token\0HOST\0item", ...}, seconds until the next host or retry is due (or -1),
#          reaped, stale}.
_CLAIM = r"""
local owner, want = ARGV[1], tonumber(ARGV[2])
local conc, delay, timeout = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local reaped = 0
if ARGV[6] == '1' then
  local expired = redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', now, 'LIMIT', 0, 200)
  for _, tok in ipairs(expired) do
    local v = redis.call('HGET', P .. 'lease', tok)
    if v then
      unlease(tok, v, conc)
      reaped = reaped + 1
    else
      redis.call('ZREM', P .. 'leases', tok)
    end
  end
  if reaped > 0 then redis.call('HINCRBY', C, 'reaped', reaped) end
end
local due = redis.call('ZRANGEBYSCORE', P .. 'delayed', '-inf', now, 'LIMIT', 0, 500)
for _, m in ipairs(due) do
  redis.call('ZREM', P .. 'delayed', m)
  local host, item = split(m)
  if redis.call('RPUSH', P .. 'q:' .. host, item) == 1 then schedule(host, conc) end
end
local out = {}
local popped, stale, claimed, rounds = 0, 0, 0, 0
while want > 0 and rounds < 4 do
  rounds = rounds + 1
  local hosts = redis.call('ZRANGEBYSCORE', P .. 'ready', '-inf', now, 'LIMIT', 0, want)
  if #hosts == 0 then break end
  for _, host in ipairs(hosts) do
    local hk, qk = P .. 'host:' .. host, P .. 'q:' .. host
    while want > 0 do
      local st = redis.call('HMGET', hk, 'n', 'next', 'pause', 'delay')
      local n, nxt = tonumber(st[1]) or 0, tonumber(st[2]) or 0
      if n >= conc or math.max(nxt, tonumber(st[3]) or 0) > now then break end
      local item = redis.call('LPOP', qk)
      if not item then break end
      popped = popped + 1
      if redis.call('HGET', P .. 'seen', string.sub(item, 1, 16)) == 'q' then
        local tok = redis.call('HINCRBY', C, 'token', 1)
        redis.call('ZADD', P .. 'leases', now + timeout, tok)
        redis.call('HSET', P .. 'lease', tok, owner .. '\0' .. host .. '\0' .. item)
        local start = math.max(now, nxt)
        local spacing = tonumber(st[4]) or delay
        redis.call('HSET', hk, 'n', n + 1, 'last', start, 'next', start + spacing)
        out[#out + 1] = tok .. '\0' .. host .. '\0' .. item
        claimed = claimed + 1
        want = want - 1
      else
        stale = stale + 1
      end
    end
    schedule(host, conc)
  end
end
if popped > 0 then redis.call('HINCRBY', C, 'queued', -popped) end
if claimed > 0 then redis.call('HINCRBY', C, 'leased', claimed) end
if stale > 0 then redis.call('HINCRBY', C, 'stale', stale) end
local hint = -1
local r = redis.call('ZRANGE', P .. 'ready', 0, 0, 'WITHSCORES')
if r[2] then hint = math.max(tonumber(r[2]) - now, 0) end
local d = redis.call('ZRANGE', P .. 'delayed', 0, 0, 'WITHSCORES')
if d[2] then
  local w = math.max(tonumber(d[2]) - now, 0)
  if hint < 0 or w < hint then hint = w end
end
return {out, string.format('%.6f', hint), reaped, stale}
"""

# ARGV: conc, max pause, backoff threshold, first backoff, backoff factor, commits TTL, then one
# record per outcome, NUL-separated: token, outcome (d/f/s/r), host report (politeness.HostReport:
# 0 neutral, 1 healthy, 2 failing), pause seconds (or -1), retry delay, number of captures, host,
# then file, start, end per capture, then the item.
_ACK = r"""
local conc, max_pause = tonumber(ARGV[1]), tonumber(ARGV[2])
local threshold, first, factor = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local commits_ttl = tonumber(ARGV[6])
local late, dup = 0, 0
for r = 7, #ARGV do
  local f = fields(ARGV[r], 7)
  local tok, outcome, kind, pause = f[1], f[2], f[3], tonumber(f[4])
  local delay, ncaps, host = tonumber(f[5]), tonumber(f[6]), f[7]
  local caps = fields(f[8], 3 * ncaps)
  local item = caps[3 * ncaps + 1]
  local key = string.sub(item, 1, 16)
  local held = redis.call('HDEL', P .. 'lease', tok) == 1
  if held then
    redis.call('ZREM', P .. 'leases', tok)
    redis.call('HINCRBY', C, 'leased', -1)
    local hk = P .. 'host:' .. host
    local st = redis.call('HMGET', hk, 'n', 'pause', 'fails')
    local fails = tonumber(st[3]) or 0
    if kind == '2' then
      fails = fails + 1
      if fails >= threshold then
        pause = math.max(pause, math.min(first * factor ^ (fails - threshold), max_pause))
      end
    elseif kind == '1' then
      fails = 0
    end
    local paused = tonumber(st[2]) or 0
    if pause >= 0 then paused = math.max(paused, now + math.min(pause, max_pause)) end
    redis.call('HSET', hk, 'n', math.max((tonumber(st[1]) or 0) - 1, 0), 'fails', fails,
               'pause', paused)
    schedule(host, conc)
  end
  if outcome == 'r' then
    if held then
      redis.call('ZADD', P .. 'delayed', now + delay, host .. '\0' .. item)
      redis.call('HINCRBY', C, 'queued', 1)
    end
  elseif redis.call('HGET', P .. 'seen', key) == 'q' then
    redis.call('HSET', P .. 'seen', key, outcome)
    redis.call('HINCRBY', C, 'unfinished', -1)
    redis.call('HINCRBY', C, outcome, 1)
    if not held then late = late + 1 end
  else
    dup = dup + 1
  end
  for c = 1, 3 * ncaps, 3 do
    local ck = P .. 'commits:' .. caps[c]
    redis.call('HSET', ck, caps[c + 1] .. ' ' .. caps[c + 2], host .. '\0' .. item)
    redis.call('EXPIRE', ck, commits_ttl)
  end
end
if late > 0 then redis.call('HINCRBY', C, 'late', late) end
if dup > 0 then redis.call('HINCRBY', C, 'dup', dup) end
return {late, dup}
"""

# ARGV: conc, tokens... Returns how many leases were handed back.
_RELEASE = r"""
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
"""

# ARGV: owner, lease timeout, recover (0/1), conc, tokens held...
# Returns {tokens no longer held, leases of this owner handed back}.
_RENEW = r"""
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
"""

# ARGV: owner, lease timeout. Returns how many other processes are still alive.
_LEAVE = r"""
redis.call('ZREM', P .. 'procs', ARGV[1])
return redis.call('ZCOUNT', P .. 'procs', now - tonumber(ARGV[2]), '+inf')
"""

# ARGV: conc, file, offset. Re-queues the URLs of captures at or after offset in file.
_UNCOMMIT = r"""
local conc, off = tonumber(ARGV[1]), tonumber(ARGV[3])
local ck = P .. 'commits:' .. ARGV[2]
local all = redis.call('HGETALL', ck)
local requeued = 0
for j = 1, #all, 2 do
  local start = tonumber(string.match(all[j], '^(%d+)'))
  if start >= off then
    redis.call('HDEL', ck, all[j])
    local host, item = split(all[j + 1])
    local key = string.sub(item, 1, 16)
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
"""

# ARGV: conc, host, delay. A robots.txt Crawl-delay: the next start counts from the latest.
_DELAY = r"""
local conc, host, d = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local hk = P .. 'host:' .. host
local st = redis.call('HMGET', hk, 'next', 'last')
local nxt = tonumber(st[1]) or 0
if st[2] then nxt = math.max(nxt, tonumber(st[2]) + d) end
redis.call('HSET', hk, 'delay', d, 'next', nxt)
schedule(host, conc)
return 1
"""

# ARGV: conc, host, default delay. One more request start inside a lease (the page after its
# robots.txt): booked like a claim's, so later claims by any process are spaced behind it.
_RESERVE = r"""
local conc, host = tonumber(ARGV[1]), ARGV[2]
local hk = P .. 'host:' .. host
local st = redis.call('HMGET', hk, 'next', 'pause', 'delay')
local start = math.max(now, tonumber(st[1]) or 0, tonumber(st[2]) or 0)
redis.call('HSET', hk, 'last', start, 'next', start + (tonumber(st[3]) or tonumber(ARGV[3])))
schedule(host, conc)
return 1
"""

_SCRIPTS = {
    name: _PRELUDE + body
    for name, body in (
        ("put", _PUT),
        ("claim", _CLAIM),
        ("ack", _ACK),
        ("release", _RELEASE),
        ("renew", _RENEW),
        ("leave", _LEAVE),
        ("uncommit", _UNCOMMIT),
        ("delay", _DELAY),
        ("reserve", _RESERVE),
    )
}
_SHAS = {name: hashlib.sha1(text.encode()).hexdigest() for name, text in _SCRIPTS.items()}

_COUNT_FIELDS = ("unfinished", "queued", "leased", "d", "f", "s", "hosts", "seen")
#: How often the counters are read back (they ride along with other calls when there are any).
STATS_INTERVAL = 0.1

# -- items ----------------------------------------------------------------------------------------


def url_key(url: str) -> bytes:
    """The URL's key in the seen set: 16 bytes of BLAKE2b, whatever the URL's length."""
    return hashlib.blake2b(url.encode("utf-8"), digest_size=URL_KEY_BYTES).digest()


def _item_json(item: CrawlItem) -> bytes:
    body = json.dumps(
        [item.url, item.redirects_left, item.depth, item.hops, item.via, item.tries],
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return body.encode("utf-8")


def encode_item(item: CrawlItem, key: bytes | None = None) -> bytes:
    """``url-key + JSON``: the key first, so scripts can check the URL's state without JSON."""
    return (key or url_key(item.url)) + _item_json(item)


def decode_item(data: bytes) -> CrawlItem:
    url, redirects_left, depth, hops, via, tries = json.loads(data[URL_KEY_BYTES:])
    return CrawlItem(
        url=url, redirects_left=redirects_left, depth=depth, hops=hops, via=via, tries=tries
    )


def default_process_id() -> str:
    """``hostname-pid``: unique among live processes, and what the WARC names carry."""
    return f"{socket.gethostname()}-{os.getpid()}"


class _Log(Protocol):
    def warning(self, event: str, **kw: Any) -> Any: ...

    def info(self, event: str, **kw: Any) -> Any: ...


# -- the connection -------------------------------------------------------------------------------


class RedisLink:
    """One Redis client (a small connection pool) for one crawl: keys, scripts, outages.

    Shared by the frontier, the digest index and the robots cache of a process, so they wait
    out an outage together. ``available`` tells whether the last request got through.
    """

    def __init__(
        self,
        url: str,
        crawl_id: str,
        *,
        socket_timeout: float = 10.0,
        connect_timeout: float = 5.0,
        max_backoff: float = 2.0,
        log: _Log | None = None,
    ) -> None:
        if not crawl_id:
            raise FrontierError("a Redis frontier needs a crawl id (--crawl-id)")
        if any(ch in crawl_id for ch in "{}\0"):
            raise FrontierError(f"--crawl-id must not contain braces or NUL: {crawl_id!r}")
        self.url = url
        self.crawl_id = crawl_id
        self.prefix = f"archiver:{{{crawl_id}}}:"
        self.meta_key = self.prefix + "meta"
        self.log = log
        self._socket_timeout = socket_timeout
        self._connect_timeout = connect_timeout
        self.max_backoff = max_backoff
        self._client: aioredis.Redis | None = None
        self.epoch = 0  #: bumped on every reconnection after an outage
        self.down_since: float | None = None  #: monotonic time the current outage started
        self._up: asyncio.Event | None = None
        self._down: asyncio.Event | None = None

    @property
    def client(self) -> aioredis.Redis:
        if self._client is None:
            raise FrontierError("the Redis frontier is not open")
        return self._client

    def key(self, name: str) -> str:
        return self.prefix + name

    async def connect(self) -> None:
        """Connect and load the scripts; unreachable Redis is FrontierUnavailableError."""
        self._up, self._down = asyncio.Event(), asyncio.Event()
        self._up.set()
        try:
            client = aioredis.Redis.from_url(
                self.url,
                socket_timeout=self._socket_timeout,
                socket_connect_timeout=self._connect_timeout,
                retry=Retry(NoBackoff(), 0),  # retries are ours: they must survive outages
                decode_responses=False,
            )
        except ValueError as exc:
            raise FrontierUnavailableError(f"bad Redis URL {redact_url(self.url)}: {exc}") from None
        self._client = client
        try:
            await client.ping()
            info = await client.info("server")
            await self.load_scripts()
        except (RedisError, OSError) as exc:
            await client.aclose()
            self._client = None
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise FrontierUnavailableError(
                f"cannot reach Redis at {redact_url(self.url)}: {message}"
            ) from None
        version = str(info.get("redis_version", "0"))
        if int(version.split(".", maxsplit=1)[0]) < 5:
            await self.close()
            raise FrontierUnavailableError(
                f"Redis at {redact_url(self.url)} is version {version}; archiver needs 5 or later"
            )

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(RedisError, OSError):
                await client.aclose()

    async def load_scripts(self) -> None:
        for name, text in _SCRIPTS.items():
            sha = await self.client.script_load(text)
            if sha != _SHAS[name]:  # pragma: no cover - would mean a client encoding change
                raise FrontierError(f"Redis returned sha {sha} for script {name}")

    # -- outage bookkeeping ----------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self.down_since is None

    def went_down(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            if self._up is not None and self._down is not None:
                self._up.clear()
                self._down.set()
            if self.log is not None:
                self.log.warning("redis-unavailable", url=redact_url(self.url), error=str(exc))

    def came_up(self) -> None:
        if self.down_since is not None:
            outage = time.monotonic() - self.down_since
            self.down_since = None
            self.epoch += 1
            if self._up is not None and self._down is not None:
                self._down.clear()
                self._up.set()
            if self.log is not None:
                self.log.warning(
                    "redis-available", url=redact_url(self.url), outage=round(outage, 2)
                )

    async def wait_available(self) -> None:
        assert self._up is not None
        await self._up.wait()

    async def wait_unavailable(self) -> None:
        assert self._down is not None
        await self._down.wait()

    async def reconnect(self) -> None:
        """Wait until Redis answers again (backoff from 50 ms to ``max_backoff``), then reload
        the scripts."""
        delay = min(0.05, self.max_backoff)
        while True:
            await asyncio.sleep(delay)  # backoff, not a wait for an event we could get
            try:
                await self.client.ping()
                await self.load_scripts()
            except _TRANSIENT as exc:
                self.went_down(exc)
                delay = min(delay * 2, self.max_backoff)
                continue
            self.came_up()
            return

    async def call(self, fn: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
        """Run ``fn(client)``, waiting out outages; script errors become FrontierError."""
        while True:
            try:
                result = await fn(self.client)
            except NoScriptError:  # SCRIPT FLUSH, or a fresh server behind the same address
                with contextlib.suppress(*_TRANSIENT):
                    await self.load_scripts()
                continue
            except _TRANSIENT as exc:
                self.went_down(exc)
                await self.reconnect()
                continue
            except ResponseError as exc:
                raise script_error(exc) from None
            if self.down_since is not None:
                self.came_up()
            return result

    async def script(self, name: str, args: Sequence[Any]) -> Any:
        async def run(client: aioredis.Redis) -> Any:
            return await client.evalsha(_SHAS[name], 1, self.meta_key, *args)

        return await self.call(run)


def script_error(exc: ResponseError) -> FrontierError:
    if _STATE_LOST in str(exc):
        return FrontierError(
            "the crawl's state is gone from Redis (was the server restarted without "
            "persistence, or the keys deleted?); stopping"
        )
    return FrontierError(f"Redis script failed: {exc}")


# -- pending work ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Put:
    entries: list[tuple[bytes, str, bytes, CrawlItem]]  # url-key, host, item bytes, item
    future: asyncio.Future[list[int]]


@dataclass(slots=True)
class _Ack:
    lease: Lease
    record: bytes


@dataclass(slots=True)
class _Release:
    tokens: list[int]


@dataclass(slots=True)
class _Command:
    """A plain command (set a host's delay, forget a closed file's commits)."""

    args: tuple[Any, ...]


@dataclass(slots=True)
class _Script:
    """A small script call with no caller waiting (a host's delay, a reservation)."""

    name: str
    args: tuple[Any, ...]


@dataclass(slots=True)
class _Query:
    """A plain command whose caller waits for the reply (a dedup digest lookup)."""

    args: tuple[Any, ...]
    future: asyncio.Future[Any]


@dataclass(slots=True)
class _Barrier:
    future: asyncio.Future[None]


_Op = _Put | _Ack | _Release | _Command | _Script | _Query | _Barrier


@dataclass(slots=True)
class _Round:
    """What one round trip carries, and how to read its replies."""

    ops: list[_Op] = field(default_factory=list)
    calls: list[tuple[str, list[_Op]]] = field(default_factory=list)
    claim: int = 0
    renew_tokens: list[int] | None = None
    stats: bool = False


class RedisFrontier:
    """A frontier shared by every process that opens the same crawl id on the same Redis."""

    persistent = True

    def __init__(
        self,
        url: str,
        crawl_id: str,
        *,
        gate: HostGate | None = None,
        settings: Any = None,
        lease_timeout: float | None = None,
        process_id: str | None = None,
        ack_interval: float = 0.02,
        poll_interval: float = 0.25,
        max_pending: int = 5000,
        close_timeout: float = 30.0,
        log: _Log | None = None,
    ) -> None:
        self.gate = gate or HostGate()
        timeout = lease_timeout
        if timeout is None and settings is not None:
            timeout = getattr(settings, "lease_timeout", None)
        self.lease_timeout = float(timeout or 120.0)
        self.process_id = process_id or default_process_id()
        # Back within a fraction of a lease timeout of Redis's return: the others wait one
        # whole lease timeout after reconnecting before they reap anything.
        self.link = RedisLink(url, crawl_id, max_backoff=min(2.0, self.lease_timeout / 4), log=log)
        self.log = log
        self.ack_interval = ack_interval
        self.poll_interval = poll_interval
        self.max_pending = max_pending
        self.close_timeout = close_timeout
        workers = getattr(settings, "workers", None) if settings is not None else None
        self.max_claim = max(int(workers or 64), 1)
        #: set by ``close()``: True when no other process of the crawl was alive
        self.last_to_leave = False
        self._ops: deque[_Op] = deque()
        self._waiters: deque[asyncio.Future[Lease]] = deque()
        self._stat_waiters: list[asyncio.Future[int]] = []
        self._held: dict[int, Lease] = {}
        self._known: OrderedDict[bytes, None] = OrderedDict()  # url-keys known to be seen
        self._known_limit = 200_000
        self._counts: dict[str, int] = {}
        self._wake: asyncio.Event | None = None
        self._space: asyncio.Event | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._failure: FrontierError | None = None
        self._flush_at = float("inf")
        self._poll_at = 0.0
        self._stats_at = 0.0
        self._idle = 0.0
        self._renew_at = 0.0
        self._connected_since = 0.0
        self._epoch = 0
        self._recover = False
        self._current_file: str | None = None
        self._files: OrderedDict[str, None] = OrderedDict()  # WARC names seen, oldest first
        self._closing = False

    # -- life cycle ------------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        return self.link.prefix

    async def open(self) -> ResumeInfo:
        """Connect (FrontierUnavailableError when Redis cannot be reached), join or create the
        crawl, register this process, start the pump."""
        link = self.link
        await link.connect()
        meta = link.meta_key
        try:
            created = await link.client.hsetnx(meta, "format", STATE_FORMAT)
            if created:
                await link.client.hset(meta, "created", str(time.time()))
            fmt = await link.client.hget(meta, "format")
            if fmt != STATE_FORMAT.encode():
                raise FrontierError(
                    f"crawl {link.crawl_id!r} in Redis has format {fmt!r}, not {STATE_FORMAT}"
                )
            # recover=1: leases under this id belong to a dead predecessor (same host, same
            # pid: a restarted container) and go back to the queue at once
            await link.script(
                "renew", [self.process_id, self.lease_timeout, 1, self.gate.concurrency]
            )
            counts = await link.client.hmget(link.key("counts"), list(_COUNT_FIELDS))
            procs = await link.client.zcard(link.key("procs"))
        except FrontierError:
            await link.close()
            raise
        except (RedisError, OSError) as exc:
            await link.close()
            raise FrontierUnavailableError(f"Redis at {redact_url(link.url)}: {exc}") from None
        self._apply_counts(counts)
        self._wake = asyncio.Event()
        self._space = asyncio.Event()
        self._space.set()
        now = time.monotonic()
        self._connected_since = now
        self._renew_at = now + self.lease_timeout / 3
        self._pump_task = asyncio.create_task(self._pump(), name="redis-frontier")
        info = ResumeInfo(
            resumed=not created,
            queued=self._counts.get("queued", 0),
            done=self._counts.get("d", 0),
        )
        info.notes.append(
            f"{'joined' if not created else 'created'} crawl {link.crawl_id!r} in Redis as "
            f"{self.process_id} ({procs} processes; {info.queued} queued, {info.done} done)"
        )
        return info

    async def close(self) -> None:
        """Flush outcomes, hand back leases never reported, leave the crawl, disconnect."""
        if self._pump_task is None:
            await self.link.close()
            return
        self._closing = True
        try:
            async with asyncio.timeout(self.close_timeout):
                if self._failure is None:
                    await self.flush()
                    await self._finish()
        except (TimeoutError, FrontierError) as exc:
            if self.log is not None:
                self.log.warning(
                    "redis-close-incomplete",
                    error=str(exc) or "timed out",
                    unreported=len(self._held),
                )
        finally:
            task, self._pump_task = self._pump_task, None
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, FrontierError):
                await task
            for waiter in self._waiters:
                waiter.cancel()
            await self.link.close()

    async def _finish(self) -> None:
        tokens = list(self._held)
        if tokens:
            await self.link.script("release", [self.gate.concurrency, *tokens])
            self._held.clear()
        alive = await self.link.script("leave", [self.process_id, self.lease_timeout])
        self.last_to_leave = int(alive) == 0

    async def abandon(self) -> None:
        """Stop at once without reporting or releasing anything: what a killed process leaves
        behind (its leases expire, other processes fetch their URLs). For tests, and for a
        process that must exit now."""
        self._closing = True
        task, self._pump_task = self._pump_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for waiter in self._waiters:
            waiter.cancel()
        await self.link.close()

    # -- the joinable queue ----------------------------------------------------------------

    async def put(self, item: CrawlItem) -> bool:
        return bool(await self.put_many([item]))

    async def put_many(self, items: Iterable[CrawlItem]) -> list[CrawlItem]:
        self._check()
        entries: list[tuple[bytes, str, bytes, CrawlItem]] = []
        batch: set[bytes] = set()
        for item in items:
            key = url_key(item.url)
            if key in batch or key in self._known:
                continue
            batch.add(key)
            host = host_port(item.url)
            entries.append((key, host, key + host.encode() + b"\0" + _item_json(item), item))
        if not entries:
            return []
        loop = asyncio.get_running_loop()
        chunks = [entries[i : i + PUT_CHUNK] for i in range(0, len(entries), PUT_CHUNK)]
        futures: list[asyncio.Future[list[int]]] = []
        for chunk in chunks:  # a script runs alone on the server: keep each one short
            futures.append(loop.create_future())
            self._push(_Put(chunk, futures[-1]), urgent=True)
        new: list[CrawlItem] = []
        for chunk, future in zip(chunks, futures, strict=True):
            new += [chunk[i][3] for i in await future]
        for key, *_ in entries:
            self._remember(key)
        return new

    async def get(self) -> Lease:
        self._check()
        future: asyncio.Future[Lease] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        self._kick()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._give_back([future.result()])
            raise

    async def task_done(self, lease: Lease, result: TaskResult) -> None:
        self._check()
        outcome = result.outcome
        host_pause = result.host_pause
        pause = -1.0 if host_pause is None else host_pause
        self.gate.release(lease.host, result)  # this process's mirror
        item = lease.item.retry() if outcome is Outcome.RETRY else lease.item
        parts = [
            str(lease.token),
            _OUTCOME_CODES[outcome],
            str(int(host_report(result))),
            repr(pause),
            repr(result.retry_after or 0.0),
            str(len(result.captures)),
            lease.host,
        ]
        for capture in result.captures:
            parts += [capture.filename, str(capture.start), str(capture.end)]
            self._note_file(capture.filename)
        record = "\0".join(parts).encode() + b"\0" + encode_item(item)
        # a host asking us to slow down is told to every process at once
        self._push(_Ack(lease, record), urgent=pause >= 0)
        if len(self._ops) >= self.max_pending:
            assert self._space is not None
            self._space.clear()
            await self._space.wait()

    def _note_file(self, filename: str) -> None:
        """A file never seen before means the writer rotated: the previous file was closed
        whole, so its commit record (only needed to repair an ``.open`` file) can go. An
        outcome for an older file arriving late never moves this back."""
        if filename in self._files:
            return
        self._files[filename] = None
        if len(self._files) > 1000:
            self._files.popitem(last=False)
        if self._current_file is not None:
            self._push(_Command(("DEL", self.link.key("commits:" + self._current_file))))
        self._current_file = filename

    async def forget_captures(self, filenames: Iterable[str]) -> None:
        """Drop the commit records of WARC files that were closed whole (call after the
        writer closed cleanly; otherwise they expire after 7 days)."""
        keys = [self.link.key("commits:" + name) for name in filenames]
        if keys:

            async def delete(client: aioredis.Redis) -> None:
                await client.delete(*keys)

            await self.link.call(delete)

    async def join(self) -> None:
        """Return when no URL is pending in any process. A fatal frontier error is raised by
        ``get``/``task_done`` (every worker calls them); ``join`` then simply keeps waiting."""
        while True:
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            self._stat_waiters.append(future)
            self._kick()
            if await future == 0:
                return

    def statistics(self) -> FrontierStats:
        c = self._counts
        return FrontierStats(
            queued=c.get("queued", 0),
            in_flight=c.get("leased", 0),
            done=c.get("d", 0),
            failed=c.get("f", 0),
            skipped=c.get("s", 0),
            seen=c.get("seen", 0),
            hosts=c.get("hosts", 0),
        )

    @property
    def available(self) -> bool:
        """False while Redis cannot be reached (workers are waiting)."""
        return self.link.available

    async def wait_available(self) -> None:
        await self.link.wait_available()

    async def wait_unavailable(self) -> None:
        await self.link.wait_unavailable()

    def set_host_delay(self, host: str, seconds: float) -> None:
        """Apply a robots.txt Crawl-delay, for every process (claims read it from Redis)."""
        gate = self.gate
        gate.set_crawl_delay(host, seconds)  # this process's mirror, for ``reserve``
        delay = max(gate.delay, min(seconds, gate.max_crawl_delay))
        self._push(_Script("delay", (gate.concurrency, host, repr(delay))), urgent=True)

    def reserve(self, host: str) -> float:
        """Book one more request to ``host`` inside the current lease; the seconds to wait.

        The protocol makes this synchronous, so the wait comes from this process's mirror of
        the host (its own claims, the host's delay) and the booking goes to Redis at once,
        where it spaces every later claim. A request another process started to the same host
        since this lease was claimed is not seen here: with a delay and more than one slot per
        host, this page may start closer than ``delay`` to that one (never to this process's
        own requests). An ``async`` reserve would close that gap (see the issue 7 report).
        """
        wait = self.gate.reserve(host)
        self._push(
            _Script("reserve", (self.gate.concurrency, host, repr(self.gate.delay))), urgent=True
        )
        return wait

    # -- resume ----------------------------------------------------------------------------

    async def committed_captures(self, filename: str) -> set[tuple[int, int]]:
        async def fields(client: aioredis.Redis) -> list[bytes]:
            return cast(list[bytes], await client.hkeys(self.link.key("commits:" + filename)))

        found: set[tuple[int, int]] = set()
        for raw in await self.link.call(fields):
            start, end = raw.split(b" ")
            found.add((int(start), int(end)))
        return found

    async def uncommit_captures(self, filename: str, offset: int) -> int:
        return int(await self.link.script("uncommit", [self.gate.concurrency, filename, offset]))

    # -- shared services -------------------------------------------------------------------

    def digest_index(self) -> RedisDigestIndex:
        """The crawl's dedup digests, through this frontier's pump."""
        return RedisDigestIndex(self)

    def send(self, *args: Any) -> None:
        """Send a plain command with the next round trip; nobody waits for its reply."""
        self._check()
        self._push(_Command(args))

    async def ask(self, *args: Any) -> Any:
        """Send a plain command with the next round trip (at once) and return its reply."""
        self._check()
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._push(_Query(args, future), urgent=True)
        return await future

    def robots_cache(self) -> RedisRobotsCache:
        """The crawl's robots.txt cache, on this frontier's connection."""
        return RedisRobotsCache(self.link)

    # -- internals: calls to the pump ------------------------------------------------------

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._pump_task is None:
            raise FrontierError("the Redis frontier is not open")

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _push(self, op: _Op, *, urgent: bool = False) -> None:
        self._ops.append(op)
        if urgent or len(self._ops) >= FLUSH_BATCH:
            self._flush_at = 0.0
        else:
            self._flush_at = min(self._flush_at, time.monotonic() + self.ack_interval)
        self._kick()

    def give_back(self, lease: Lease) -> None:
        self._give_back([lease])

    def _give_back(self, leases: list[Lease]) -> None:
        for lease in leases:
            self.gate.release(lease.host)
        self._push(_Release([lease.token for lease in leases]), urgent=True)

    async def flush(self) -> None:
        """Wait until every call made so far (puts, outcomes, host delays) is in Redis, and the
        counters (``statistics()``) are read back."""
        self._check()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._push(_Barrier(future), urgent=True)
        await future

    def _remember(self, key: bytes) -> None:
        known = self._known
        known[key] = None
        if len(known) > self._known_limit:
            known.popitem(last=False)

    def _live_waiters(self) -> int:
        return sum(1 for waiter in self._waiters if not waiter.done())

    def _fail(self, error: FrontierError) -> None:
        """A fatal error: every caller, now and later, gets it."""
        self._failure = error
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)
        while self._ops:
            op = self._ops.popleft()
            if isinstance(op, _Put | _Query | _Barrier) and not op.future.done():
                op.future.set_exception(error)
        if self._space is not None:
            self._space.set()

    # -- internals: the pump ---------------------------------------------------------------

    def _next_wake(self, now: float) -> float:
        at = self._renew_at
        if self._ops:
            at = min(at, self._flush_at)
        if self._live_waiters() and not self._closing:
            at = min(at, self._poll_at)
        if self._stat_waiters:
            at = min(at, self._stats_at)
        return at - now

    async def _pump(self) -> None:
        assert self._wake is not None
        while True:
            timeout = self._next_wake(time.monotonic())
            if timeout > 0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._wake.wait()
            self._wake.clear()
            try:
                await self._round()
            except FrontierError as exc:
                self._fail(exc)
                return
            except Exception as exc:  # a bug or an unexpected reply: loud, never a hang
                self._fail(FrontierError(f"the Redis frontier failed: {exc!r}"))
                return

    def _plan(self, now: float) -> _Round:
        plan = _Round()
        waiting = 0 if self._closing else self._live_waiters()
        if self._ops and (now >= self._flush_at or waiting):
            while self._ops and len(plan.ops) < 1000:
                plan.ops.append(self._ops.popleft())
            self._flush_at = self._flush_at_for_rest(now)
        writes = any(isinstance(op, _Put | _Ack | _Release) for op in plan.ops)
        if waiting and (now >= self._poll_at or writes):
            plan.claim = min(waiting, self.max_claim)
        if self.link.epoch != self._epoch:  # reconnected: renew now, recover lost claims
            self._epoch = self.link.epoch
            self._recover = True
            self._connected_since = now
        if now >= self._renew_at or self._recover:
            reported = {op.lease.token for op in plan.ops if isinstance(op, _Ack)}
            plan.renew_tokens = [token for token in self._held if token not in reported]
        return plan

    def _flush_at_for_rest(self, now: float) -> float:
        if not self._ops:
            return float("inf")
        if len(self._ops) >= FLUSH_BATCH:
            return 0.0
        urgent = any(isinstance(op, _Put | _Release | _Query | _Barrier) for op in self._ops)
        return 0.0 if urgent else now + self.ack_interval

    async def _round(self) -> None:
        now = time.monotonic()
        plan = self._plan(now)
        busy = plan.ops or plan.claim or plan.renew_tokens is not None
        barrier = any(isinstance(op, _Barrier) for op in plan.ops)
        plan.stats = barrier or (now >= self._stats_at and bool(busy or self._stat_waiters))
        if not busy and not plan.stats:
            return
        link = self.link
        pipe = link.client.pipeline(transaction=False)
        conc = self.gate.concurrency
        self._group(plan, pipe, conc)
        if plan.renew_tokens is not None:
            args: list[Any] = [self.process_id, self.lease_timeout, int(self._recover), conc]
            pipe.evalsha(_SHAS["renew"], 1, link.meta_key, *args, *plan.renew_tokens)
        if plan.claim:
            may_reap = int(now - self._connected_since >= self.lease_timeout)
            pipe.evalsha(
                _SHAS["claim"],
                1,
                link.meta_key,
                self.process_id,
                plan.claim,
                conc,
                repr(self.gate.delay),
                repr(self.lease_timeout),
                may_reap,
            )
        if plan.stats:
            pipe.hmget(link.key("counts"), list(_COUNT_FIELDS))
        try:
            replies = await pipe.execute(raise_on_error=False)
        except _TRANSIENT as exc:
            await self._retry_later(plan, exc)
            return
        for reply in replies:
            if isinstance(reply, (NoScriptError, *_TRANSIENT)):
                await self._retry_later(plan, cast(BaseException, reply))
                return
        if link.down_since is not None:
            link.came_up()
        self._settle(plan, replies, now)

    def _group(self, plan: _Round, pipe: Any, conc: int) -> None:
        """Consecutive puts share one PUT call, consecutive outcomes one ACK call."""
        meta = self.link.meta_key
        run: list[_Op] = []
        kind = ""

        def emit() -> None:
            if kind == "put":
                args: list[Any] = [conc]
                for op in run:
                    assert isinstance(op, _Put)
                    args += [data for _, _, data, _ in op.entries]
                pipe.evalsha(_SHAS["put"], 1, meta, *args)
            elif kind == "ack":
                backoff = self.gate.backoff
                args = [
                    conc,
                    repr(min(self.gate.max_pause, 1e12)),
                    backoff.threshold,
                    repr(backoff.first),
                    repr(backoff.factor),
                    COMMITS_TTL,
                ]
                for op in run:
                    assert isinstance(op, _Ack)
                    args.append(op.record)
                pipe.evalsha(_SHAS["ack"], 1, meta, *args)
            if run:
                plan.calls.append((kind, list(run)))

        for op in plan.ops:
            this = "put" if isinstance(op, _Put) else "ack" if isinstance(op, _Ack) else ""
            if this != kind or len(run) >= 200:
                emit()
                run, kind = [], this
            if this:
                run.append(op)
            elif isinstance(op, _Release):
                pipe.evalsha(_SHAS["release"], 1, meta, conc, *op.tokens)
                plan.calls.append(("release", [op]))
            elif isinstance(op, _Command):
                pipe.execute_command(*op.args)
                plan.calls.append(("command", [op]))
            elif isinstance(op, _Query):
                pipe.execute_command(*op.args)
                plan.calls.append(("query", [op]))
            elif isinstance(op, _Script):
                pipe.evalsha(_SHAS[op.name], 1, meta, *op.args)
                plan.calls.append(("command", [op]))
            # a _Barrier sends nothing: it is settled once everything before it was
        emit()

    async def _retry_later(self, plan: _Round, exc: BaseException) -> None:
        """Nothing of this round is known to have happened: send it all again, in order, once
        Redis answers (every script tolerates being applied twice)."""
        self._ops.extendleft(reversed(plan.ops))
        self._flush_at = 0.0 if self._ops else float("inf")
        if isinstance(exc, NoScriptError):  # SCRIPT FLUSH, or a failover to a fresh replica
            with contextlib.suppress(*_TRANSIENT):
                await self.link.load_scripts()
                return
        self.link.went_down(exc)
        await self.link.reconnect()

    def _settle(self, plan: _Round, replies: list[Any], now: float) -> None:
        index = 0
        for kind, ops in plan.calls:
            reply = replies[index]
            index += 1
            if isinstance(reply, ResponseError):
                raise script_error(reply)
            if kind == "put":
                self._settle_puts(ops, reply)
            elif kind == "ack":
                for op in ops:
                    assert isinstance(op, _Ack)
                    self._held.pop(op.lease.token, None)
            elif kind == "release":
                for op in ops:
                    assert isinstance(op, _Release)
                    for token in op.tokens:
                        self._held.pop(token, None)
            elif kind == "query":
                for op in ops:
                    assert isinstance(op, _Query)
                    if not op.future.done():
                        op.future.set_result(reply)
        for op in plan.ops:
            if isinstance(op, _Barrier) and not op.future.done():
                op.future.set_result(None)
        if plan.renew_tokens is not None:
            reply = replies[index]
            index += 1
            if isinstance(reply, ResponseError):
                raise script_error(reply)
            lost, recovered = reply
            if (lost or recovered) and self.log is not None:
                self.log.warning(
                    "redis-leases-lost",
                    lost=len(lost),
                    recovered=int(recovered),
                    note="leases expired or were claimed while this process could not renew them",
                )
            self._recover = False
            self._renew_at = now + self.lease_timeout / 3
        if plan.claim:
            reply = replies[index]
            index += 1
            if isinstance(reply, ResponseError):
                raise script_error(reply)
            self._settle_claim(plan.claim, reply, now)
        if plan.stats:
            self._apply_counts(replies[index])
            self._stats_at = now + STATS_INTERVAL
            waiters, self._stat_waiters = self._stat_waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(self._counts["unfinished"])
        if self._space is not None and len(self._ops) < self.max_pending:
            self._space.set()

    def _settle_puts(self, ops: list[_Op], reply: list[int]) -> None:
        new = [int(i) for i in reply]
        start = 0
        for op in ops:
            assert isinstance(op, _Put)
            end = start + len(op.entries)
            mine = [i - start for i in new if start <= i < end]
            if not op.future.done():
                op.future.set_result(mine)
            start = end
        if new:
            self._poll_at = 0.0  # new work: worth claiming at once
            self._idle = 0.0

    def _settle_claim(self, wanted: int, reply: list[Any], now: float) -> None:
        flat, hint_text, reaped, _stale = reply
        leases = []
        for raw in flat:
            token, host, data = raw.split(b"\0", 2)
            lease = Lease(item=decode_item(data), host=host.decode(), token=int(token))
            self._held[lease.token] = lease
            self.gate.acquire(lease.host)  # this process's mirror (``reserve``, paused hosts)
            leases.append(lease)
        if int(reaped) and self.log is not None:
            self.log.warning("redis-leases-reaped", count=int(reaped))
        unused: list[Lease] = []
        for lease in leases:
            while self._waiters and self._waiters[0].done():
                self._waiters.popleft()
            if self._waiters:
                self._waiters.popleft().set_result(lease)
            else:
                unused.append(lease)
        if unused:
            self._give_back(unused)
        if len(leases) >= wanted:
            self._idle = 0.0
            self._poll_at = 0.0
            return
        self._idle = min(max(self._idle * 2, 0.005), self.poll_interval)
        wait = self._idle
        hint = float(hint_text)
        if hint >= 0:
            wait = min(wait, max(hint, 0.001))
        self._poll_at = now + wait

    def _apply_counts(self, counts: list[Any]) -> None:
        self._counts = {
            name: int(value) if value is not None else 0
            for name, value in zip(_COUNT_FIELDS, counts, strict=True)
        }
        self._counts["unfinished"] = max(self._counts["unfinished"], 0)


# -- dedup digests --------------------------------------------------------------------------------


class RedisDigestIndex:
    """The DigestIndex (:mod:`archiver.dedup.digests`) of a crawl shared in Redis: payload digest ->
    the original capture (record id, URI, date), first writer wins (``HSETNX``).

    Both calls ride the frontier's pump (one pipelined round trip for everything pending)
    instead of a round trip each: per capture that was ~15 % of a Redis crawl's CPU. An
    ``add`` is sent with the next round trip (within ``ack_interval``) without waiting, so
    another process may miss a digest for a few milliseconds and store that payload in full:
    a missed revisit, never a revisit pointing at nothing (``add`` follows the write).
    """

    def __init__(self, frontier: RedisFrontier) -> None:
        self._frontier = frontier
        self._key = frontier.link.key("digests")

    async def lookup(self, digest: str) -> Original | None:
        raw = await self._frontier.ask("HGET", self._key, digest)
        if raw is None:
            return None
        record_id, uri, date = json.loads(raw)
        return Original(record_id, uri, date)

    async def add(self, digest: str, original: Original) -> None:
        value = json.dumps([original.record_id, original.target_uri, original.date])
        self._frontier.send("HSETNX", self._key, digest, value)

    async def close(self) -> None:
        """Nothing to close: the frontier owns the connection (and flushes on close)."""


# -- robots.txt cache -----------------------------------------------------------------------------


class RedisRobotsCache:
    """robots.txt per origin in ``P:robots:ORIGIN`` with a TTL (24 hours by default, RFC 9309
    section 2.4): one process fetches (and archives) an origin's robots.txt, the others parse
    the cached copy. Stored as ``"STATUS FETCHED_AT URL\\n" + body`` in one string key."""

    def __init__(self, link: RedisLink) -> None:
        self.link = link

    async def get(self, origin: str) -> CachedRobots | None:
        key = self.link.key("robots:" + origin)

        async def read(client: aioredis.Redis) -> bytes | None:
            return cast(bytes | None, await client.get(key))

        raw = await self.link.call(read)
        if raw is None:
            return None
        head, _, body = raw.partition(b"\n")
        status, fetched, url = head.decode("utf-8").split(" ", 2)
        return CachedRobots(body, int(status) if status != "-" else None, float(fetched), url)

    async def set(self, origin: str, entry: CachedRobots, ttl: float = ROBOTS_TTL) -> None:
        key = self.link.key("robots:" + origin)
        status = "-" if entry.status is None else str(entry.status)
        value = f"{status} {entry.fetched_at!r} {entry.url}\n".encode() + entry.body

        async def write(client: aioredis.Redis) -> None:
            await client.set(key, value, px=max(int(ttl * 1000), 1))

        await self.link.call(write)
