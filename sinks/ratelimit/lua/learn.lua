-- Learn one response: discovery, headers (sequence-aware), 429 blocks (RateLimiter.learn in Lua).
-- KEYS: 1 the key the take used, 2 route -> hash map, 3 global state
-- ARGV: 1 prefix, 2 route key, 3 major, 4 take seq, 5 bucket hash or '', 6 ttl ms,
--       7 limit, 8 remaining, 9 reset after (all three or none), 10 sliding '1'/'0',
--       11 block seconds or '', 12 global '1'/'0'
local target = KEYS[1]
local foreign = false
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ttl)
  local canonical = ARGV[1] .. ':b:' .. ARGV[5] .. ':' .. ARGV[3]
  if canonical ~= target then
    target = canonical
    foreign = true
  end
end

-- Every answer counts as done on the key its take used, headers or not: the takes on a
-- key that are not done are in flight (see redis.py's docstring).
local done = redis.call('HINCRBY', KEYS[1], 'done', 1)
redis.call('PEXPIRE', KEYS[1], ttl)

local limit = tonumber(ARGV[7])
local seen = tonumber(ARGV[8])
local reset_after = tonumber(ARGV[9])
if limit and seen and reset_after and limit > 0 then
  local b = redis.call('HMGET', target, 'limit', 'remaining', 'reset_at', 'seq', 'aseq')
  local seq = tonumber(b[4]) or 0
  local aseq = tonumber(b[5]) or 0
  local take_seq = tonumber(ARGV[4])
  local reset_at = now + reset_after
  local apply = true
  local pending = 0
  local remaining
  if foreign then
    -- Discovery: the take was filed under the route key (or an old hash), so the
    -- target's own takes are unknown to this answer and ours unknown to the target;
    -- nor are the other takes still in flight on the old key.
    local old_seq = tonumber(redis.call('HGET', KEYS[1], 'seq')) or 0
    pending = seq - aseq + math.max(0, old_seq - done)
    remaining = seen - pending
    if b[1] then
      local stored = tonumber(b[2])
      if stored then remaining = math.min(remaining, stored - 1) end
      reset_at = math.max(reset_at, tonumber(b[3]) or 0)
    end
  elseif take_seq <= aseq then
    apply = false  -- a newer answer was applied already
  else
    -- Every other take still in flight, later *and* earlier ones: requests from several
    -- processes can reach Discord in another order than they were taken.
    pending = math.max(0, seq - done)
    remaining = seen - pending
    aseq = take_seq
  end
  if apply then
    local slot_at
    if remaining > 0 then
      slot_at = now
    elseif pending == 0 and seen <= 0 then
      if ARGV[10] == '1' then slot_at = now + reset_after / limit else slot_at = reset_at end
    else
      slot_at = reset_at  -- later takes spent what this answer saw: assume the whole window
    end
    redis.call('HSET', target, 'limit', limit, 'remaining', remaining, 'reset_at', fmt(reset_at),
      'slot_at', fmt(slot_at), 'aseq', aseq)
    if seen < limit then
      -- A sliding bucket: each request adds window / limit to reset_after.
      redis.call('HSET', target, 'window', fmt(reset_after * limit / (limit - seen)))
    end
    redis.call('PEXPIRE', target, ttl)
  end
end

if ARGV[11] ~= '' then
  local until_at = now + tonumber(ARGV[11])
  local where = target
  local field = 'blocked_until'
  if ARGV[12] == '1' then
    where = KEYS[3]
    field = 'paused_until'
  end
  local old = tonumber(redis.call('HGET', where, field)) or 0
  redis.call('HSET', where, field, fmt(math.max(old, until_at)))
  redis.call('PEXPIRE', where, ttl)
end
return 1
