"""CPU per chat call of the transport alone: qagen's lean transport against the `openai` client's `post`.

    python benchmarks/bench_transport.py                   # 4,000 calls each, 64 in flight
    python benchmarks/bench_transport.py --calls 10000 --concurrency 256

The stand-in LLM answers at once in a process of its own (its CPU is not counted). Each variant
sends the same requests (a draft prompt of about 1,600 characters, each one different) through one
client, `--concurrency` at a time, after a warm-up; the figure is this process's CPU time over the
calls, which on a 2-core machine also depends on what else runs (the calibration and load average
are printed with it). Variants: `transport` is `OpenAIBackend.reply` as a build calls it (request
body, lean transport, reply parsed); `sdk-post` is the `openai` client's generic `post` with the
same body and the same reply parsing, as `OpenAIBackend` sent until the lean transport.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from qagen.llm.backends import ModelSettings, OpenAIBackend, chat_body, openai_client, parse_completion
from qagen.llm.task import Reply, Request, user_request

PROMPT = "Write one factoid question and its answer from this context.\n\nContext: " + "glacier violin " * 100


@contextmanager
def stand_in() -> Iterator[str]:
    """The stand-in LLM in a process of its own; yields its base URL."""
    port_file = Path(tempfile.mkdtemp(prefix="qagen-transport-")) / "port"
    command = [sys.executable, "-m", "standins.llm.server", "--port", "0", "--port-file", str(port_file)]
    # From the repository's root, where `python -m` finds standins/ (it is not installed).
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[1])
    try:
        while not port_file.exists():
            if server.poll() is not None:
                raise RuntimeError("the stand-in LLM did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
    finally:
        server.terminate()
        server.wait()


async def measure(variant: str, settings: ModelSettings, calls: int, concurrency: int) -> float:
    """CPU milliseconds per call of `variant` (see the module)."""
    close: Callable[[], Awaitable[None]]
    if variant == "transport":
        backend = OpenAIBackend(settings, connections=concurrency)
        send, close = backend.reply, backend.aclose
    else:
        import httpx

        client: Any = openai_client(settings, connections=concurrency)

        async def send(request: Request) -> Reply:
            body = chat_body(settings, request)
            response = await client.post("/chat/completions", body=body, cast_to=httpx.Response)
            return parse_completion(response.content)

        close = client.close
    slots = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        async with slots:
            await send(user_request(f"{PROMPT} ({number})"))

    try:
        await asyncio.gather(*(one(number) for number in range(200)))  # connections made, code warm
        started = time.process_time()
        await asyncio.gather(*(one(number) for number in range(200, 200 + calls)))
        return (time.process_time() - started) * 1000 / calls
    finally:
        await close()


def calibration() -> str:
    started = time.process_time()
    total = 0
    for number in range(5_000_000):
        total += number
    return f"calibration: 5M additions in {time.process_time() - started:.2f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--variants", default="transport,sdk-post,transport,sdk-post")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")
    print(calibration())
    with stand_in() as base_url:
        settings = ModelSettings(spec="openai:stand-in", base_url=base_url)
        for variant in args.variants.split(","):
            per_call = asyncio.run(measure(variant, settings, args.calls, args.concurrency))
            print(f"{variant:>10}: {per_call:.3f} ms CPU per call ({args.calls:,} calls, {args.concurrency} in flight)")
    print(f"{calibration()}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
