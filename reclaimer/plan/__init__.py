"""Planning one cycle: capacity, shares, victims, preemption, resume, reshape, limits."""
