"""The registry refuses a transform class that breaks the protocol, naming the class and the fix."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hsa.augment.compose import COMPOSITIONS
from hsa.augment.registry import register, registered
from hsa.augment.transform import Transform
from hsa.errors import HsaError

# Classes these tests register stay out of the registry the rest of the session sees.
pytestmark = pytest.mark.usefixtures("private_registry")


def _refused(cls: type, *fragments: str) -> None:
    before = registered()
    with pytest.raises(HsaError) as caught:
        register(cls)
    message = str(caught.value)
    assert cls.__qualname__ in message
    for fragment in fragments:
        assert fragment in message
    assert registered() == before  # nothing half-registered


def test_a_well_formed_transform_registers_and_a_second_class_may_not_take_its_name():
    @dataclass(frozen=True)
    class Good(Transform):
        """Changes nothing."""

        name = "registry_test_good"
        version = "1"
        family = "test"
        cache: str = ""
        row_neutral = ("cache",)

    assert register(Good) is Good and registered()["registry_test_good"] is Good
    assert register(Good) is Good  # the same class again (a module imported twice) is no clash

    @dataclass(frozen=True)
    class Other(Transform):
        name = "registry_test_good"
        version = "1"
        family = "test"

    _refused(Other, "already registered", "Good", "choose another name")


def test_an_undecorated_subclass_is_refused():
    class Plain(Transform):  # inherits Transform's dataclass machinery, declares none of its own
        name = "registry_test_plain"
        version = "1"
        family = "test"
        rate: float = 0.5  # would be a class attribute, not an option

    _refused(Plain, "must be a frozen dataclass", "@dataclass(frozen=True)")


def test_register_above_the_dataclass_decorator_is_required():
    with pytest.raises(HsaError, match=r"written below @register"):

        @dataclass(frozen=True)
        @register
        class Upside(Transform):
            name = "registry_test_upside"
            version = "1"
            family = "test"

    assert "registry_test_upside" not in registered()


def test_a_class_that_is_no_transform_is_refused():
    @dataclass(frozen=True)
    class Stranger:
        name = "registry_test_stranger"
        version = "1"
        family = "test"

    _refused(Stranger, "must subclass hsa.augment.transform.Transform")


def test_a_transform_without_a_family_is_refused():
    @dataclass(frozen=True)
    class Orphan(Transform):
        name = "registry_test_orphan"
        version = "1"

    _refused(Orphan, "needs a snake_case 'family'", "family = ")


@pytest.mark.parametrize("reserved", sorted(COMPOSITIONS))
def test_a_composition_name_is_refused(reserved):
    @dataclass(frozen=True)
    class Impostor(Transform):
        name = reserved
        version = "1"
        family = "test"

    _refused(Impostor, f"may not be named {reserved!r}", "composition", "choose another name")


@pytest.mark.parametrize("name", ["CamelName", "with-dash", "", None])
def test_a_name_that_is_not_snake_case_is_refused(name):
    @dataclass(frozen=True)
    class Misnamed(Transform):
        version = "1"
        family = "test"

    Misnamed.name = name
    _refused(Misnamed, "needs a snake_case 'name'")


def test_a_missing_version_is_refused():
    @dataclass(frozen=True)
    class Unversioned(Transform):
        name = "registry_test_unversioned"
        family = "test"

    _refused(Unversioned, "needs a string 'version'")


@pytest.mark.parametrize("neutral", [("nope",), ("p",), "cache"])
def test_row_neutral_must_name_options_other_than_p(neutral):
    @dataclass(frozen=True)
    class Neutral(Transform):
        name = "registry_test_neutral"
        version = "1"
        family = "test"
        cache: str = ""

    Neutral.row_neutral = neutral
    _refused(Neutral, "'row_neutral' must be a tuple of its option names other than p", "cache")


def test_scope_is_harness_or_episode_and_episode_by_default():
    @dataclass(frozen=True)
    class Undeclared(Transform):
        name = "registry_test_undeclared_scope"
        version = "1"
        family = "test"

    # A transform that does not say otherwise may read the conversation: always safe.
    assert register(Undeclared).scope == "episode"

    @dataclass(frozen=True)
    class Scoped(Transform):
        name = "registry_test_scope"
        version = "1"
        family = "test"
        scope = "harnes"

    _refused(Scoped, "'scope' must be one of 'harness', 'episode'", "'harnes'")
