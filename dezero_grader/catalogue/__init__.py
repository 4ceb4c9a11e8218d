"""What each step asks and what it must catch: the assignment files read and validated, and the fault
catalogue (faults/) that selftest injects."""
