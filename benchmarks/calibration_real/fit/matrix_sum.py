"""Row sums, column sums and the trace of a square matrix."""

grid = [[2, 7, 6], [9, 5, 1], [4, 3, 8]]

row_sums = [sum(row) for row in grid]
col_sums = [sum(grid[r][c] for r in range(3)) for c in range(3)]
trace = 0
for i in range(3):
    trace += grid[i][i]
magic = len(set(row_sums + col_sums + [trace])) == 1
print(row_sums, col_sums, trace, magic)
