"""The stage 03 reasoning guards: think tags, spilled reasoning, the prefill, what a stop holds.

Each guard splits the answer text a user sees from the reasoning a model leaked into it.
"""
