"""The gate proves it can fail: selftest (the reference accepted, every catalogued fault caught), what
it proves of each check, and the stored mutation figure."""
