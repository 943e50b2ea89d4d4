"""I/O beside the stream that is neither a provider nor Discord: the Redis stop bus, the replay server."""
