"""A checkout queue simulated minute by minute."""

from collections import deque

arrivals = {0: 2, 1: 1, 3: 3, 4: 1}  # minute -> customers arriving
service_per_minute = 1
queue = deque()
served = 0
longest = 0
for minute in range(7):
    for k in range(arrivals.get(minute, 0)):
        queue.append((minute, k))
    for _ in range(service_per_minute):
        if queue:
            queue.popleft()
            served += 1
    longest = max(longest, len(queue))
print(served, len(queue), longest)
