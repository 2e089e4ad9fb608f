//! A bounds check of an ELF shared library before the dynamic loader sees
//! it. `dlopen` maps a file's segments as its program headers describe
//! them; a truncated file whose headers promise bytes past its end maps
//! fine and then faults (SIGBUS) when the loader or the model touches
//! those pages. Checking that the ELF header, the program and section
//! header tables and every loadable segment lie inside the bytes turns such
//! a file into an error instead. It also refuses what is not an ELF shared
//! object for this machine, with a message that says what it is.

use std::io::Read as _;
use std::path::Path;

/// `e_machine` of the machine this runtime was built for.
#[cfg(target_arch = "x86_64")]
const HOST_MACHINE: u16 = 62;
#[cfg(target_arch = "aarch64")]
const HOST_MACHINE: u16 = 183;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_MACHINE: u16 = 0;

/// The name of an ELF `e_machine` value, for messages.
pub fn machine_name(machine: u16) -> String {
    match machine {
        3 => "x86 (32-bit)".into(),
        40 => "ARM (32-bit)".into(),
        62 => "x86-64".into(),
        183 => "AArch64".into(),
        243 => "RISC-V".into(),
        other => format!("ELF machine {other}"),
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The parts of an ELF64 header this check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElfHeader {
    pub machine: u16,
    pub kind: u16,
    phoff: u64,
    phentsize: u16,
    phnum: u16,
    shoff: u64,
    shentsize: u16,
    shnum: u16,
}

/// Reads the 64-byte ELF header (little-endian ELF64 only).
pub fn header(bytes: &[u8]) -> Result<ElfHeader, String> {
    if bytes.len() < 4 || &bytes[..4] != b"\x7fELF" {
        return Err("not an ELF file (a tcc artifact is a shared library)".into());
    }
    if bytes.len() < 64 {
        return Err(format!(
            "truncated: {} bytes, shorter than an ELF header",
            bytes.len()
        ));
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err("not a little-endian 64-bit ELF file".into());
    }
    Ok(ElfHeader {
        kind: u16_at(bytes, 16),
        machine: u16_at(bytes, 18),
        phoff: u64_at(bytes, 32),
        shoff: u64_at(bytes, 40),
        phentsize: u16_at(bytes, 54),
        phnum: u16_at(bytes, 56),
        shentsize: u16_at(bytes, 58),
        shnum: u16_at(bytes, 60),
    })
}

fn table_end(offset: u64, entry: u16, count: u16) -> Option<u64> {
    offset.checked_add(u64::from(entry) * u64::from(count))
}

/// Checks `head` (the file's first bytes, at least through the program
/// header table) of a file of `len` bytes.
fn check(head: &[u8], len: u64) -> Result<(), String> {
    let h = header(head)?;
    if h.kind != 3 {
        return Err(format!(
            "an ELF {} file, not a shared library",
            match h.kind {
                1 => "relocatable (.o)".to_string(),
                2 => "executable".to_string(),
                k => format!("type {k}"),
            }
        ));
    }
    if HOST_MACHINE != 0 && h.machine != HOST_MACHINE {
        return Err(format!(
            "built for {}, this machine is {}",
            machine_name(h.machine),
            machine_name(HOST_MACHINE)
        ));
    }
    let truncated = |what: &str| {
        format!("truncated or damaged: its {what} lies past the end of the {len} bytes")
    };
    let ph_end = table_end(h.phoff, h.phentsize, h.phnum)
        .ok_or_else(|| truncated("program header table"))?;
    if ph_end > len || (h.phnum > 0 && usize::from(h.phentsize) < 56) {
        return Err(truncated("program header table"));
    }
    if h.shnum > 0 {
        let sh_end = table_end(h.shoff, h.shentsize, h.shnum)
            .ok_or_else(|| truncated("section header table"))?;
        if sh_end > len {
            return Err(truncated("section header table"));
        }
    }
    if ph_end as usize > head.len() {
        return Err(truncated("program header table"));
    }
    for i in 0..usize::from(h.phnum) {
        let at = h.phoff as usize + i * usize::from(h.phentsize);
        let p_type = u32_at(head, at);
        let offset = u64_at(head, at + 8);
        let filesz = u64_at(head, at + 32);
        if p_type == 1 /* PT_LOAD */ || p_type == 2
        /* PT_DYNAMIC */
        {
            match offset.checked_add(filesz) {
                Some(end) if end <= len => {}
                _ => return Err(truncated(&format!("segment {i}"))),
            }
        }
    }
    Ok(())
}

/// Checks bytes held in memory.
pub fn check_bytes(bytes: &[u8]) -> Result<(), String> {
    check(bytes, bytes.len() as u64)
}

/// Checks a file, reading only its headers.
pub fn check_file(path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut head = vec![0u8; 64];
    let n = read_up_to(&mut file, &mut head)?;
    head.truncate(n);
    let h = header(&head)?;
    // Read through the program header table (bounded: 64 Ki entries of 64 B).
    if let Some(end) = table_end(h.phoff, h.phentsize, h.phnum) {
        if end <= len && end > head.len() as u64 && end <= 16 << 20 {
            let mut rest = vec![0u8; end as usize - head.len()];
            let m = read_up_to(&mut file, &mut rest)?;
            head.extend_from_slice(&rest[..m]);
        }
    }
    check(&head, len)
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> Result<usize, String> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_shared_library() {
        assert!(
            check_bytes(b"hello")
                .unwrap_err()
                .contains("not an ELF file")
        );
        assert!(
            check_bytes(b"\x7fELF\x02\x01")
                .unwrap_err()
                .contains("truncated")
        );
        // The test binary itself: an executable, or a PIE (type 3) whose
        // truncation is caught.
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        check_bytes(&me).ok();
        let cut = &me[..me.len() / 2];
        let e = check_bytes(cut).unwrap_err();
        assert!(e.contains("truncated") || e.contains("executable"), "{e}");
    }
}
