"""The vocabulary every stage speaks: value types, configuration, requests, errors, stops.

The bottom layer: it imports nothing from the rest of rxcord.
"""
