"""rxcord's pipeline: core vocabulary (leaf modules) and the composed chain (top layer).

The chain and runner are loaded lazily (PEP 562) so that ``operators``,
``providers`` and ``sinks`` can import ``pipeline.types`` without an import
cycle.
"""

from loguru import logger

logger.disable(__name__)
