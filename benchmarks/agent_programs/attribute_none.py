class Account:
    def __init__(self, owner):
        self.owner = owner
        self.history = None

    def deposit(self, amount):
        self.history.append(amount)


acct = Account("ada")
acct.deposit(10)
