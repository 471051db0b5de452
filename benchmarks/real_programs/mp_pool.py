"""A multiprocessing Pool mapping work over processes; the breakpoint is in the parent, after the map."""

import multiprocessing


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def main():
    with multiprocessing.Pool(2) as pool:
        steps = pool.map(collatz_steps, range(1, 30))
    longest = max(range(len(steps)), key=steps.__getitem__) + 1  # breakpoint
    print(steps)
    print(longest, steps[longest - 1])


if __name__ == "__main__":
    main()
