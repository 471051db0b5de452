"""A print queue with priorities."""

import heapq


class PrintQueue:
    def __init__(self):
        self.heap = []
        self.counter = 0

    def submit(self, doc, priority):
        heapq.heappush(self.heap, (priority, self.counter, doc))
        self.counter += 1

    def next_job(self):
        priority, _, doc = heapq.heappop(self.heap)
        return doc


q = PrintQueue()
q.submit("report.pdf", 2)
q.submit("urgent.txt", 0)
q.submit("photo.png", 2)
order = [q.next_job() for _ in range(3)]
print(order)
