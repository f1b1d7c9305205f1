"""A tiny shop: the code the example workflows review, fix and test."""
