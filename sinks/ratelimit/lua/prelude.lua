-- The opening every script but debt.lua shares (RedisStore prepends it): Redis's own clock as
-- `now`, the fixed-precision number format, and the key TTL (ARGV[6], milliseconds).
if redis.replicate_commands then pcall(redis.replicate_commands) end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function fmt(x) return string.format('%.6f', x) end
local ttl = tonumber(ARGV[6])
