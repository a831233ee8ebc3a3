echo example
