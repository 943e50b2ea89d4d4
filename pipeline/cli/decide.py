"""``rxcord decide``: one Decision call from the command line.

::

    rxcord decide --protocol {openrouter,systemone,openai} --base-url URL --model MODEL
                  --evidence-file FILE --questions-file FILE [--allow-loopback]
                  [--api-key-env NAME] --json

The key comes from the variable named by ``--api-key-env``, else
``OPENROUTER_API_KEY`` (then ``RXCORD_API_KEY``) for ``openrouter`` and
``RXCORD_API_KEY`` for the custom protocols; a missing key sends no
``Authorization`` header. ``--allow-loopback`` is the SSRF guard's opt-out (a
server on 127.0.0.1). The request's byte ceiling is ``CLI_MAX_INPUT_TOKENS``.

``--json`` prints one object: ``kind``, ``answers`` (``{"id", "probability"}`` or
``{"id", "refusal": true}``), ``usage`` (``null`` when unknown; ``cost`` ``null``
when not reported), ``model``, ``provider_request_id`` and ``usage_reports`` (what
the usage callback received, in order). Every kind is a result (exit 0); a reason
for a kind without answers goes to stderr, in one line (an answer that is not JSON or
is nested too deeply included: ``failed (malformed-response, invalid-json)``). Unusable
input exits 2 with one line: an unreadable file, a questions file that is not JSON
(one nested deeper than ``rxcord.core.safe_json.MAX_DEPTH`` included), a bad flag.
"""

from __future__ import annotations

__all__ = ("CLI_MAX_INPUT_TOKENS", "decide_command", "decision_report")

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Final

from rxcord.core import safe_json
from rxcord.core.errors import InputError, MalformedJsonError
from rxcord.core.types import Usage
from rxcord.providers.decisions import (
    DecisionConfig,
    DecisionCredentials,
    DecisionDirectory,
    DecisionModelOption,
    DecisionProtocol,
    DecisionResult,
    Decisions,
    PredicateAnswer,
    custom_provider,
    reference_for,
)
from rxcord.providers.ssrf import endpoint_url

CLI_MAX_INPUT_TOKENS: Final = 32_000
"""The documented input ceiling of the reference decision model (Jev 1.13: 32,000 tokens)."""
_CLI_ENDPOINT: Final = "cli"
"""The endpoint row id of the command line's one custom endpoint."""


def add_decide_parser(commands: Any) -> None:
    """Register ``decide`` on the CLI's subparsers."""
    decide = commands.add_parser("decide", help="ask a decision model yes/no questions about some evidence")
    decide.add_argument("--protocol", required=True, choices=[p.value for p in DecisionProtocol])
    decide.add_argument("--base-url", required=True, metavar="URL")
    decide.add_argument("--model", required=True)
    decide.add_argument("--evidence-file", required=True, metavar="FILE")
    decide.add_argument("--questions-file", required=True, metavar="FILE", help="a JSON array of predicates")
    decide.add_argument(
        "--allow-loopback", action="store_true", help="let the SSRF guard pass loopback and private addresses"
    )
    decide.add_argument("--api-key-env", metavar="NAME", help="the environment variable holding the key")
    decide.add_argument("--json", action="store_true", help="print one JSON object")


def _read_text(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the {what} file {path}: {type(exc).__name__}") from None


def _questions(path: str) -> list[Any]:
    try:
        # The bounded decoder: a file nested thousands deep is input that is not JSON (exit 2),
        # never a RecursionError traceback.
        questions = safe_json.loads(_read_text(path, "questions"))
    except MalformedJsonError:
        raise InputError(f"the questions file {path} is not JSON") from None
    if not isinstance(questions, list):
        raise InputError("the questions file must hold a JSON array")
    return questions


def _api_key(args: argparse.Namespace) -> str | None:
    if args.api_key_env:
        names = [args.api_key_env]
    elif args.protocol == DecisionProtocol.OPENROUTER.value:
        names = ["OPENROUTER_API_KEY", "RXCORD_API_KEY"]
    else:
        names = ["RXCORD_API_KEY"]
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _option(args: argparse.Namespace) -> DecisionModelOption:
    protocol = DecisionProtocol(args.protocol)
    endpoint_url(args.base_url, setting="--base-url")  # an InputError naming the flag
    if not args.model.strip():
        raise InputError("--model must not be empty")
    if protocol is DecisionProtocol.OPENROUTER:
        return DecisionModelOption(
            provider="openrouter",
            model_id=args.model,
            protocol=protocol,
            base_url=args.base_url,
            max_input_tokens=CLI_MAX_INPUT_TOKENS,
        )
    return DecisionModelOption(
        provider=custom_provider(_CLI_ENDPOINT),
        model_id=args.model,
        protocol=protocol,
        base_url=args.base_url,
        max_input_tokens=CLI_MAX_INPUT_TOKENS,
        custom_endpoint_id=_CLI_ENDPOINT,
    )


def _usage(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cost": usage.cost,
    }


def decision_report(result: DecisionResult, usage_reports: list[Usage]) -> dict[str, Any]:
    """The ``--json`` object for *result*."""
    answers: list[dict[str, Any]] = []
    for answer in getattr(result, "answers", ()):
        if isinstance(answer, PredicateAnswer):
            answers.append({"id": answer.id, "probability": answer.probability})
        else:
            answers.append({"id": answer.id, "refusal": True})
    return {
        "kind": result.kind.value,
        "answers": answers,
        "usage": _usage(getattr(result, "usage", None)),
        "model": getattr(result, "model", None),
        "provider_request_id": getattr(result, "provider_request_id", None),
        "usage_reports": [_usage(usage) for usage in usage_reports],
    }


async def decide_command(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``rxcord decide`` from parsed arguments; the ``--json`` object."""
    option = _option(args)
    evidence = _read_text(args.evidence_file, "evidence")
    questions = _questions(args.questions_file)
    credentials = DecisionCredentials(api_key=_api_key(args))
    directory = DecisionDirectory(
        options=lambda scope: (option,),
        validate_model=lambda scope, candidate: True,
        credentials=lambda scope, candidate: credentials,
    )
    service = Decisions(directory, config=DecisionConfig(allow_private_network=args.allow_loopback))
    reports: list[Usage] = []
    result = await service.call_decisions(
        None, reference_for(option), evidence, questions, on_usage=reports.append
    )
    reason = getattr(result, "reason", None)
    if reason is not None:
        category = getattr(result, "category", None)
        why = f"{category.value}, {reason}" if category is not None else reason
        sys.stderr.write(f"rxcord: decide: {result.kind.value} ({why})\n")
    return decision_report(result, reports)


def run_decide(args: argparse.Namespace) -> None:
    """``main``'s entry: run the command and print its result."""
    report = asyncio.run(decide_command(args))
    if args.json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
        return
    answers = ", ".join(
        f"{answer['id']}={'refused' if answer.get('refusal') else answer['probability']}"
        for answer in report["answers"]
    )
    sys.stdout.write(f"{report['kind']}" + (f": {answers}" if answers else "") + "\n")
