"""Mentions (stage 06): turn ``@name`` into real pings, and never let model output ping a crowd.

Model output is untrusted text. Discord decides who gets notified from the
message's ``allowed_mentions`` object, not from the content: when the object
is omitted, a bot message parses *every* mention type, ``@everyone`` and role
pings included, and an edit falls back to those defaults again. So rxcord
always sends an explicit object (``allowed_mentions``): nothing is parsed
except what the caller allowed, and users are pinged only when listed.

``resolve_mentions`` is the only way a user id gets into that list: a
caller-provided resolver maps a display name the model wrote (``@Alice``) to
a user id. A ``<@id>`` the model typed itself renders, but does not ping.

``neutralize_mass_mentions`` is defence in depth for content that might be
sent without rxcord's payload builder (logs, copies); ``allowed_mentions``
is the real guard.
"""

from __future__ import annotations

__all__ = (
    "MAX_LISTED_USERS",
    "MentionResolver",
    "allowed_mentions",
    "neutralize_mass_mentions",
    "resolve_mentions",
)

import re
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeAlias

from rxcord.operators.render import protected_spans, split_code

MentionResolver: TypeAlias = Callable[[str], str | None]
"""Display name -> user id (``None``: unknown). Provided by the caller, who knows the guild's members."""

MAX_LISTED_USERS: Final = 100
"""Discord accepts at most 100 ids in ``allowed_mentions.users``."""

_SNOWFLAKE: Final = re.compile(r"[0-9]{1,20}")
_WORD = r"[\w.\-]+"
_AT_MENTION: Final = re.compile(r"(?<![\w@])@(" + _WORD + r"(?: " + _WORD + r"){0,2})")
"""``@`` then up to three words: display names may contain spaces (``@Ada Lovelace``)."""
_MASS_MENTION: Final = re.compile(r"@(everyone|here)\b", re.IGNORECASE)
_MASS_NAMES: Final = frozenset({"everyone", "here"})


def _resolve(name_words: str, resolver: MentionResolver) -> tuple[str, str] | None:
    """The longest leading run of *name_words* the resolver knows: ``(name, user_id)``."""
    words = name_words.split(" ")
    for count in range(len(words), 0, -1):
        name = " ".join(words[:count]).rstrip(".-")
        if not name or name.lower() in _MASS_NAMES:
            continue
        user_id = resolver(name)
        if user_id is not None and _SNOWFLAKE.fullmatch(user_id):
            return name, user_id
    return None


def resolve_mentions(text: str, resolver: MentionResolver | None) -> tuple[str, tuple[str, ...]]:
    """Replace ``@name`` with ``<@id>`` where *resolver* knows the name.

    Never inside code, URLs (``https://x.com/@user``), e-mail addresses or
    Discord tokens; ``@everyone`` and ``@here`` are never resolved. For a name
    followed by more words the longest known run wins (``@Ada Lovelace`` before
    ``@Ada``). A resolver answer that is not a snowflake is ignored, so it
    cannot inject markup.

    Returns:
        The new text and the resolved user ids, unique, in order of first use.
    """
    if resolver is None or "@" not in text:
        return text, ()
    skip = protected_spans(text, at_names=False)
    out: list[str] = []
    ids: list[str] = []
    pos = 0
    base = 0
    # Mentions come in text order and the spans are sorted and disjoint: one pointer walks
    # the spans (testing every span at every ``@`` would be quadratic).
    k = 0
    for piece, is_code in split_code(text):
        if not is_code:
            for match in _AT_MENTION.finditer(piece):
                start = base + match.start()
                while k < len(skip) and skip[k][1] <= start:
                    k += 1
                if k < len(skip) and skip[k][0] <= start:
                    continue
                found = _resolve(match.group(1), resolver)
                if found is None:
                    continue
                name, user_id = found
                out.append(text[pos:start])
                out.append(f"<@{user_id}>")
                pos = start + 1 + len(name)
                if user_id not in ids:
                    ids.append(user_id)
        base += len(piece)
    out.append(text[pos:])
    return "".join(out), tuple(ids)


def allowed_mentions(
    user_ids: Iterable[str],
    *,
    allow_everyone: bool = False,
    allow_roles: bool = False,
    replied_user: bool = False,
) -> dict[str, Any]:
    """The explicit ``allowed_mentions`` object for one message.

    ``parse`` holds ``"everyone"`` / ``"roles"`` only when allowed, and never
    ``"users"``: users are listed instead (Discord rejects ``parse: ["users"]``
    next to a ``users`` list), so only resolved users can be pinged.

    Args:
        user_ids: Ids to ping (from ``resolve_mentions``); duplicates are
            dropped, and only the first ``MAX_LISTED_USERS`` are listed.
        allow_everyone: Let ``@everyone`` / ``@here`` ping.
        allow_roles: Let role mentions ping.
        replied_user: Let a reply ping its target.

    Raises:
        ValueError: An id is not a snowflake.
    """
    users: list[str] = []
    for user_id in user_ids:
        if not isinstance(user_id, str) or not _SNOWFLAKE.fullmatch(user_id):
            raise ValueError(f"not a user id: {user_id!r}")
        if user_id not in users:
            users.append(user_id)
    parse: list[str] = []
    if allow_everyone:
        parse.append("everyone")
    if allow_roles:
        parse.append("roles")
    return {"parse": parse, "users": users[:MAX_LISTED_USERS], "replied_user": replied_user}


def _defuse(match: re.Match[str]) -> str:
    return "@\u200b" + match.group(1)


def neutralize_mass_mentions(text: str) -> str:
    r"""Break ``@everyone`` and ``@here`` with a zero-width space (``@\u200beveryone``), outside code.

    Call it only when ``allow_everyone`` is off, and after ``clean_text``
    (which removes zero-width spaces). This is defence in depth:
    ``allowed_mentions`` is what actually prevents the ping.
    """
    if "@" not in text:
        return text
    return "".join(
        piece if is_code else _MASS_MENTION.sub(_defuse, piece) for piece, is_code in split_code(text)
    )
