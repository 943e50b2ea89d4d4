"""rxcord.operators: the pure stage functions and the thin Rx operators of stages 03-06."""
