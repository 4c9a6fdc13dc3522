//! Origins (filled in next).
