"""rxcord.sinks: stage 07, Discord delivery (the deliver operator, the delivery plan, the sinks)."""
