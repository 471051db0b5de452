"""Our DAP wire types against the official schema (debugProtocol.json), and the framing rules."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from neural_dap.dapwire import protocol as p
from neural_dap.dapwire.framing import Frame, FrameReader, FramingProblem, encode_frame


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


def test_launch_keys_are_shared_by_the_dap_layer_or_owned_by_a_world():
    from neural_dap.world.factory import launch_keys

    assert {"program", "args", "cwd", "env", "stopOnEntry", "entry", "world", "python"} <= p.LAUNCH_KEYS
    assert {"model", "reconcile", "trust", "limits", "recording"} <= launch_keys()
    assert not p.LAUNCH_KEYS & launch_keys()  # each key has one owner


async def _read_all(data: bytes, max_body: int = 1 << 20) -> list:
    send, receive = anyio.create_memory_object_stream[bytes](1_000_000)

    class Receive:
        async def receive(self, n: int = 65536) -> bytes:
            return await receive.receive()

    async with send:
        for k in range(0, len(data), 7):  # split across reads at awkward places
            await send.send(data[k : k + 7])
    return [f async for f in FrameReader(Receive(), max_body=max_body).frames()]  # type: ignore[arg-type]


async def test_content_length_counts_bytes_and_a_broken_frame_ends_the_stream():
    body = '{"text": "héllo ✓"}'.encode()
    data = encode_frame(body) + b"X-Nothing: 1\r\n\r\n" + encode_frame(b"{}")
    frames = await _read_all(data, max_body=1000)
    assert frames[0] == Frame(body)
    assert isinstance(frames[1], FramingProblem) and "no Content-Length" in frames[1].what
    assert not frames[1].before_first_frame  # the peer spoke DAP first: it is told why
    assert len(frames) == 2  # nothing after a broken frame is read


async def test_a_length_over_the_limit_is_refused_before_reading_it():
    data = encode_frame(b"{}") + b"Content-Length: 99999999999\r\n\r\n" + b"x" * 5000
    frames = await _read_all(data, max_body=1000)
    assert frames[0] == Frame(b"{}")
    assert isinstance(frames[1], FramingProblem) and "over the 1000-byte limit" in frames[1].what
    assert len(frames) == 2


async def test_an_endless_header_is_refused():
    frames = await _read_all(b"A" * 20000 + encode_frame(b'{"ok": 1}'))
    assert len(frames) == 1 and isinstance(frames[0], FramingProblem) and "header" in frames[0].what


@pytest.mark.parametrize(
    "first_bytes",
    [
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1:4711\r\nContent-Type: text/plain\r\nContent-Length: 120\r\n\r\n",
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS client hello
        b"garbage Content-Length: 2\r\n\r\n{}",
    ],
)
async def test_a_stream_that_does_not_start_with_a_dap_header_is_refused_at_once(first_bytes):
    frames = await _read_all(first_bytes + encode_frame(b'{"seq": 1, "type": "request", "command": "initialize"}'))
    assert len(frames) == 1 and isinstance(frames[0], FramingProblem) and frames[0].before_first_frame
