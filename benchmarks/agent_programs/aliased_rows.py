def board(n):
    grid = [[0] * n] * n
    grid[0][0] = 1
    return grid


result = board(3)
print(result)
