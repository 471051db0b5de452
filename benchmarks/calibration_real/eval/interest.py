"""Compound interest year by year until a savings goal."""

balance = 1000.0
rate = 0.05
goal = 1300.0
year = 0
history = [balance]
while balance < goal:
    balance = round(balance * (1 + rate), 2)
    year += 1
    history.append(balance)
print(year, balance, history[-2])
