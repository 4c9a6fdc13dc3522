//! The cluster CA, node certificates and mutual TLS (filled in next).
