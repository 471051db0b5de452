class Editor:
    def __init__(self):
        self.lines = []
        self.history = []

    def insert(self, text):
        self.history.append(self.lines)
        self.lines.append(text)

    def undo(self):
        self.lines = self.history.pop()


ed = Editor()
ed.insert("a")
ed.insert("b")
ed.undo()
result = ed.lines
print(result)
