"""A client for any OpenAI-compatible `/v1/completions` server: vLLM, SGLang, llama.cpp's server.

Prompts go as token ids (text pieces through the server's own `/tokenize`, special tokens spliced
in by id), with `stop_token_ids`, special tokens kept in the output, `n` samples. Every request has
a timeout; connection failures and 5xx answers are retried a bounded number of times with backoff;
everything else becomes a `ModelError` that says what happened.

With a decoding constraint, one request carries the whole frame as a regex (`structured_outputs`),
its special tokens written as their strings: vLLM's grammar engine (xgrammar) matches an added
token by its text, so the server masks every token and the frame comes back in one round trip.
That the special tokens came back as single tokens is checked until an answer shows it; a server
that spelled them out, or takes no regex, gets the plain request instead, and a completion the
constraint refuses (one cut by the token budget, say) is made again segment by segment with what
vLLM's server offers: `allowed_token_ids` for a choice of special tokens, `structured_outputs` with
a regex for the locals and the value, and `choice` for the source line, each request extending the
prompt, so the prefix cache keeps serving it. Greedy decoding gives the same frame every way where
the model's own choices were allowed.
"""

from __future__ import annotations

import random
import re
import time
from collections import OrderedDict

import anyio
import httpx
import msgspec

from neural_dap.llm.base import CLOSING_ROOM, Completion, CompletionResult, Constraint, ModelError

# The end-of-sequence token of the models served (CWM's Llama-3 tokenizer, the embedded model's)
END_OF_TEXT = "<|end_of_text|>"

_SPECIAL = re.compile(r"<\|[a-z_]+\|>")  # a special token's string in a completion's text
_PREFIX_HITS = re.compile(r"^vllm:prefix_cache_hits(?:_total)?(?:\{[^}]*\})?\s+([0-9.eE+]+)", re.M)


