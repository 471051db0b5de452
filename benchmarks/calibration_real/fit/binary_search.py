"""Binary search over a sorted list, counting the probes."""


def search(items, target):
    lo, hi = 0, len(items) - 1
    probes = 0
    while lo <= hi:
        mid = (lo + hi) // 2
        probes += 1
        if items[mid] == target:
            return mid, probes
        if items[mid] < target:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1, probes


data = [2, 5, 8, 12, 16, 23, 38, 56, 72, 91]
found = search(data, 23)
missing = search(data, 7)
print(found, missing)
