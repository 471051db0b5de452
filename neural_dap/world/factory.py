"""Make the world model a launch asks for, and the model clients a neural world talks to.

The DAP layer gets `create_world`, never the classes. This module is the wiring: the worlds do not
import each other's factories (the reconciled world wraps a neural one; nothing points back).
"""

from __future__ import annotations

import os
from typing import Any, Literal, cast

import msgspec

from neural_dap.core.world import LaunchSpec, WorldError, WorldModel, world_options
from neural_dap.format.calibration import Calibration
from neural_dap.llm.base import ModelClient
from neural_dap.world.neural import ModelSettings


class NeuralOptions(msgspec.Struct, frozen=True, rename="camel"):
    """The neural world's launch keys; with a recorded reality it takes `RecordedOptions` too."""

    model: Any = None  # "embedded", a URL, a model folder or {"url", "name", "dialect", ...}
    reconcile: Literal["none", "recorded", "debugpy"] = "none"
    trust: Literal["model", "reality"] = "model"


def launch_keys() -> frozenset[str]:
    """Every world's own launch keys (the DAP layer adds its shared ones): the extension's schema."""
    from neural_dap.world.recorded import RecordedOptions

    return frozenset(f.encode_name for kind in (NeuralOptions, RecordedOptions) for f in msgspec.structs.fields(kind))


def create_world(launch: LaunchSpec, pool: ClientPool | None = None) -> WorldModel:
    if launch.world == "recorded":
        from neural_dap.world.recorded import RecordedWorld

        if launch.options.get("reconcile", "none") != "none":
            raise WorldError("reconcile applies to world 'neural' (a recorded world is reality already)")
        return RecordedWorld()
    if launch.world == "neural":
        if launch.module is not None:
            raise WorldError(
                f"world 'neural' predicts one file or function; debug module {launch.module!r} in the recorded world,"
                " or launch the file you want predicted as 'program'"
            )
        return create_neural_world(launch, pool)
    raise WorldError(f"unknown world {launch.world!r}: use 'recorded' or 'neural'")


def settings_from(model: Any) -> ModelSettings:
    """The launch's `model` key: "embedded", a URL, or {"url", "name", "dialect", ...}."""
    if model is None or model == "embedded":
        return ModelSettings()
    if isinstance(model, str):
        return ModelSettings(url=model)
    if isinstance(model, dict):
        try:
            return msgspec.convert(model, ModelSettings)
        except msgspec.ValidationError as exc:
            raise WorldError(f"invalid model settings: {exc}") from None
    raise WorldError(f"model must be 'embedded', a URL or an object, not {type(model).__name__}")


def embedded_model_path() -> str:
    """The shipped model's folder (package data), unless NEURAL_DAP_EMBEDDED_MODEL names another."""
    override = os.environ.get("NEURAL_DAP_EMBEDDED_MODEL")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.dirname(__file__)), "train", "embedded")


def make_client(settings: ModelSettings) -> ModelClient:
    if isinstance(settings.url, list):
        if not settings.url or not all(
            isinstance(u, str) and u.startswith(("http://", "https://")) for u in settings.url
        ):
            raise WorldError("a list of model URLs must hold http(s) URLs of replicas of one served model")
        from neural_dap.llm.openai import OpenAICompatibleClient

        return OpenAICompatibleClient(settings.url, settings.name, timeout=settings.timeout)
    if settings.url == "embedded":
        from neural_dap.llm.inprocess import InProcessClient

        path = embedded_model_path()
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise WorldError(
                f"the embedded model is not installed at {path}; train it with `neural-dap train` or give a model URL"
            )
        return InProcessClient(path)
    if settings.url.startswith(("http://", "https://")):
        from neural_dap.llm.openai import OpenAICompatibleClient

        return OpenAICompatibleClient(settings.url, settings.name, timeout=settings.timeout)
    if os.path.isdir(settings.url):
        from neural_dap.llm.inprocess import InProcessClient

        return InProcessClient(settings.url)
    raise WorldError(f"model url {settings.url!r} is neither 'embedded', an http(s) URL nor a model folder")


def calibration_for(settings: ModelSettings) -> Calibration | None:
    """The confidence calibration of the model `settings` name: `settings.calibration` (a file, or
    "none" for raw probabilities), else the model folder's own `calibration.json`: the embedded
    model's, a folder's, or, for a server, the folder its served name points to here (vLLM serves
    `--model neural_dap/train/embedded` under that name; without a name, the world asks the server
    for it when it starts). None: no calibration known yet."""
    from neural_dap.format import calibration

    if settings.calibration == "none":
        return None
    if settings.calibration is not None:
        if not os.path.isfile(settings.calibration):
            raise WorldError(f"no calibration file at {settings.calibration}")
        where = settings.calibration
    elif settings.url == "embedded":
        where = embedded_model_path()
    elif isinstance(settings.url, str) and os.path.isdir(settings.url):
        where = settings.url
    elif settings.name is not None and os.path.isdir(settings.name):
        where = settings.name
    else:
        return None
    try:
        return calibration.load(where)
    except (OSError, ValueError) as exc:
        raise WorldError(str(exc)) from None


def create_neural_world(launch: LaunchSpec, pool: ClientPool | None = None) -> WorldModel:
    from neural_dap.world.neural import NeuralWorld

    options = world_options(launch, NeuralOptions, "neural")
    settings = settings_from(options.model)
    client = pool.borrow(settings) if pool is not None else make_client(settings)
    world = NeuralWorld(client, settings, calibration_for(settings))
    if options.reconcile == "none":
        return world
    from neural_dap.world.reconciled import ReconciledWorld

    return ReconciledWorld(world, options.reconcile, options.trust)


class ClientPool:
    """Model clients kept across worlds. A language server predicts run after run: the embedded
    model loads once, a server's connection is reused. A world gets a borrowed client whose
    `close()` leaves it open; `ClientPool.close()` closes them all."""

    def __init__(self) -> None:
        self._clients: dict[tuple, ModelClient] = {}

    def borrow(self, settings: ModelSettings) -> ModelClient:
        url = tuple(settings.url) if isinstance(settings.url, list) else settings.url
        key = (url, settings.name, settings.timeout)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = make_client(settings)
        return cast(ModelClient, _Borrowed(client))

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


class _Borrowed:
    def __init__(self, client: ModelClient) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def close(self) -> None:
        """The pool's client outlives the world that borrowed it."""