class OpenAICompatibleClient:
    """One debug session's client of an OpenAI-compatible server (vLLM), or of several replicas of
    one: the session sticks to one replica, so that replica's prefix cache keeps serving its
    history, and moves to the next when that one cannot be reached."""

    def __init__(
        self,
        url: str | list[str],
        model: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        whole_frames: bool = True,
    ) -> None:
        urls = [url] if isinstance(url, str) else list(url)
        if not urls:
            raise ValueError("no model server URL")
        self.replicas = [_root(u) for u in urls]  # server roots (for /tokenize, /metrics)
        self.current = random.randrange(len(self.replicas))  # sessions spread over the replicas
        self.failovers = 0
        self.model = model
        self.name = model or "?"
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)), transport=transport)
        self._token_cache: OrderedDict[str, list[int]] = OrderedDict()
        self._metrics_supported = True
        self._usage_has_cache = False  # the server reports cached tokens itself: no /metrics round trips
        self._listed: list[dict] | None = None
        # whether a whole frame can be asked for in one regex-constrained request (None: not tried
        # yet); `whole_frames=False` never asks (the plain request, then segments where it is refused)
        self._whole_frames: bool | None = None if whole_frames else False
        self._regex_refused = False  # a regex request got an error answer

    @property
    def base(self) -> str:
        return self.replicas[self.current]

    @property
    def url(self) -> str:
        return self.base + "/v1"

    def describe(self) -> dict:
        described: dict = {"client": "openai", "url": self.url, "model": self.name}
        if len(self.replicas) > 1:
            described.update(replicas=len(self.replicas), failovers=self.failovers)
        if self._whole_frames is not None:  # a frame asked for in one regex-constrained request, or not
            described["wholeFrames"] = self._whole_frames
        return described

    async def close(self) -> None:
        await self.http.aclose()

    # -- HTTP with retries ----------------------------------------------------------------------------
    async def _request(self, method: str, path: str, **kwargs) -> httpx.Response:
        """`path` on the current replica; one that cannot be reached hands the session to the next."""
        unreachable: list[str] = []
        while True:
            try:
                return await self._on_replica(method, self.base + path, **kwargs)
            except _Unreachable as exc:
                unreachable.append(f"{self.base} ({exc})")
                if len(unreachable) >= len(self.replicas):
                    where = "; ".join(unreachable)
                    raise ModelError(f"no model server is reachable: {where}") from None
                self.current = (self.current + 1) % len(self.replicas)
                self.failovers += 1

    async def _on_replica(self, method: str, url: str, **kwargs) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self.http.request(method, url, **kwargs)
            except httpx.TimeoutException:
                raise ModelError(f"the model server at {self.base} did not answer within {self.timeout:g} s") from None
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if attempt >= self.retries:
                    raise _Unreachable(_short(exc)) from None
            else:
                if response.status_code < 500 or attempt >= self.retries:
                    return response
            attempt += 1
            await anyio.sleep(self.backoff * 2 ** (attempt - 1))

    async def _json(self, method: str, path: str, **kwargs) -> dict:
        response = await self._request(method, path, **kwargs)
        if response.status_code != 200:
            raise _Refused(
                f"the model server answered HTTP {response.status_code} to {path.rsplit('/', 1)[-1]}: "
                f"{_message(response)}"
            )
        try:
            data = response.json()
        except ValueError:
            raise ModelError(
                f"the model server's answer to {path.rsplit('/', 1)[-1]} is not JSON: {response.text[:200]!r}"
            ) from None
        if not isinstance(data, dict):
            raise ModelError(f"the model server's answer to {path.rsplit('/', 1)[-1]} is not a JSON object")
        return data

    # -- the API --------------------------------------------------------------------------------------
    async def _models(self) -> list[dict]:
        if self._listed is None:
            data = await self._json("GET", "/v1/models")
            models = data.get("data") or []
            self._listed = [m for m in models if isinstance(m, dict) and "id" in m]
        return self._listed

    async def resolve_model(self) -> str:
        if self.model:
            return self.model
        models = await self._models()
        if not models:
            raise ModelError(f"the server at {self.url} lists no models")
        self.model = self.name = str(models[0]["id"])
        return self.model

    async def context_length(self) -> int | None:
        try:
            models = await self._models()
        except ModelError:
            return None
        for m in models:
            if m["id"] == (self.model or m["id"]) and isinstance(m.get("max_model_len"), int):
                return m["max_model_len"]
        return None

    async def tokenize(self, text: str) -> list[int]:
        cached = self._token_cache.get(text)
        if cached is not None:
            self._token_cache.move_to_end(text)
            return cached
        model = await self.resolve_model()
        data = await self._json("POST", "/tokenize", json={"model": model, "prompt": text, "add_special_tokens": False})
        tokens = data.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ModelError("the server's /tokenize answer has no list of token ids")
        self._token_cache[text] = tokens
        if len(self._token_cache) > 4096:
            self._token_cache.popitem(last=False)
        return tokens

    async def special_ids(self, tokens: list[str]) -> dict[str, int]:
        out = {}
        for token in tokens:
            ids = await self.tokenize(token)
            if len(ids) != 1:
                raise ModelError(f"the served model has no special token {token} (it tokenizes to {len(ids)} ids)")
            out[token] = ids[0]
        return out

    async def _prefix_hits(self) -> float | None:
        if not self._metrics_supported:
            return None
        try:
            response = await self.http.get(self.base + "/metrics", timeout=5.0)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            self._metrics_supported = False
            return None
        m = _PREFIX_HITS.search(response.text)
        if m is None:
            self._metrics_supported = False
            return None
        return float(m.group(1))

    async def complete(
        self,
        prompt: list[int],
        *,
        max_tokens: int,
        stop_ids: list[int],
        n: int = 1,
        temperature: float = 0.0,
        constraint: Constraint | None = None,
    ) -> CompletionResult:
        if constraint is None:
            return await self._complete(prompt, max_tokens=max_tokens, stop_ids=stop_ids, n=n, temperature=temperature)
        whole = await self._whole_frame(prompt, constraint, max_tokens, stop_ids, n, temperature)
        if whole is not None:
            return await self._repaired(prompt, whole, constraint, max_tokens, temperature)
        result = await self._complete(prompt, max_tokens=max_tokens, stop_ids=stop_ids, n=n, temperature=temperature)
        if self._whole_frames is None and self._regex_refused:
            self._whole_frames = False  # it refused the regex and took the same request without it
        return await self._repaired(prompt, result, constraint, max_tokens, temperature)

    async def _whole_frame(
        self,
        prompt: list[int],
        constraint: Constraint,
        max_tokens: int,
        stop_ids: list[int],
        n: int,
        temperature: float,
    ) -> CompletionResult | None:
        """The frame asked for in one request constrained by its whole regex; None where it must be
        asked the plain way: this server spells special tokens out in plain text, or it refused
        this request (it takes no regex, or could not compile this one's grammar in time)."""
        regex = constraint.frame_regex(head_only=True)
        if self._whole_frames is False or regex is None:
            return None
        try:
            result = await self._complete(
                prompt, max_tokens=max_tokens, stop_ids=stop_ids, n=n, temperature=temperature, regex=regex
            )
        except _Refused:
            self._regex_refused = True  # (a server that cannot be reached is not asked again the plain way)
            return None
        if not self._whole_frames:
            counts = [_special_tokens(c) for c in result.completions]
            if any(spelled for _, spelled in counts) and not any(whole for whole, _ in counts):
                # its grammar engine does not match a special token by its text: the model would
                # read frames it never saw. (Once one has come whole, a spelled one is the model's
                # pick among what the frame allowed, and its text is the same.)
                self._whole_frames = False
                return None
            if any(whole for whole, _ in counts):
                self._whole_frames = True  # judged only by an answer that shows it
        return msgspec.structs.replace(result, completions=tuple(_finished(constraint, c) for c in result.completions))

    async def _repaired(
        self, prompt: list[int], result: CompletionResult, constraint: Constraint, max_tokens: int, temperature: float
    ) -> CompletionResult:
        """`result` with each completion the constraint refuses made again segment by segment."""
        if all(constraint.accepts(c.text) for c in result.completions):
            return result
        started = time.monotonic()
        completions: list[Completion] = []
        requests = result.requests
        repaired = 0
        for completion in result.completions:
            if constraint.accepts(completion.text):
                completions.append(completion)
                continue
            made_completion, made = await self._by_segments(prompt, constraint, max_tokens, temperature, completion)
            completions.append(made_completion)
            requests += made
            repaired += 1
        return CompletionResult(
            tuple(completions),
            result.prompt_tokens,
            result.generated_tokens,
            result.cached_tokens,
            result.seconds + time.monotonic() - started,
            constrained=repaired,
            requests=requests,
        )

    async def _by_segments(
        self,
        prompt: list[int],
        constraint: Constraint,
        max_tokens: int,
        temperature: float,
        refused: Completion | None = None,
    ) -> tuple[Completion, int]:
        """A completion made one constrained segment at a time, with its tokens' log probabilities
        where the server gave them (a forced single choice counts as certain; text added to close a
        segment cut off by the budget is marked cut); and the requests made. The segments of the
        `refused` plain completion that the constraint accepts are kept as they are (no request):
        usually only the segment the model got wrong (a line the program cannot reach) is asked again."""
        state = constraint.start()
        ids = list(prompt)
        pieces: list[str] = []
        offsets: list[int] = []
        logprobs: list[float] = []
        cuts: list[int] = []
        known = True  # every piece came with its probabilities
        length = 0
        requests = 0
        budget = max_tokens
        if refused is not None:
            state, length, known = await self._keep_accepted(refused, constraint, state, ids, pieces, offsets, logprobs)
            budget -= len(ids) - len(prompt)
        while not constraint.done(state):
            kind, what = constraint.segment(state)
            if kind == "special":
                options = list(what)  # type: ignore[call-overload]
                logprob: float | None = 0.0
                if len(options) > 1:
                    token, logprob = await self._choose_special(ids, options, temperature)
                    requests += 1
                else:
                    token = options[0]
                nxt = constraint.step_special(state, token)
                if nxt is None:
                    raise ModelError(f"the server chose {token}, which the constraint does not allow")
                state = nxt
                if constraint.done(state):
                    break  # the frame separator: the stop token, left out of the text
                ids.append((await self.special_ids([token]))[token])
                pieces.append(token)
                offsets.append(length)
                logprobs.append(logprob if logprob is not None else 0.0)
                known = known and logprob is not None
                length += len(token)
                continue
            if kind == "choice" and len(what) == 1:  # type: ignore[arg-type]
                # one line left: the program's, not the model's (certain, and no request)
                choice = Completion(what[0], "stop", 1, offsets=(0,), logprobs=(0.0,))  # type: ignore[index]
            else:
                choice = await self._structured(ids, kind, what, temperature, max(1, budget - CLOSING_ROOM // 2))
                requests += 1
            text = choice.text
            nxt = constraint.step_bytes(state, text.encode())
            if nxt is None:
                raise ModelError(f"the server's {kind}-constrained output {text[:80]!r} does not fit the frame")
            if choice.logprobs:
                offsets += [length + o for o in choice.offsets]
                logprobs += list(choice.logprobs)
            elif text:
                known = False
            # cut off by the token budget mid-segment (a long string value, say): end it the
            # shortest way the frame allows, so the frame still completes
            closing = constraint.close_segment(nxt)
            if closing is None:
                raise ModelError(f"the server's {kind}-constrained output {text[:80]!r} cannot be completed")
            if closing:
                cuts.append(length + len(text))
                offsets.append(length + len(text))
                logprobs.append(0.0)
                text += closing.decode()
                nxt = constraint.step_bytes(nxt, closing)
            state = nxt
            pieces.append(text)
            length += len(text)
            new_ids = await self.tokenize(text)
            ids.extend(new_ids)
            budget -= len(new_ids)
        if not known:
            offsets, logprobs, cuts = [], [], []
        made = Completion(
            "".join(pieces), "stop", len(offsets), offsets=tuple(offsets), logprobs=tuple(logprobs), cuts=tuple(cuts)
        )
        return made, requests

    async def _keep_accepted(
        self,
        refused: Completion,
        constraint: Constraint,
        state,
        ids: list[int],
        pieces: list[str],
        offsets: list[int],
        logprobs: list[float],
    ) -> tuple[object, int, bool]:
        """Walk the refused completion segment by segment while the constraint accepts each one
        whole, appending the kept pieces (their ids, and the probabilities the server gave their
        tokens); returns (the state after them, their length, whether probabilities are known)."""
        text = refused.text
        known = bool(refused.logprobs)
        length = 0
        while length < len(text) and not constraint.done(state):
            kind, what = constraint.segment(state)
            rest = text[length:]
            if kind == "special":
                token = next((t for t in what if rest.startswith(t)), None)  # type: ignore[attr-defined]
                nxt = None if token is None else constraint.step_special(state, token)
                if token is None or nxt is None or constraint.done(nxt):
                    break  # (the frame's end is left to the loop, which does not write it)
                ids.append((await self.special_ids([token]))[token])
                piece = token
            else:
                found = _SPECIAL.search(rest)
                piece = rest[: found.start()] if found else rest
                nxt = constraint.step_bytes(state, piece.encode())
                if not piece or nxt is None or constraint.close_segment(nxt) != b"":
                    break
                ids.extend(await self.tokenize(piece))
            kept = [k for k, o in enumerate(refused.offsets) if length <= o < length + len(piece)]
            offsets += [refused.offsets[k] for k in kept]
            logprobs += [refused.logprobs[k] for k in kept]
            pieces.append(piece)
            length += len(piece)
            state = nxt
        return state, length, known

    async def _choose_special(
        self, prompt: list[int], options: list[str], temperature: float
    ) -> tuple[str, float | None]:
        """One of `options`, and the log probability the server gave it (None if it did not say)."""
        allowed = await self.special_ids(options)
        body = {
            "model": await self.resolve_model(),
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": temperature,
            "allowed_token_ids": [allowed[o] for o in options],
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
            "logprobs": 1,
        }
        data = await self._json("POST", "/v1/completions", json=body)
        text = _first_text(data)
        if not text and _ended_by_eos(data["choices"][0]):
            text = END_OF_TEXT  # the end was the choice (vLLM leaves it out of the text)
        chosen = _completion(data["choices"][0])
        for option in options:
            if text.startswith(option):
                return option, chosen.logprobs[0] if chosen.logprobs else None
        raise ModelError(f"the server answered {text[:40]!r} where one of {options} was allowed")

    async def _structured(
        self, prompt: list[int], kind: str, what: object, temperature: float, max_tokens: int
    ) -> Completion:
        constraint = {"regex": what} if kind == "regex" else {"choice": list(what)}  # type: ignore[call-overload]
        body = {
            "model": await self.resolve_model(),
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "structured_outputs": constraint,
            "skip_special_tokens": True,
            "spaces_between_special_tokens": False,
            "logprobs": 1,
        }
        data = await self._json("POST", "/v1/completions", json=body)
        _first_text(data)
        return _completion(data["choices"][0])

    async def _complete(
        self,
        prompt: list[int],
        *,
        max_tokens: int,
        stop_ids: list[int],
        n: int = 1,
        temperature: float = 0.0,
        regex: str | None = None,
    ) -> CompletionResult:
        """One request; with `regex`, the server constrains the whole completion with it."""
        model = await self.resolve_model()
        hits_before = None if self._usage_has_cache else await self._prefix_hits()
        started = time.monotonic()
        body = {
            "model": model,
            "prompt": prompt,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "n": n,
            "stop_token_ids": stop_ids,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
            "logprobs": 1,  # each generated token's log probability (format.confidence)
        }
        if regex is not None:
            body["structured_outputs"] = {"regex": regex}
        data = await self._json("POST", "/v1/completions", json=body)
        seconds = time.monotonic() - started
        choices = data.get("choices")
        if (
            not isinstance(choices, list)
            or not choices
            or not all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in choices)
        ):
            raise ModelError(f"the server's answer is not a completion (no choices with text): {str(data)[:200]}")
        usage: dict = data["usage"] if isinstance(data.get("usage"), dict) else {}
        details: dict = usage["prompt_tokens_details"] if isinstance(usage.get("prompt_tokens_details"), dict) else {}
        cached = details.get("cached_tokens") if isinstance(details.get("cached_tokens"), int) else None
        if cached is not None:
            self._usage_has_cache = True
        elif hits_before is not None:
            hits_after = await self._prefix_hits()
            if hits_after is not None:
                cached = int(hits_after - hits_before)
        completions = tuple(_completion(c, ended_by_eos=_ended_by_eos(c)) for c in choices)
        return CompletionResult(
            completions=completions,
            prompt_tokens=int(usage.get("prompt_tokens") or len(prompt)),
            generated_tokens=int(usage.get("completion_tokens") or 0),
            cached_tokens=cached,
            seconds=seconds,
        )


def _ended_by_eos(choice: dict) -> bool:
    """vLLM stopped at the end-of-text token, which it leaves out of the text: `stop_reason` is null
    (a stop token id or string would be named there). For a trace it means the traced scope ended."""
    return choice.get("finish_reason") == "stop" and "stop_reason" in choice and choice["stop_reason"] is None


def _finished(constraint: Constraint, completion: Completion) -> Completion:
    """A frame whose regex ended after its head (the locals, where one line is left) with the
    rest the program forces: special tokens and the line, certain. Where the server, with only stop
    tokens left, chose the end-of-text token, that end was no choice of the model's."""
    if constraint.accepts(completion.text):
        return completion
    text = completion.text.removesuffix(END_OF_TEXT)
    ending = constraint.forced_ending(constraint.run(text, complete=False))
    if ending is None:
        return completion
    kept = [k for k, offset in enumerate(completion.offsets) if offset < len(text)]
    offsets = tuple(completion.offsets[k] for k in kept)
    logprobs = tuple(completion.logprobs[k] for k in kept)
    if ending and logprobs:  # the program's text is certain (where the server said how sure it was)
        offsets, logprobs = (*offsets, len(text)), (*logprobs, 0.0)
    return msgspec.structs.replace(
        completion, text=text + ending, finish_reason="stop", offsets=offsets, logprobs=logprobs
    )


def _special_tokens(completion: Completion) -> tuple[int, int]:
    """(whole, spelled): the special tokens in the text that came as one token each, and those
    spelled out in plain text (a token starts inside them). Without token offsets nothing can be
    told; the end-of-text token is a stop the client writes back itself."""
    if not completion.offsets:
        return 0, 0
    starts = set(completion.offsets)
    whole = spelled = 0
    for found in _SPECIAL.finditer(completion.text):
        if found.group() == END_OF_TEXT:
            continue
        if found.start() in starts and not any(found.start() < o < found.end() for o in completion.offsets):
            whole += 1
        else:
            spelled += 1
    return whole, spelled


def _completion(choice: dict, *, ended_by_eos: bool = False) -> Completion:
    """A choice with its tokens' log probabilities (the legacy completions `logprobs` object:
    `text_offset` and `token_logprobs`), where the server gave them; `ended_by_eos`: the end-of-text
    token that stopped it is put back at the end of the text."""
    text = choice["text"] + (END_OF_TEXT if ended_by_eos else "")
    logprobs = choice.get("logprobs")
    offsets: list[int] = []
    values: list[float] = []
    if isinstance(logprobs, dict):
        raw_offsets = logprobs.get("text_offset")
        raw_values = logprobs.get("token_logprobs")
        if (
            isinstance(raw_offsets, list)
            and isinstance(raw_values, list)
            and raw_offsets
            and len(raw_offsets) == len(raw_values)
            and all(isinstance(o, int) for o in raw_offsets)
        ):
            first = raw_offsets[0]  # some servers count from the prompt's start
            for offset, value in zip(raw_offsets, raw_values, strict=True):
                if offset - first >= len(text) and offsets:
                    break  # the stop token, left out of the text
                offsets.append(offset - first)
                values.append(float(value) if isinstance(value, (int, float)) else 0.0)
    return Completion(text, choice.get("finish_reason"), len(offsets), offsets=tuple(offsets), logprobs=tuple(values))


def _first_text(data: dict) -> str:
    choices = data.get("choices")
    if (
        not isinstance(choices, list)
        or not choices
        or not isinstance(choices[0], dict)
        or not isinstance(choices[0].get("text"), str)
    ):
        raise ModelError(f"the server's answer is not a completion: {str(data)[:200]}")
    return choices[0]["text"]


class _Refused(ModelError):
    """The server answered, with an error status."""


class _Unreachable(Exception):
    """A replica that did not take the connection (after its retries)."""


def _root(url: str) -> str:
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


def _short(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 160 else text[:160] + "..."


def _message(response: httpx.Response) -> str:
    try:
        data = response.json()
        if isinstance(data, dict):
            error = data.get("error") or data.get("message") or data.get("detail")
            if isinstance(error, dict):
                error = error.get("message")
            if error:
                return str(error)[:300]
    except ValueError:
        pass
    return response.text[:300] or response.reason_phrase
