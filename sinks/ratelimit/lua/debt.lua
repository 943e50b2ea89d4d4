-- Charge the shared meter for sends the fallback admitted (so the processes still on Redis slow down).
-- KEYS: 1 global state; ARGV: 1 seconds of meter time the fallback spent, 2 ttl ms
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local tat = math.max(tonumber(redis.call('HGET', KEYS[1], 'tat')) or now, now) + tonumber(ARGV[1])
redis.call('HSET', KEYS[1], 'tat', string.format('%.6f', tat))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
