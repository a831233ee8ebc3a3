class GIFBuilder:
    def __init__(self, width, height):
        self.size = (width, height)
