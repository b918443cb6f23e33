"""A scheduler's parameters checked against its constructor's type hints.

Parameters reach a scheduler from a command line (``serve --param KEY=JSON``), an
experiment definition or a plugin's caller.  A value of the wrong type would be
stored as given (constructors only store, see :mod:`dmlsched.schedulers.protocols`)
and fail slots later, inside ``decide`` — in the service, at every slot, while its
health check says ok.  So each value that is JSON is read as its JSON text in
pydantic's strict mode against the hint of the parameter it names: ``"3"`` is not an
``int``, ``1`` is not a ``bool``, a list is a tuple, an ``int`` is a ``float``.  The
value itself is passed on unchanged (a check, not a conversion: the same run as
before).  Not checked: values that are not JSON (Python callers' objects, e.g. a
job history) and hints pydantic has no schema for.  The hints are the
constructor's, and its base's where it forwards ``**kw`` (a ``+`` variant checked
against the parameters of the algorithm it configures).  Whether a
well-typed value is in range stays the scheduler's own check (``reset``).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from typing import Any

from dmlsched.errors import InvalidInput

__all__ = ["check_params"]


def check_params(name: str, cls: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidInput` naming the first parameter whose value is JSON of
    the wrong type for its hint (module docstring)."""
    if not params:
        return
    from pydantic import ValidationError

    adapters = _adapters(cls)
    for key, value in params.items():
        adapter = adapters.get(key)
        if adapter is None:
            continue  # unknown names: the constructor refuses them
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            continue
        try:
            adapter.validate_json(text, strict=True)
        except ValidationError as e:
            hint = _hints(cls)[key]
            why = e.errors()[0]["msg"]
            raise InvalidInput(
                f"{name} parameter {key}", value, f"{_shown(hint)} ({why})"
            ) from None


@functools.cache
def _hints(cls: Callable[..., Any]) -> dict[str, Any]:
    """Parameter name -> type hint: the constructor's own, and its base's when it forwards
    ``**kw`` (a factory function registered instead of a class: its own parameters)."""
    out: dict[str, Any] = {}
    inits = [k.__dict__.get("__init__") for k in cls.__mro__] if isinstance(cls, type) else [cls]
    for init in inits:
        if init is None or not inspect.isfunction(init):
            continue
        params = inspect.signature(init).parameters.values()
        try:
            hints = typing.get_type_hints(init)
        except (NameError, TypeError):  # annotations that do not resolve: not checked
            hints = {}
        for p in params:
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name in hints:
                out.setdefault(p.name, hints[p.name])
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break  # the base's parameters are not this constructor's
    return out


@functools.cache
def _adapters(cls: Callable[..., Any]) -> dict[str, Any]:
    from pydantic import PydanticSchemaGenerationError, TypeAdapter

    out = {}
    for key, hint in _hints(cls).items():
        try:
            out[key] = TypeAdapter(hint)
        except PydanticSchemaGenerationError:  # e.g. tuples of model objects
            continue
    return out


def _shown(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
