"""The compiled code in one place: numba's loops and the functions they inline (intrinsics, vecmath, ddmath, exactmath, the comparison's measure), and the one numpy/compiled switch (mode)."""
