# rxcord bot in a container: `docker compose up` (compose.yaml), or
#   docker build -t rxcord . && docker run -v "$PWD/config:/config" -e DISCORD_BOT_TOKEN -e OPENROUTER_API_KEY rxcord
# The config folder holds bot.toml and, next to it, the bot's state (the limits' counters, the
# /model choices): mount it writable for the rxcord user. Secrets come from the environment only.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY pipeline ./pipeline
COPY operators ./operators
COPY providers ./providers
COPY sinks ./sinks
RUN pip install ".[bot,redis]" \
    && useradd --create-home --uid 10001 --shell /usr/sbin/nologin rxcord \
    && mkdir /config && chown rxcord:rxcord /config

# Never root: the bot needs no privilege, only its config folder.
USER rxcord
WORKDIR /home/rxcord
VOLUME ["/config"]

# SIGTERM (docker stop) stops every answer gracefully, flushed, then closes the gateway.
STOPSIGNAL SIGTERM
CMD ["rxcord", "bot", "--config", "/config/bot.toml"]
