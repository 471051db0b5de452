"""Bubble sort with a swap helper: loops, a helper call, a list changing in place."""


def swap(items, i, j):
    items[i], items[j] = items[j], items[i]
    return items


def bubble_sort(values):
    items = list(values)
    n = len(items)
    for end in range(n - 1, 0, -1):
        swapped = False
        for i in range(end):
            if items[i] > items[i + 1]:
                swap(items, i, i + 1)
                swapped = True
        if not swapped:
            break
    return items


result = bubble_sort([5, 2, 4, 1])
print("sorted:", result)
