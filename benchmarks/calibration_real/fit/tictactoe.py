"""Who won a game of tic-tac-toe?"""

board = [
    ["X", "O", "X"],
    ["O", "X", "O"],
    ["O", "X", "X"],
]


def lines_of(grid):
    rows = [list(r) for r in grid]
    cols = [[grid[r][c] for r in range(3)] for c in range(3)]
    diagonals = [[grid[i][i] for i in range(3)], [grid[i][2 - i] for i in range(3)]]
    return rows + cols + diagonals


def winner(grid):
    for line in lines_of(grid):
        if line[0] != " " and line.count(line[0]) == 3:
            return line[0]
    return None


print(winner(board))
