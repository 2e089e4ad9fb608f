//! tcc-runtime (being written).
