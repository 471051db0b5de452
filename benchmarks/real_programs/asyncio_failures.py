"""asyncio.gather with results and a failing task, a cancelled task and an awaited failure: the
breakpoint is in the coroutine the failing fetch runs."""

import asyncio


async def fetch(name, delay):
    await asyncio.sleep(delay)
    if name == "bad":
        raise ValueError(f"cannot fetch {name}")
    return name.upper()  # breakpoint


async def slow():
    await asyncio.sleep(1)
    return "slow"


async def main():
    results = await asyncio.gather(fetch("a", 0.01), fetch("bad", 0.02), return_exceptions=True)
    print(results)
    task = asyncio.create_task(slow())
    await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled")
    try:
        await fetch("bad", 0)
    except ValueError as exc:
        print("caught", exc)


asyncio.run(main())
