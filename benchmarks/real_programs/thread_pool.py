"""A ThreadPoolExecutor fanning work out to threads; the breakpoint is in the worker."""

from concurrent.futures import ThreadPoolExecutor


def checksum(chunk):
    total = 0
    for k, value in enumerate(chunk):
        total = (total * 31 + value * (k + 1)) % 1_000_003  # breakpoint
    return total


def main():
    chunks = [list(range(start, start + 50)) for start in range(0, 400, 50)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        sums = list(pool.map(checksum, chunks))
    print(sums)
    print(sum(sums) % 1_000_003)


main()
