"""Serial dilution template (no shebang, no exec bit)."""
metadata = {"protocolName": "Serial dilution", "apiLevel": "2.19"}
STEPS = 8


def run(protocol):
    for _ in range(STEPS):
        protocol.transfer(100, "A1", "A2")
