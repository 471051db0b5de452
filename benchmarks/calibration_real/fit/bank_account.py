"""A bank account with deposits, withdrawals and a refused overdraft."""


class InsufficientFunds(Exception):
    pass


class Account:
    def __init__(self, owner, balance=0):
        self.owner = owner
        self.balance = balance
        self.history = []

    def deposit(self, amount):
        self.balance += amount
        self.history.append(("deposit", amount))

    def withdraw(self, amount):
        if amount > self.balance:
            raise InsufficientFunds(f"{self.owner} has only {self.balance}")
        self.balance -= amount
        self.history.append(("withdraw", amount))


acct = Account("dana", 50)
acct.deposit(25)
acct.withdraw(30)
try:
    acct.withdraw(100)
except InsufficientFunds as exc:
    message = str(exc)
print(acct.balance, len(acct.history), message)
