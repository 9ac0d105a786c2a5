"""Leases in Redis: small Lua scripts, so that each rule is one atomic step on the server.

A lease is a hash key, ``owner`` and ``since`` (the server's clock in milliseconds when the owner claimed it), with
a server-side expiry, so an expired lease simply no longer exists. The previous release kept a lease as a plain
string holding the owner; every script reads that form too (as a lease whose start is unknown), so a lease taken
by a worker of that release stays exclusive until it ends. Redis 5 and later replicate a script by its effects, so a
script may read ``TIME`` before it writes.
"""

from __future__ import annotations

from typing import Any

from ._base import Lease

__all__ = [
    "REDIS_BREAK",
    "REDIS_CLAIM",
    "REDIS_FENCED_WRITE",
    "REDIS_HOLDER",
    "REDIS_RENEW",
    "redis_lease",
    "redis_ttl_ms",
]

# lease(key) -> owner, start in ms (nil when unknown); false when the lease is free.
_READ = """
local function lease(key)
  local kind = redis.call('TYPE', key).ok
  if kind == 'hash' then
    local fields = redis.call('HMGET', key, 'owner', 'since')
    return fields[1], tonumber(fields[2])
  elseif kind == 'string' then
    return redis.call('GET', key), nil
  end
  return false, nil
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- {owner, ms held, ms left} of a lease read with lease()
local function figures(key, owner, since)
  local held = 0
  if since then held = now_ms() - since end
  return {owner, held, redis.call('PTTL', key)}
end
"""

# KEYS[1] = lease key, ARGV[1] = owner, ARGV[2] = ttl in milliseconds. Re-claiming one's own lease renews it and
# keeps its start.
REDIS_CLAIM = (
    _READ
    + """
local owner, since = lease(KEYS[1])
if owner == ARGV[1] and since then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if owner then
  if owner ~= ARGV[1] then return 0 end
  redis.call('DEL', KEYS[1])  -- the owner's own lease in the previous release's form
end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'since', string.format('%.0f', now_ms()))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
)

# KEYS[1] = lease key, ARGV[1] = owner, ARGV[2] = ttl in milliseconds; 1 when the owner held it (a lapsed lease no
# longer exists, so it is never renewed), 0 else.
REDIS_RENEW = (
    _READ
    + """
if lease(KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
)

# KEYS[1] = lease key, ARGV[1] = owner; 1 when it deleted the lease. Another owner's lease is left alone. Releasing
# and breaking are the same step: a lapsed lease no longer exists to be deleted.
REDIS_BREAK = (
    _READ
    + """
if lease(KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
)

# KEYS[1] = lease key; {owner, ms held, ms left}, or nil when the lease is free.
REDIS_HOLDER = (
    _READ
    + """
local owner, since = lease(KEYS[1])
if not owner then return false end
return figures(KEYS[1], owner, since)
"""
)

# KEYS[1] = lease key, KEYS[2] = data key, ARGV[1] = owner, ARGV[2] = 'set' or 'delete', ARGV[3] = the data.
# 1 when written; else nothing is written and the answer is the holder now: 0 when the lease is free, else
# {owner, ms held, ms left}.
REDIS_FENCED_WRITE = (
    _READ
    + """
local owner, since = lease(KEYS[1])
if owner == ARGV[1] then
  if ARGV[2] == 'set' then redis.call('SET', KEYS[2], ARGV[3]) else redis.call('DEL', KEYS[2]) end
  return 1
end
if not owner then return 0 end
return figures(KEYS[1], owner, since)
"""
)


def redis_ttl_ms(ttl: float) -> int:
    return max(1, round(ttl * 1000))


def redis_lease(reply: Any) -> Lease | None:
    """The ``Lease`` in a script's {owner, ms held, ms left}; None for any other answer (a free lease)."""
    if not isinstance(reply, list):
        return None
    owner, held, left = reply
    return Lease(owner=bytes(owner).decode("utf-8"), held_for=max(0, held) / 1000, expires_in=max(0, left) / 1000)
