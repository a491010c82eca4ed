//! Python bindings (filled in by the bindings work).
