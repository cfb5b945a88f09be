"""A settings section: its name, its keys, and the typed object its values become.

Each app declares its own section in its ``conf.py`` (D-K16): the keys with their
defaults and checkers, and a frozen dataclass whose fields are those keys. The
kernel's loader checks every section the wiring hands it (xworkmate.wiring) and
keeps one typed object per section on the Config, so code reads
``plans_conf().time_zone`` instead of looking a value up by two strings; a key
that does not exist is then a type error, not a KeyError at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from xworkmate.config.keys import Key

if TYPE_CHECKING:
    from xworkmate.config.load import Config

T = TypeVar("T")


@dataclass(frozen=True)
class Section(Generic[T]):
    name: str
    type: type[T]
    keys: Mapping[str, Key]

    def __post_init__(self) -> None:
        # The dataclass and the key table must name the same keys, or a key
        # could be checked and never read (or read and never checked).
        declared = [f.name for f in fields(self.type)]  # type: ignore[arg-type]
        if declared != list(self.keys):
            raise TypeError(
                f"section {self.name}: {self.type.__name__} fields {declared} "
                f"differ from its keys {list(self.keys)}"
            )

    def build(self, values: Mapping[str, Any]) -> T:
        return self.type(**values)

    def of(self, config: Config) -> T:
        """This section's typed values in ``config``."""
        value = config.sections[self.name]
        if not isinstance(value, self.type):
            raise TypeError(f"section {self.name} holds {type(value).__name__}")
        return value
