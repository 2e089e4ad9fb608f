//! The OpenCL driver: [`session::Session`], one model on one OpenCL
//! device (the device, program cache, buffer pool and native calls in
//! flight live beside it at the crate's root, shared by its tools).

pub mod session;
