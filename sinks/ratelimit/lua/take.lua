-- Wait or take: one bucket slot and one reserved global token (Slot.wait in Lua).
-- KEYS: 1 route -> hash map, 2 global state, 3 live limiter processes
-- ARGV: 1 prefix, 2 route key, 3 major, 4 meter interval, 5 meter period, 6 ttl ms, 7 process id,
--       8 meter floor: seconds of meter backlog this process ran up on its fallback
local hash = redis.call('HGET', KEYS[1], ARGV[2])
local key
if hash then
  key = ARGV[1] .. ':b:' .. hash .. ':' .. ARGV[3]
else
  key = ARGV[1] .. ':r:' .. ARGV[2] .. ':' .. ARGV[3]
end
redis.call('ZADD', KEYS[3], now, ARGV[7])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - 60)
redis.call('PEXPIRE', KEYS[3], ttl)
local peers = redis.call('ZCARD', KEYS[3])

local b = redis.call('HMGET', key, 'limit', 'remaining', 'reset_at', 'slot_at', 'blocked_until', 'seq',
  'window')
local limit = tonumber(b[1])
local remaining = tonumber(b[2])
local reset_at = tonumber(b[3]) or 0
local slot_at = tonumber(b[4]) or 0
local seq = tonumber(b[6]) or 0
local window = tonumber(b[7])
local delay = (tonumber(b[5]) or 0) - now
if remaining ~= nil and remaining <= 0 then
  if now + 1e-9 >= reset_at then
    -- Refilled without an answer: the next window starts now (other processes take
    -- from it before any response tells us more, so it must not refill again at once).
    remaining = limit
    if window then reset_at = now + window end
    -- Answers that never came (a lost response) stop counting as in flight.
    redis.call('HSET', key, 'done', seq)
  else
    delay = math.max(delay, slot_at - now)
  end
end
local g = redis.call('HMGET', KEYS[2], 'tat', 'paused_until')
delay = math.max(delay, (tonumber(g[2]) or 0) - now)
if delay > 1e-9 then
  return {0, fmt(delay), key, seq, peers}
end

seq = seq + 1
if remaining ~= nil then
  remaining = remaining - 1
  if remaining <= 0 and slot_at <= now then
    slot_at = reset_at
  end
  redis.call('HSET', key, 'seq', seq, 'remaining', remaining, 'reset_at', fmt(reset_at),
    'slot_at', fmt(slot_at))
else
  redis.call('HSET', key, 'seq', seq)
end
redis.call('PEXPIRE', key, ttl)

local wait = 0
local interval = tonumber(ARGV[4])
if interval > 0 then
  local tat = math.max(tonumber(g[1]) or now, now + tonumber(ARGV[8]))
  wait = math.max(0, tat + interval - tonumber(ARGV[5]) - now)
  redis.call('HSET', KEYS[2], 'tat', fmt(tat + interval))
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return {1, fmt(wait), key, seq, peers}
