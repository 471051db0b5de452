def row_sums(rows):
    sums = []
    s = 0
    for row in rows:
        for v in row:
            s += v
        sums.append(s)
    return sums


result = row_sums([[1, 2], [3, 4], [5]])
print(result)
