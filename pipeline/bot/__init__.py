"""``rxcord bot``: a ready-to-run Discord bot on discord.py, built on rxcord's public API.

``rxcord bot --config bot.toml`` (install ``rxcord[bot]``). The configuration file is described
in ``rxcord.bot.config`` and ``example.toml`` (shipped with the package); the bot itself in
``rxcord.bot.app``, on the building blocks of ``rxcord.discord`` (the conversation it sends the
model: ``rxcord.discord.read_conversation``).
"""
