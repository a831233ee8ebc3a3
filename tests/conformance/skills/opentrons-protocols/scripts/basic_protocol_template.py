#!/usr/bin/env python3
"""Basic protocol template: a robot runs run(protocol); nothing happens on its own."""
from skill_magics_absent_robot_api import protocol_api

metadata = {"protocolName": "Basic", "apiLevel": "2.19"}
requirements = {"robotType": "Flex"}


def run(protocol: protocol_api.ProtocolContext):
    protocol.comment("hello")
