# How many (128, free_dim) tiles does a 1-D vector of n elements fill? (plain Python, no kernel)
def tiles(n, free_dim=1000):
    ### BEGIN SOLUTION
    return -(-n // (128 * free_dim))
    ### END SOLUTION
