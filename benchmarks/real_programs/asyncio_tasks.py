"""An asyncio script: tasks, gather, a queue and a timeout; the breakpoint is in a coroutine."""

import asyncio


async def fetch(name, delay):
    await asyncio.sleep(delay)
    size = len(name) * 100  # breakpoint
    return name, size


async def consumer(queue, results):
    while True:
        item = await queue.get()
        if item is None:
            break
        results.append(item[1])


async def main():
    pages = await asyncio.gather(fetch("index", 0.01), fetch("about", 0.0), fetch("contact", 0.02))
    queue = asyncio.Queue()
    results = []
    task = asyncio.create_task(consumer(queue, results))
    for page in pages:
        await queue.put(page)
    await queue.put(None)
    await asyncio.wait_for(task, timeout=5)
    print(pages)
    print(sum(results))


asyncio.run(main())
