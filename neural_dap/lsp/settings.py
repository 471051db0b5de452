"""The language server's settings (`initializationOptions`, `workspace/didChangeConfiguration`, or
the `neuralDap` section of `workspace/configuration`), with the launch keys' forms and checks."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

World = Literal["recorded", "neural", "both"]


class LspSettings(msgspec.Struct, frozen=True, rename="camel", forbid_unknown_fields=False):
    world: World = "recorded"  # what runs: reality, the model, or both (and where they disagree)
    model: Any = None  # as the launch key: "embedded", a URL, a model folder or {"url", "name", ...}
    limits: Any = None  # recording limits, as the launch key: {"maxEvents", "wallTime", ...}
    python: str | None = None  # the interpreter that records
    auto_run: Literal["entries", "all", "off"] = "entries"  # on open and edit: declared entries, + scripts, none
    max_steps: int = 20_000  # steps a recorded run is followed for (hints of longer runs stop there)
    max_predictions: int = 64  # predictions a neural run makes at most
    debounce_ms: int = 400  # quiet time after an edit before runs start again

    @property
    def kinds(self) -> tuple[Literal["recorded", "neural"], ...]:
        if self.world == "both":
            return ("recorded", "neural")
        return ("neural",) if self.world == "neural" else ("recorded",)


class SettingsError(ValueError):
    pass


def settings_from(raw: Any, base: LspSettings | None = None) -> LspSettings:
    """Settings from what a client sent: a dict, maybe wrapped as {"neuralDap": {...}}; keys not
    given keep `base`'s values."""
    if not raw:
        return base or LspSettings()
    if isinstance(raw, dict) and isinstance(raw.get("neuralDap"), dict):
        raw = raw["neuralDap"]
    if not isinstance(raw, dict):
        raise SettingsError("neural-dap settings must be an object")
    merged = {**msgspec.to_builtins(base or LspSettings()), **raw}
    try:
        settings = msgspec.convert(merged, LspSettings)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"invalid neural-dap settings: {exc}") from None
    if not 1 <= settings.max_steps <= 1_000_000 or not 1 <= settings.max_predictions <= 10_000:
        raise SettingsError("maxSteps must be 1..1000000 and maxPredictions 1..10000")
    return settings
