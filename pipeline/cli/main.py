"""The ``rxcord`` command line: ``replay``, ``demo``, ``emulator`` and ``chat``.

Exit codes: 0 whenever the pipeline ran (an ``error`` status is a result,
not a crash); 2 with a one-line message for unusable input (a missing file,
an unknown provider, a malformed flag, a missing API key).
"""

from __future__ import annotations

__all__ = ("main",)

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

from rxcord.core.errors import InputError, MissingCredentialError
from rxcord.core.types import DeliveryMode, StopKind
from rxcord.core.version import __version__
from rxcord.providers.registry import PROVIDERS


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _stop_spec(text: str) -> tuple[StopKind, int]:
    kind, _, count = text.partition("@")
    kinds = {"user": StopKind.USER, "interrupt": StopKind.INTERRUPT, "kill": StopKind.KILL}
    if kind not in kinds or not count.isdigit() or int(count) < 1:
        raise argparse.ArgumentTypeError("expected KIND@N with KIND one of user, interrupt, kill and N >= 1")
    return kinds[kind], int(count)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"rxcord: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to render ``--help`` in the docs)."""
    parser = _Parser(prog="rxcord", description="Stream LLM responses into Discord as one reactive dataflow.")
    parser.add_argument("-v", "--verbose", action="store_true", help="structured logs on stderr")
    parser.add_argument("--version", action="version", version=f"rxcord {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    replay = commands.add_parser(
        "replay", help="replay a captured provider response through all seven stages"
    )
    replay.add_argument("capture", help="a raw HTTP response body exactly as a provider sent it")
    replay.add_argument("--provider", required=True, metavar="{" + ",".join(PROVIDERS) + "}")
    replay.add_argument("--status", type=int, default=200, help="HTTP status to serve (default 200)")
    replay.add_argument("--content-type", help="default text/event-stream; application/json for .json files")
    replay.add_argument("--tools", default="", help="comma-separated tool names the request exposed")
    replay.add_argument("--delivery", choices=[m.value for m in DeliveryMode], default="aggregated")
    replay.add_argument("--sink", choices=["emulator", "memory"], default="emulator")
    replay.add_argument(
        "--tables",
        choices=["picture", "monospace"],
        default="picture",
        help="wide tables as pictures (default)",
    )
    cut = replay.add_mutually_exclusive_group()
    cut.add_argument("--chunk-bytes", type=_positive_int, metavar="N", help="serve the body in N-byte pieces")
    cut.add_argument(
        "--random-chunks", type=int, metavar="SEED", help="serve the body in random-sized pieces"
    )
    replay.add_argument(
        "--stop", type=_stop_spec, metavar="KIND@N", help="stop after the N-th processed chunk"
    )
    replay.add_argument("--pace", type=float, default=0.0, metavar="MS", help="milliseconds between pieces")
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.add_argument(
        "--serve",
        action="store_true",
        help="keep the emulator and its page up after the replay, until interrupted (--sink emulator)",
    )
    replay.add_argument(
        "--timeline", metavar="PNG", help="write the stream's timeline plot here (needs rxcord[plot])"
    )

    commands.add_parser("demo", help="stream bundled recorded replies into the embedded Discord emulator")

    emulator = commands.add_parser("emulator", help="serve the Discord REST emulator on 127.0.0.1")
    emulator.add_argument("--port", type=int, default=0, help="port (default: any free port)")

    chat = commands.add_parser("chat", help="stream a real reply through the chain")
    chat.add_argument("prompt")
    chat.add_argument("--provider", required=True, metavar="{" + ",".join(PROVIDERS) + "}")
    chat.add_argument("--model", required=True)
    chat.add_argument("--base-url", help="provider base URL (default: the provider's public API)")
    chat.add_argument("--system", help="system prompt")
    chat.add_argument("--delivery", choices=[m.value for m in DeliveryMode], default="live")
    chat.add_argument(
        "--discord-channel", metavar="ID", help="deliver to this channel (needs DISCORD_BOT_TOKEN)"
    )
    chat.add_argument("--webhook-url", help="deliver through this webhook URL instead")
    chat.add_argument("--discord-base-url", help="Discord API base URL (default https://discord.com/api/v10)")
    chat.add_argument(
        "--allow-loopback",
        action="store_true",
        help="let --base-url reach loopback and private addresses (a local model server); "
        "cloud metadata addresses stay refused",
    )
    bot = commands.add_parser("bot", help="run a Discord bot from a config file (needs rxcord[bot])")
    bot.add_argument("--config", required=True, metavar="TOML", help="the bot's configuration file")
    from rxcord.cli.decide import add_decide_parser

    add_decide_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = build_parser().parse_args(argv)
    from loguru import logger

    logger.remove()
    if args.verbose:
        # -v shows rxcord's own log lines (one namespace), not every library's.
        logger.enable("rxcord")
        logger.add(sys.stderr, level="DEBUG", serialize=False, filter="rxcord")
    try:
        if args.command == "replay":
            from rxcord.cli.replay import replay_and_serve, replay_command

            if args.serve:
                asyncio.run(replay_and_serve(args, lambda report: _print(report, as_json=args.json), _say))
            else:
                report = asyncio.run(replay_command(args))
                _print(report, as_json=args.json)
        elif args.command == "demo":
            from rxcord.cli.demo import run_demo

            asyncio.run(run_demo(_say))
        elif args.command == "emulator":
            from rxcord.cli.emulator import serve_emulator

            asyncio.run(serve_emulator(args.port, _say))
        elif args.command == "chat":
            from rxcord.cli.chat import chat_command

            asyncio.run(chat_command(args, _say))
        elif args.command == "bot":
            from rxcord.bot.run import bot_command

            return bot_command(args.config, verbose=args.verbose)
        elif args.command == "decide":
            from rxcord.cli.decide import run_decide

            run_decide(args)
    except (InputError, MissingCredentialError) as exc:
        sys.stderr.write(f"rxcord: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def _say(line: str) -> None:
    # Flushed, so a parent process reading our stdout (tests, a bot's supervisor) sees it at once.
    print(line, flush=True)


def _print(report: dict[str, object], *, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
        return
    from rxcord.cli.human import render_report

    sys.stdout.write(render_report(report))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
