"""Our DAP wire types against the official schema (debugProtocol.json), and the framing rules."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from neural_dap.dap import protocol as p
from neural_dap.dap.framing import Frame, FrameReader, FramingProblem, encode_frame


def _properties(schema: dict, definition: str) -> tuple[dict, set]:
    node = schema["definitions"][definition]
    props: dict = {}
    required: set = set()
    parts = node.get("allOf", [node])
    for part in parts:
        if "$ref" in part:
            inherited, req = _properties(schema, part["$ref"].rsplit("/", 1)[-1])
            props.update(inherited)
            required |= req
        else:
            props.update(part.get("properties", {}))
            required |= set(part.get("required", []))
    return props, required


@pytest.mark.parametrize("kind", list(p.SCHEMA_NAMES), ids=lambda k: k.__name__)
def test_every_field_of_our_types_exists_in_the_official_schema(dap_schema, kind):
    definition = p.SCHEMA_NAMES[kind]
    props, required = _properties(dap_schema, definition)
    if definition.endswith("Event") and "body" in props and kind is not p.Event:
        body = props["body"]
        props, required = body.get("properties", {}), set(body.get("required", []))
    names = {f.encode_name for f in msgspec.structs.fields(kind)}
    if kind in (p.Request, p.Response, p.Event):
        names.add("type")  # the tag field
    unknown = names - set(props)
    assert not unknown, f"{kind.__name__} has fields the schema's {definition} does not: {unknown}"
    # what the schema requires, our type has (except for argument types, which only read)
    if not kind.__name__.endswith("Arguments"):
        missing = required - names
        assert not missing, f"{kind.__name__} lacks fields the schema's {definition} requires: {missing}"


def test_launch_keys_are_what_the_server_accepts():
    assert {"program", "args", "cwd", "env", "stopOnEntry", "entry", "world", "model", "reconcile", "trust"} <= p.LAUNCH_KEYS


async def _read_all(data: bytes, max_body: int = 1 << 20) -> list:
    send, receive = anyio.create_memory_object_stream[bytes](1_000_000)

    class Receive:
        async def receive(self, n: int = 65536) -> bytes:
            return await receive.receive()

    async with send:
        for k in range(0, len(data), 7):  # split across reads at awkward places
            await send.send(data[k : k + 7])
    return [f async for f in FrameReader(Receive(), max_body=max_body).frames()]  # type: ignore[arg-type]


async def test_content_length_counts_bytes_and_bad_frames_are_skipped():
    body = '{"text": "héllo ✓"}'.encode()
    data = encode_frame(body) + b"X-Nothing: 1\r\n\r\n" + encode_frame(b"{}") + b"Content-Length: 99999999\r\n\r\n" + b"x" * 10 + encode_frame(b"[]")
    frames = await _read_all(data, max_body=1000)
    assert frames[0] == Frame(body)
    assert isinstance(frames[1], FramingProblem) and "no Content-Length" in frames[1].what
    assert frames[2] == Frame(b"{}")
    assert isinstance(frames[3], FramingProblem) and "over the 1000-byte limit" in frames[3].what
    assert len(frames) == 4  # the stream ended inside the skipped message


async def test_an_endless_header_is_cut_and_reading_resumes():
    data = b"A" * 20000 + encode_frame(b'{"ok": 1}')
    frames = await _read_all(data)
    assert isinstance(frames[0], FramingProblem) and "header" in frames[0].what
    assert frames[-1] == Frame(b'{"ok": 1}')
