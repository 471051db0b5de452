"""A singly linked list: append, reverse, and back to a Python list."""


class Node:
    def __init__(self, value, next=None):
        self.value = value
        self.next = next


def from_list(values):
    head = None
    for value in reversed(values):
        head = Node(value, head)
    return head


def reverse(head):
    previous = None
    while head is not None:
        head.next, previous, head = previous, head, head.next
    return previous


def to_list(head):
    out = []
    while head:
        out.append(head.value)
        head = head.next
    return out


chain = from_list([1, 2, 3, 4])
print(to_list(reverse(chain)))
