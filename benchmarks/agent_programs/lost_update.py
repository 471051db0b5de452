class Account:
    def __init__(self, owner, balance):
        self.owner = owner
        self.balance = balance

    def deposit(self, amount):
        self.balance + amount
        return self


acct = Account("ada", 10).deposit(5)
result = acct.balance
print(result)
