"""Tests of mention handling (stage 06): resolution, ``allowed_mentions`` and mass-mention defusing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord.operators.mentions import (
    MAX_LISTED_USERS,
    allowed_mentions,
    neutralize_mass_mentions,
    resolve_mentions,
)

MEMBERS = {"Alice": "111", "Ada Lovelace": "222", "Ada": "333", "bob.smith": "444"}


def resolver(name: str) -> str | None:
    return MEMBERS.get(name)


# ---------------------------------------------------------------- resolve_mentions


def test_known_names_become_pings() -> None:
    """``@name`` turns into ``<@id>`` and the id is reported once, in order."""
    text, ids = resolve_mentions("hi @Alice and @Ada, bye @Alice", resolver)
    assert text == "hi <@111> and <@333>, bye <@111>"
    assert ids == ("111", "333")


def test_longest_known_multiword_name_wins() -> None:
    """``@Ada Lovelace`` beats ``@Ada``; words after the name stay."""
    assert resolve_mentions("thanks @Ada Lovelace said", resolver) == ("thanks <@222> said", ("222",))


def test_trailing_dot_is_not_part_of_the_name() -> None:
    """A sentence-ending dot stays after the ping; dots inside usernames do not."""
    assert resolve_mentions("ask @bob.smith.", resolver) == ("ask <@444>.", ("444",))


def test_unknown_names_stay_text() -> None:
    """A name the resolver does not know is left alone."""
    assert resolve_mentions("hi @Carol", resolver) == ("hi @Carol", ())


def test_code_urls_and_emails_are_never_resolved() -> None:
    """Mentions inside code, URLs and e-mail addresses stay text."""
    text = "`@Alice` ```\n@Alice\n``` https://x.com/@Alice mail a@Alice.com"
    assert resolve_mentions(text, resolver) == (text, ())


def test_everyone_and_here_are_never_resolved() -> None:
    """A resolver that knows "everyone" still cannot turn it into a ping."""
    text = "@everyone @here"
    assert resolve_mentions(text, {"everyone": "1", "here": "2"}.get) == (text, ())


def test_resolver_answers_that_are_not_ids_are_ignored() -> None:
    """A resolver returning markup cannot inject it."""
    assert resolve_mentions("@Alice", {"Alice": "1> @everyone <@2"}.get) == ("@Alice", ())


def test_no_resolver_changes_nothing() -> None:
    """Without a resolver the text is returned as is."""
    assert resolve_mentions("@Alice", None) == ("@Alice", ())


@given(st.text(alphabet="@Alice Ada`.:/x\n", max_size=40))
def test_resolution_only_replaces_known_mentions(text: str) -> None:
    """Every produced ping belongs to a reported id, and removing pings gives back the names."""
    out, ids = resolve_mentions(text, resolver)
    for user_id in ids:
        assert f"<@{user_id}>" in out
    back = out
    for name, user_id in MEMBERS.items():
        back = back.replace(f"<@{user_id}>", f"@{name}")
    assert back == text


# ---------------------------------------------------------------- allowed_mentions


def test_default_payload_pings_nobody_but_listed_users() -> None:
    """The default parses nothing; only listed users can be pinged; replies do not ping."""
    assert allowed_mentions(["1", "2", "1"]) == {"parse": [], "users": ["1", "2"], "replied_user": False}


def test_everyone_and_roles_only_when_allowed() -> None:
    """Opt-ins add exactly their parse type; replied_user is passed through."""
    payload = allowed_mentions([], allow_everyone=True, allow_roles=True, replied_user=True)
    assert payload == {"parse": ["everyone", "roles"], "users": [], "replied_user": True}


def test_user_list_is_capped_at_discords_limit() -> None:
    """At most 100 users are listed."""
    payload = allowed_mentions(str(i) for i in range(1, 150))
    assert payload["users"] == [str(i) for i in range(1, MAX_LISTED_USERS + 1)]


@pytest.mark.parametrize("bad", ["everyone", "<@1>", "", "1" * 21, "12a"])
def test_non_snowflake_ids_are_refused(bad: str) -> None:
    """An id that is not a snowflake is a caller bug."""
    with pytest.raises(ValueError, match="not a user id"):
        allowed_mentions(["1", bad])


@given(
    st.lists(st.integers(1, 10**19).map(str), max_size=120),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_no_payload_parses_more_than_allowed(
    ids: list[str], allow_everyone: bool, allow_roles: bool, replied_user: bool
) -> None:
    """ "everyone"/"roles" appear only when allowed, "users" is never parsed, and the shape is valid."""
    payload = allowed_mentions(
        ids, allow_everyone=allow_everyone, allow_roles=allow_roles, replied_user=replied_user
    )
    assert set(payload) == {"parse", "users", "replied_user"}
    assert ("everyone" in payload["parse"]) == allow_everyone
    assert ("roles" in payload["parse"]) == allow_roles
    assert "users" not in payload["parse"]
    assert len(payload["users"]) <= MAX_LISTED_USERS
    assert len(set(payload["users"])) == len(payload["users"])
    assert payload["replied_user"] is replied_user


# ---------------------------------------------------------------- neutralize_mass_mentions


def test_mass_mentions_get_a_zero_width_space() -> None:
    """``@everyone`` and ``@here`` (any case) are broken with U+200B; code is untouched."""
    text = "@everyone look @Here `@everyone`"
    assert neutralize_mass_mentions(text) == "@\u200beveryone look @\u200bHere `@everyone`"


def test_neutralizing_is_idempotent_and_leaves_other_mentions() -> None:
    """A second pass changes nothing; ``@everyoneelse`` and user pings are not mass mentions."""
    once = neutralize_mass_mentions("@everyone <@1> @everyoneelse")
    assert once == "@\u200beveryone <@1> @everyoneelse"
    assert neutralize_mass_mentions(once) == once
