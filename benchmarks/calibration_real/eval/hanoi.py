"""Towers of Hanoi: the moves, recursively."""

moves = []


def hanoi(n, source, target, spare):
    if n == 0:
        return
    hanoi(n - 1, source, spare, target)
    moves.append((source, target))
    hanoi(n - 1, spare, target, source)


hanoi(3, "A", "C", "B")
print(len(moves), moves[:3])
