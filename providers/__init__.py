"""rxcord.providers: provider adapters and the HTTP transport (stages 01-03)."""
