//! Feeds arbitrary bytes to the runtime's loaders of untrusted input: the
//! `.npy` reader, the tensor literal and type parsers (`--input=...`) and
//! the program cache's entry decoder. Each must return a value or an
//! error, never panic, hang or allocate without bound.
//!
//! (The artifact loader is not fuzzed: loading a `model.so` runs its code
//! through `dlopen`, so a hostile artifact is already code execution; the
//! loader's checks of the table it describes are unit-tested.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use tcc_runtime::HostTensor;
use tcc_runtime::program_cache::decode_entry;

fuzz_target!(|data: &[u8]| {
    let _ = tcc_runtime::npy::read_npy_bytes(data);
    if let Ok(text) = std::str::from_utf8(data) {
        // Literals can legitimately be large (a splat fills its type): keep
        // the fuzzer to types it can afford by checking the size first.
        if let Some((ty, _)) = text.split_once('=')
            && let Ok((shape, dtype)) = tcc_runtime::tensor::parse_type(ty)
            && tcc_runtime::tensor::byte_size(&shape, dtype).is_some_and(|b| b <= 1 << 24)
        {
            let _ = HostTensor::parse_literal(text);
        }
        let _ = tcc_runtime::tensor::parse_type(text);
    }
    let key = [7u8; 32];
    let _ = decode_entry(data, &key);
});
