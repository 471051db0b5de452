"""A scripted OpenAI-compatible model server, for tests of what clients see when predictions fail.

    python tests/scripted_model_server.py SCRIPT.json     prints "http://127.0.0.1:PORT/v1", then serves

SCRIPT.json: {"completions": [text, ...], "delay": seconds, "by_position": false}. Each
/v1/completions request without structured outputs answers the next text of the list, then "???" once
the list is used up; with "by_position", the text for the prompt's frame count instead (the n-th
predicted frame of a session gets completions[n]), so replicas of one script answer alike. A
request constrained by a whole frame's regex gets that text where the regex matches it; other
constrained requests (allowed_token_ids, a segment's regex or choice) always get "???", so a frame
the constraint refuses cannot be repaired: the step fails, as with a model server that answers
garbage. /tokenize gives
one id per character (special tokens one id each); /v1/models lists one model; /stats counts the
completion requests served.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|frame_sep|>",
    "<|action_sep|>",
    "<|return_sep|>",
    "<|call_sep|>",
    "<|line_sep|>",
    "<|exception_sep|>",
    "<|arg_sep|>",
    "<|trace_context_start|>",
    "<|step_into|>",
    "<|step_over|>",
    "<|step_return|>",
    "<|breakpoint|>",
    "<|continue|>",
    "<|inv_step_into|>",
    "<|inv_step_over|>",
    "<|inv_step_return|>",
    "<|inv_breakpoint|>",
]
IDS = {s: 200_000 + k for k, s in enumerate(SPECIALS)}
END = "<|end_of_text|>"  # the end-of-sequence token: a stop a whole frame's regex leaves to the server


def tokenize(text: str) -> list[int]:
    out: list[int] = []
    k = 0
    while k < len(text):
        for special, sid in IDS.items():
            if text.startswith(special, k):
                out.append(sid)
                k += len(special)
                break
        else:
            out.append(ord(text[k]))
            k += 1
    return out


class Script:
    def __init__(self, completions: list[str], delay: float, by_position: bool = False) -> None:
        self.completions = list(completions)
        self.delay = delay
        self.by_position = by_position
        self.lock = threading.Lock()
        self.requests = 0

    def next(self, constraint: dict | None, prompt: list[int], whole: bool) -> str:
        with self.lock:
            self.requests += 1
            if constraint is not None and not whole:
                return "???"
            if self.by_position:
                # the context and the session's first frame end with a frame separator each
                n = prompt.count(IDS["<|frame_sep|>"]) - 2
                text = self.completions[n] if 0 <= n < len(self.completions) else "???"
            elif not self.completions:
                text = "???"
            else:
                text = self.completions.pop(0)
            if constraint is not None:
                return _matched(constraint["regex"], text)
            return text


def _matched(regex: str, text: str) -> str:
    """What a server constrained by a whole frame's regex would write of `text`: all of it, or the
    part before a special token where the regex ends there (a frame's head); else "???"."""
    if re.fullmatch(regex, text.replace(END, "")):  # the end-of-text token is a stop the regex leaves out
        return text
    cuts = sorted((m.start() for m in re.finditer(r"<\|[a-z_]+\|>", text)), reverse=True)
    for cut in cuts:
        if re.fullmatch(regex, text[:cut]):
            return text[:cut]
    return "???"


def handler_for(script: Script):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/v1/models"):
                self._send({"data": [{"id": "scripted", "max_model_len": 4096}]})
            elif self.path.rstrip("/").endswith("/stats"):
                self._send({"requests": script.requests})
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            if self.path.endswith("/tokenize"):
                self._send({"tokens": tokenize(body.get("prompt", ""))})
            elif self.path.endswith("/v1/completions"):
                time.sleep(script.delay)
                constraint = body.get("structured_outputs") or (
                    {"allowed_token_ids": body["allowed_token_ids"]} if "allowed_token_ids" in body else None
                )
                prompt = body.get("prompt", [])
                whole = constraint is not None and "regex" in constraint and "stop_token_ids" in body  # a whole frame
                text = script.next(constraint, prompt if isinstance(prompt, list) else [], whole)
                n = int(body.get("n", 1))
                self._send(
                    {
                        "choices": [{"text": text, "finish_reason": "stop", "index": k} for k in range(n)],
                        "usage": {"prompt_tokens": len(body.get("prompt", [])), "completion_tokens": len(text)},
                    }
                )
            else:
                self.send_error(404)

    return Handler


def main() -> None:
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    script = Script(spec.get("completions", []), float(spec.get("delay", 0)), bool(spec.get("by_position")))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(script))
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
