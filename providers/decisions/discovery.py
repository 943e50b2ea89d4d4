"""Discovery of OpenRouter's decision models: the global native options (pure, no I/O).

OpenRouter lists its models at ``GET /api/v1/models`` (``?output_modalities=decisions`` narrows
it). An entry becomes an option only when it says so explicitly and can be bounded:

* ``architecture.output_modalities`` contains ``"decisions"`` (a chat model never qualifies);
* ``pricing.prompt`` and ``pricing.completion`` are finite, non-negative prices (strings or numbers);
* ``context_length`` (state plus questions) is a positive integer: the request's byte ceiling.

Discovered options are *global* (``registration_id=None``): availability only. They admit no
model by themselves (``validate_model`` still decides) and select none.
"""

from __future__ import annotations

__all__ = ("discover_openrouter_models",)

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from rxcord.providers.decisions.selection import DecisionModelOption
from rxcord.providers.decisions.types import DecisionProtocol
from rxcord.providers.decisions.wire_openrouter import OPENROUTER_DECISIONS_ORIGIN

_MODEL_ID_RE: Final = re.compile(r"~?[a-z0-9][a-z0-9._\-]*/[A-Za-z0-9._:\-]+")


def _price(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def _option(entry: Mapping[str, Any], base_url: str) -> DecisionModelOption | None:
    model_id = entry.get("id")
    architecture = entry.get("architecture")
    pricing = entry.get("pricing")
    context = entry.get("context_length")
    if not isinstance(model_id, str) or _MODEL_ID_RE.fullmatch(model_id) is None:
        return None
    if not isinstance(architecture, Mapping):
        return None
    modalities = architecture.get("output_modalities")
    if not isinstance(modalities, list) or "decisions" not in modalities:
        return None
    if not isinstance(pricing, Mapping) or _price(pricing.get("prompt")) is None:
        return None
    if _price(pricing.get("completion")) is None:
        return None
    if isinstance(context, bool) or not isinstance(context, int) or context < 1:
        return None
    name = entry.get("name")
    return DecisionModelOption(
        provider="openrouter",
        model_id=model_id,
        protocol=DecisionProtocol.OPENROUTER,
        base_url=base_url,
        max_input_tokens=context,
        label=name if isinstance(name, str) else model_id,
    )


def discover_openrouter_models(
    catalog: object, *, base_url: str = OPENROUTER_DECISIONS_ORIGIN
) -> tuple[DecisionModelOption, ...]:
    """The decision options in an OpenRouter model list (``{"data": [...]}``), in its order, once each."""
    entries = catalog.get("data") if isinstance(catalog, Mapping) else None
    if not isinstance(entries, list):
        return ()
    options: dict[str, DecisionModelOption] = {}
    for entry in entries:
        option = _option(entry, base_url) if isinstance(entry, Mapping) else None
        if option is not None and option.model_id not in options:
            options[option.model_id] = option
    return tuple(options.values())
