"""sinks package of rxcord."""

from loguru import logger

logger.disable(__name__)
