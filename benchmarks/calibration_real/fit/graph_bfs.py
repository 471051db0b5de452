"""Shortest hops between stations with breadth-first search."""

from collections import deque

lines = {
    "A": ["B", "C"],
    "B": ["A", "D"],
    "C": ["A", "D", "E"],
    "D": ["B", "C", "F"],
    "E": ["C", "F"],
    "F": ["D", "E"],
}


def shortest_path(start, goal):
    queue = deque([[start]])
    seen = {start}
    while queue:
        path = queue.popleft()
        node = path[-1]
        if node == goal:
            return path
        for nxt in lines[node]:
            if nxt not in seen:
                seen.add(nxt)
                queue.append(path + [nxt])
    return None


route = shortest_path("A", "F")
print(" -> ".join(route), len(route) - 1)
