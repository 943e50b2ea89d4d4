"""The package's version, as installed: ``pyproject.toml`` is the one place it is written.

Read from the installed distribution's metadata, so ``rxcord.__version__``, the Discord
user agent and anything else that names the version cannot drift from the release.
"""

from __future__ import annotations

__all__ = ("__version__",)

from importlib.metadata import version
from typing import Final

__version__: Final = version("rxcord")
