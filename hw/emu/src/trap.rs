//! Catching the CPU's stores to UAR pages.
