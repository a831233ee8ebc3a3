"""Checks every Office validator shares."""


class BaseValidator:
    def __init__(self, path):
        self.path = path

    def validate(self):
        return bool(self.path)


if __name__ == "__main__":
    print("run validate.py instead")
