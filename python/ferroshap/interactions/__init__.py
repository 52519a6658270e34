"""The interactions engine: ProxySPEX and exact interaction indices."""
